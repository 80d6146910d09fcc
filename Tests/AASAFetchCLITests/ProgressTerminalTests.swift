@testable import AASAFetchCLI
import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Synchronization
import Testing

/// On a terminal, the progress line (standard error) is erased before each result line is written
/// to standard output on the same terminal, so a result never lands after `…ETA 0s`; with standard
/// output elsewhere, standard output carries no terminal escapes. Runs the binary on a pty.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ProgressTerminalTests {
    static let good = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/*"}]}]}}"#

    @Test func resultLinesNeverFollowTheProgressLine() async throws {
        let ca = try TestCA.shared()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-progress-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let hosts = (0..<6).map { "h\($0).progress.test" }
        for host in hosts where host != "h3.progress.test" {
            let file = root.appendingPathComponent("\(host)/.well-known/apple-app-site-association")
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(Self.good.utf8).write(to: file)
        }
        let nginx = try await NginxServer.start(hosts: [
            NginxVirtualHost(certificate: try ca.leaf(for: ["*.progress.test"]), serverNames: ["*.progress.test"],
                             documentRoot: root.path + "/$host",
                             directives: ["location ~ apple-app-site-association$ { default_type application/json; }"]),
        ], http2: false)
        defer { nginx.stop() }
        let arguments = ["--cacert", ca.caCertPath, "--connect-to", nginx.connectTo, "--allow-private", "--retry-delays", "",
                         "--app-id", "ABCDE12345.com.example.app", "--no-store"] + hosts.flatMap { ["--domain", "applinks:\($0)"] }
        let environment = ["TERM": "xterm", "NO_COLOR": "1"]

        for json in [false, true] {
            let shared = try PseudoTerminal.run(ToolRunner.binary, arguments + (json ? ["--json"] : []), sharedWithStdout: true,
                                                environment: environment)
            #expect(shared.status == 1, "h3 has no file")
            // A JSON document keeps its last line open (the comma comes with the next element), so
            // on a terminal shared with it the progress line is never drawn; for people it is.
            if !json {
                #expect(shared.terminal.contains(" hosts · "), "the progress line was drawn: \(shared.terminal.debugDescription)")
            }
            let visible = PseudoTerminal.visibleLines(shared.terminal)
            let mixed = visible.filter { $0.contains(" hosts · ") }
            #expect(mixed.isEmpty, "a line still shows progress (with --json: \(json)): \(mixed.map(\.debugDescription))")
            if json {
                // What stays on the screen is the JSON document, whole.
                let document = visible.joined(separator: "\n")
                let object = try JSONSerialization.jsonObject(with: Data(document.utf8)) as? [String: Any]
                #expect((object?["domains"] as? [Any])?.count == hosts.count, "\(document.debugDescription)")
            } else {
                for host in hosts {
                    #expect(visible.contains { ($0.hasPrefix("✔ \(host) ") || $0.hasPrefix("✘ \(host) ")) }, "\(host): \(visible)")
                }
            }
        }

        // Standard output to a file, standard error on the terminal: results carry no escapes.
        let split = try PseudoTerminal.run(ToolRunner.binary, arguments, sharedWithStdout: false, environment: environment)
        #expect(split.status == 1)
        #expect(!split.standardOutput.contains("\u{1B}"), "\(split.standardOutput.debugDescription)")
        #expect(split.standardOutput.split(separator: "\n").filter { $0.hasPrefix("✔ ") || $0.hasPrefix("✘ ") }.count == hosts.count)
    }

    /// The reporter alone, with one recorded "terminal" for both streams: the progress line is
    /// erased before each result and drawn again only at the start of a line.
    @Test func reporterErasesItsLineAroundOutput() {
        let screen = Mutex<[String]>([])
        let progress = ProgressReporter(total: 3, enabled: true, sharesTerminal: true, write: { text in screen.withLock { $0.append(text) } })
        let result = HostFetchResult(host: "a.test", route: .origin, url: "", code: "ok", reason: "")
        progress.update(done: 1, result: result)
        progress.output { screen.withLock { $0.append("✔ a.test\n") } }
        progress.output(endsLine: false) { screen.withLock { $0.append("    {") } }
        progress.update(done: 3, result: result)
        progress.output { screen.withLock { $0.append(",\n") } }
        let writes = screen.withLock { $0 }
        #expect(writes.count == 8, "\(writes)")
        #expect(writes[0].hasPrefix("\r\u{1B}[K1/3 hosts · "))
        #expect(writes[1] == "\r\u{1B}[K", "erased before the result")
        #expect(writes[2] == "✔ a.test\n")
        #expect(writes[3].hasPrefix("\r\u{1B}[K1/3 hosts · "), "drawn again after it")
        #expect(writes[4] == "\r\u{1B}[K")
        #expect(writes[5] == "    {", "not drawn after an open line, even when done")
        #expect(writes[6] == ",\n")
        #expect(writes[7].hasPrefix("\r\u{1B}[K3/3 hosts · "))
        progress.finish()
        progress.finish()
        #expect(screen.withLock { $0.count } == 9 && screen.withLock { $0.last } == "\r\u{1B}[K", "erased once at the end")
    }

    /// The progress line fits one row of the terminal: a wider one wrapped, and each redraw (`\r`
    /// goes back to the start of its last row only) left a copy of the first row on the screen.
    @Test func theProgressLineFitsOneRow() {
        let line = "9/120 hosts · 74.3/s · ETA 1s · tls-hostname-mismatch 3, tls-failure 3, connect-failure 3"
        let fitted = ProgressLine.fitted(line, width: 80)
        #expect(fitted.count == 79 && fitted.hasSuffix("…") && fitted.hasPrefix("9/120 hosts"), "\(fitted)")
        #expect(ProgressLine.fitted("short", width: 80) == "short")
        #expect(ProgressLine.fitted(line, width: nil) == line)
        // Escaped first, then cut: an escape is never split into a raw control character.
        #expect(ProgressLine.fitted("a\u{1B}[2J" + String(repeating: "x", count: 100), width: 10) == "a\\x1B[2J…")
    }
}
