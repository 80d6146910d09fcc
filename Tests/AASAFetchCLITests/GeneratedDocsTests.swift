import AASAFetchTestSupport
import Foundation
import Testing

/// The shell completions and the man page under `docs/` are what the argument parser generates
/// now (`scripts/gen-completions-man` writes them): an option, a help text or an example changed
/// without regenerating them fails here.
struct GeneratedDocsTests {
    static let docs = TestPaths.repository.appendingPathComponent("docs")
    static let manPage = docs.appendingPathComponent("man/aasa-fetch.1")

    /// ArgumentParser's `generate-manual` tool, the one its plugin runs; `scripts/test` builds it
    /// next to `aasa-fetch` (`swift build --product generate-manual`).
    static var generateManual: String? {
        let path = URL(fileURLWithPath: ToolRunner.binary).deletingLastPathComponent().appendingPathComponent("generate-manual").path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    static func committed(_ url: URL) throws -> String {
        try String(contentsOf: url, encoding: .utf8)
    }

    @Test(arguments: [("bash", "aasa-fetch.bash"), ("zsh", "_aasa-fetch"), ("fish", "aasa-fetch.fish")])
    func completionsAreWhatTheParserGenerates(shell: String, file: String) throws {
        let generated = try ToolRunner.run(["--generate-completion-script", shell])
        #expect(generated.status == 0)
        let committed = try Self.committed(Self.docs.appendingPathComponent("completions/\(file)"))
        #expect(generated.stdout == committed, "docs/completions/\(file) differs from the parser's: run scripts/gen-completions-man")
    }

    /// The committed page, byte for byte, is what `generate-manual` writes for the current binary
    /// (with the page's own date).
    @Test(.enabled(if: generateManual != nil, "generate-manual is not built (scripts/test builds it)"))
    func manPageIsWhatGenerateManualWrites() throws {
        let committed = try Self.committed(Self.manPage)
        let dateLine = try #require(committed.split(separator: "\n").first { $0.hasPrefix(".Dd ") })
        let reader = DateFormatter()
        reader.locale = Locale(identifier: "en_US_POSIX")
        reader.timeZone = TimeZone(identifier: "UTC")
        reader.dateFormat = "MMMM d, yyyy"
        let date = try #require(reader.date(from: String(dateLine.dropFirst(4))), "\(dateLine)")
        reader.dateFormat = "yyyy-MM-dd"
        let tool = try #require(Self.generateManual)
        let generated = try ChildProcess.run(tool, [ToolRunner.binary, "--date", reader.string(from: date), "--output-directory", "-"])
        #expect(generated.status == 0, "\(generated.standardError)")
        #expect(generated.standardOutput == committed + "\n", "docs/man/aasa-fetch.1 differs from generate-manual's: run scripts/gen-completions-man")
    }

    /// Without the tool: the page still names every command and option the parser has, and
    /// shows every example.
    @Test func manPageDocumentsEveryCommandAndOption() throws {
        let page = try Self.committed(Self.manPage)
        let items = page.split(separator: "\n").filter { $0.hasPrefix(".It Fl ") }.map { Set($0.split(separator: " ").map(String.init)) }
        let dump = try ToolRunner.run(["--experimental-dump-help"])
        let root = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        func visit(_ command: [String: Any]) {
            let name = command["commandName"] as? String ?? "?"
            #expect(page.contains(name), "\(name) is not in the man page")
            for argument in command["arguments"] as? [[String: Any]] ?? [] where (argument["shouldDisplay"] as? Bool) != false {
                guard let names = argument["names"] as? [[String: Any]], let long = names.first(where: { $0["kind"] as? String == "long" })?["name"] as? String
                else { continue }
                #expect(items.contains { $0.contains("-\(long)") }, "\(name): --\(long) is not in the man page")
            }
            for subcommand in command["subcommands"] as? [[String: Any]] ?? [] { visit(subcommand) }
        }
        visit(try #require(root["command"] as? [String: Any]))
        for line in try ToolRunner.run(["fetch", "--help"]).stdout.split(separator: "\n") where line.hasPrefix("  $ aasa-fetch ") {
            #expect(page.contains(line), "\(line) is not in the man page")
        }
    }
}

/// docs/codes.md lists every code a command, the store or the spool gives in its source (the
/// catalogue's finding codes are checked by `CIFormatTests`). A code added without its line there
/// fails here.
struct CodesDocumentTests {
    @Test func everyRunCodeIsInCodesMD() throws {
        let document = try String(contentsOf: TestPaths.repository.appendingPathComponent("docs/codes.md"), encoding: .utf8)
        var codes: Set<String> = []
        let sources = TestPaths.repository.appendingPathComponent("Sources")
        let pattern = try Regex(#"(?:CommandFailure|StoreError|SpoolError)\(\s*code:\s*"([a-z][a-z0-9-]*)""#)
        for folder in ["AASAFetchCLI", "AASAFetchCore"] {
            let enumerator = try #require(FileManager.default.enumerator(at: sources.appendingPathComponent(folder), includingPropertiesForKeys: nil))
            for case let file as URL in enumerator where file.pathExtension == "swift" {
                let text = try String(contentsOf: file, encoding: .utf8)
                for match in text.matches(of: pattern) {
                    if let code = match.output[1].substring { codes.insert(String(code)) }
                }
            }
        }
        #expect(codes.count > 30, "\(codes.count) codes found: the scan lost its way")
        let missing = codes.filter { !document.contains("`\($0)`") }.sorted()
        #expect(missing.isEmpty, "docs/codes.md does not name: \(missing.joined(separator: ", "))")
    }
}
