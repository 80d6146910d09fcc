import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

/// Hostile options and server answers through the binary: non-finite or absurd durations and
/// header injection are usage errors (64) on every command that takes them; server text never
/// reaches the terminal raw; odd answers get documented codes.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct HostileInputTests {
    static let appID = FetchIntegrationTests.appID

    /// The commands that take the network options, with what each needs besides them.
    static let networkCommands: [[String]] = [
        ["--domain", "applinks:a.example.com"],
        ["diagnose", "a.example.com"],
        ["match", "https://a.example.com/x", "--domain", "applinks:a.example.com"],
        ["refresh"],
    ]

    /// `inf`, `nan`, negative and absurd durations: exit 64 before anything runs (`inf` used to
    /// pass validation and crash with "Double value cannot be converted to Int").
    @Test(arguments: ["--max-time", "--connect-timeout"])
    func nonFiniteOrAbsurdTimeoutsAreUsageErrors(option: String) throws {
        for value in ["inf", "-inf", "nan", "infinity", "-1", "0", "1e300", "86401"] {
            for command in Self.networkCommands {
                let run = try ToolRunner.run(command + [option, value, "--connect-to", "::127.0.0.1:9", "--allow-private"])
                #expect(run.status == 64, "\(command) \(option) \(value): exit \(run.status): \(run.stderr)")
                #expect(run.stderr.contains(option), "\(command) \(option) \(value): \(run.stderr)")
            }
        }
        // The limits themselves are accepted.
        let run = try ToolRunner.run(["plan", "--domain", "applinks:a.example.com"])
        #expect(run.status == 0)
        let accepted = try ToolRunner.run(["--domain", "applinks:a.example.com", option, "86400", "--connect-to", "::127.0.0.1:9",
                                           "--allow-private", "--retry-delays", "", "--no-store"])
        #expect(accepted.status == 1, "\(accepted.stderr)")
    }

    /// `--retry-delays`: seconds from 0 to 600 separated by commas, or nothing; an empty item
    /// (`1,,2`, `,`) was dropped without a word, and the message did not name the cap.
    @Test func retryDelaysAreNumbersUpTo600() throws {
        let offline = ["--domain", "applinks:a.example.com", "--connect-to", "::127.0.0.1:9", "--allow-private", "--no-store", "--quiet"]
        for value in ["1,,2", ",", "601", "1e9", "nan", "-1", "soon"] {
            let run = try ToolRunner.run(offline + ["--retry-delays=\(value)"])
            #expect(run.status == 64, "\(value): \(run.stderr)")
            #expect(run.stderr.contains("--retry-delays takes seconds from 0 to 600"), "\(value): \(run.stderr)")
        }
        for value in ["", " ", "0", "0,0", " 0 , 0.01 "] {
            let run = try ToolRunner.run(offline + ["--retry-delays", value])
            #expect(run.status == 1, "\(value): \(run.stderr)")
        }
    }

    /// `show HOST` and `forget HOST` name hosts as `refresh --host` does: a Unicode or upper-case
    /// name is the stored Punycode one (they said `host-unknown`).
    @Test func showAndForgetTakeUnicodeNames() throws {
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("idn-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let recorded = try ToolRunner.run(["--domain", "applinks:xn--bcher-kva.example", "--connect-to", "::127.0.0.1:9", "--allow-private",
                                           "--retry-delays", "", "--quiet"], cache: cache)
        #expect(recorded.status == 1, "\(recorded.stderr)")
        let shown = try ToolRunner.run(["show", "BÜCHER.example", "--json"], cache: cache)
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect((try shown.json()["hosts"] as? [[String: Any]])?.first?["host"] as? String == "xn--bcher-kva.example", "\(shown.stdout)")
        let forgotten = try ToolRunner.run(["forget", "bücher.example"], cache: cache)
        #expect(forgotten.status == 0, "\(forgotten.stderr)")
        #expect(try ToolRunner.run(["show", "xn--bcher-kva.example"], cache: cache).status == 1)
    }

    /// `--history-limit` below 0 is a usage error on `show` as on `report` (show took it as 0).
    @Test func aNegativeHistoryLimitIsAUsageError() throws {
        for command in [["show", "a.example.com"], ["report", "--html", "-"]] {
            let typed = try ToolRunner.run(command + ["--history-limit", "-5"])
            #expect(typed.status == 64, "\(command): \(typed.stderr)")
            #expect(typed.stderr.contains("--history-limit"), "\(command): \(typed.stderr)")
            let fromEnvironment = try ToolRunner.run(command, environment: ["AASA_FETCH_HISTORY_LIMIT": "-5"])
            #expect(fromEnvironment.status == 64, "\(command): \(fromEnvironment.stderr)")
        }
    }

    /// `--now` outside the years 1970 to 9999 is a usage error: `refresh --now inf` fetched the same
    /// host without end (its next check rounded back to now), and `show --now nan` used the clock.
    @Test func nonFiniteOrAbsurdTimesAreUsageErrors() throws {
        for value in ["inf", "nan", "1e300", "-1", "9999999999999", "tomorrow"] {
            for command in [["refresh"], ["show"], ["report", "--html", "-"]] {
                let typed = try ToolRunner.run(command + ["--now", value])
                #expect(typed.status == 64 && typed.stderr.contains("--now"), "\(command) --now \(value): \(typed.status) \(typed.stderr)")
            }
        }
        #expect(Timestamp.parse("2026-11-27T00:00:00Z") != nil && Timestamp.parse("0") != nil && Timestamp.parse("1790000000") != nil)
        #expect(Timestamp.parse("inf") == nil && Timestamp.parse("9999-12-31T23:59:59Z") != nil && Timestamp.parse("-0.5") == nil)
    }

    /// A webhook URL refused as a usage error is shown without its path and credentials, from the
    /// environment and from a config file as from the command line (it was echoed whole, secret
    /// path and password, into cron mail and the JSON error document).
    @Test func aRefusedWebhookURLNeverShowsItsSecret() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-notify-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let config = work.appendingPathComponent("notify.json")
        try Data(#"{"notify": "https://user:hunter2@hooks.example.com/SECRETPATH"}"#.utf8).write(to: config)
        let runs = [
            try ToolRunner.run(["refresh", "--config", config.path, "--json"]),
            try ToolRunner.run(["refresh", "--no-config", "--json"], environment: ["AASA_FETCH_NOTIFY": "https://hooks.example.com/SECRETPATH#x"]),
        ]
        for run in runs {
            #expect(run.status == 64, "\(run.stderr)")
            #expect(run.stderr.contains("https://hooks.example.com/…"), "\(run.stderr)")
            for secret in ["SECRETPATH", "hunter2"] {
                #expect(!run.stderr.contains(secret) && !run.stdout.contains(secret), "\(run.stdout)\(run.stderr)")
            }
        }
    }

    /// `lint` and `diff` take the same `--max-size` range as the network commands (1 B to 1 GiB):
    /// a larger value overflowed the reader's arithmetic (a crash) or lifted the memory bound.
    @Test func lintAndDiffSizeLimitsAreBounded() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-size-\(UUID().uuidString).json")
        try Data(#"{"applinks":{"details":[]}}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        for value in ["9223372036854775807", "4611686018427387904", "1073741825", "0"] {
            for command in [["lint", file.path], ["diff", file.path, file.path]] {
                let run = try ToolRunner.run(command + ["--max-size", value])
                #expect(run.status == 64 && run.stderr.contains("--max-size must be between 1 and 1073741824"), "\(command) \(value): \(run.status) \(run.stderr)")
            }
        }
        #expect(try ToolRunner.run(["lint", file.path, "--max-size", "1073741824"]).status == 1, "read and judged: empty details")
    }

    /// A usage message of several lines is one line (its line feeds were printed as `\n`, and the
    /// whole message came again after it).
    @Test func aUsageMessageOfSeveralLinesIsOneLine() throws {
        let run = try ToolRunner.run(["--generate-completion-script", "nosh"])
        #expect(run.status == 64)
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.first == "aasa-fetch: usage: Can't generate completion scripts for 'nosh'. Please use --generate-completion-script=<shell> with one of: zsh bash fish", "\(run.stderr)")
        #expect(!run.stderr.contains("\\n") && !run.stderr.contains("Error: Can't generate"), "\(run.stderr)")
    }

    /// `refresh --interval` and `--lease`: the same for durations with units.
    @Test func nonFiniteOrAbsurdIntervalsAreUsageErrors() throws {
        for option in ["--interval", "--lease"] {
            for value in ["inf", "infs", "nanm", "-5s", "1e300d", "400d"] {
                let run = try ToolRunner.run(["refresh", option, value] + (option == "--interval" ? ["--watch"] : []))
                #expect(run.status == 64, "\(option) \(value): exit \(run.status): \(run.stderr)")
            }
        }
        for (option, value) in [("--max-size", "9223372036854775807"), ("--batch-size", "9223372036854775807")] {
            let run = try ToolRunner.run(["refresh", option, value])
            #expect(run.status == 64, "\(option) \(value): exit \(run.status): \(run.stderr)")
        }
        // Retention: garbage is not "keep forever"; a written zero and `never` are.
        for option in ["--prune-after", "--keep-history"] {
            for value in ["hd0s", "d0", "0s0", "1e-400", ".0", "0..0", "00x"] {
                let run = try ToolRunner.run(["refresh", option, value])
                #expect(run.status == 64, "\(option) \(value): exit \(run.status): \(run.stderr)")
            }
        }
        for value in ["0", "0d", "0.0h", "never", "30d"] {
            let run = try ToolRunner.run(["refresh", "--prune-after", value, "--cache", "/nonexistent/aasa-store"])
            #expect(run.status == 2 && run.stderr.contains("store-missing"), "\(value): exit \(run.status): \(run.stderr)")
        }
    }

    /// A CR or LF in `--user-agent` would add request headers (a second Host): exit 64, on every
    /// command that sends requests; control characters in curl's lists too.
    @Test func headerInjectionThroughOptionsIsAUsageError() throws {
        for (option, value) in [("--user-agent", "AASA-Bot/1.0.0\r\nHost: evil.test"), ("--user-agent", "a\nb"),
                                ("--connect-to", "::127.0.0.1:9\r\nX: 1"), ("--resolve", "a.example.com:443:127.0.0.1\n")] {
            for command in Self.networkCommands {
                let run = try ToolRunner.run(command + [option, value, "--allow-private"])
                #expect(run.status == 64, "\(command) \(option): exit \(run.status): \(run.stderr)")
                #expect(run.stderr.contains("control characters"), "\(command) \(option): \(run.stderr)")
            }
        }
    }

    /// A NUL (or any control character) inside an entry or an app ID would be cut off where a
    /// store or the run spool keeps it: an entry holding one is an error of its own, the same from
    /// a config file and from a `--domains` line, and such an app ID is a usage error.
    @Test func aControlCharacterInAnEntryOrAnAppIDIsRefused() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-nul-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let list = work.appendingPathComponent("domains.txt")
        try Data("webcredentials\u{0}evil:nul.example.com\n".utf8).write(to: list)
        let config = work.appendingPathComponent("entries.json")
        try Data(#"{"domain":["webcredentials\u0000evil:nul.example.com"]}"#.utf8).write(to: config)
        for source in [["--domains", list.path], ["--config", config.path]] {
            let run = try ToolRunner.run(source + ["--no-store", "--app-id", "ABCDE12345.com.example.app", "--json"])
            #expect(run.status == 1, "\(source): \(run.stderr)")
            let entries = try #require(try run.json()["entries"] as? [[String: Any]])
            #expect(entries.map { $0["code"] as? String } == ["entitlement-control-character"], "\(source): \(run.stdout)")
            #expect(entries.map { $0["entry"] as? String } == ["webcredentials\u{0}evil:nul.example.com"], "shown whole: \(source)")
        }
        let app = work.appendingPathComponent("app.json")
        try Data(#"{"domain":["applinks:nul.example.com"],"app-id":["ABCDE12345.com.example.app\u0000evil"]}"#.utf8).write(to: app)
        let usage = try ToolRunner.run(["--config", app.path, "--no-store"])
        #expect(usage.status == 64)
        #expect(usage.stderr.contains("holds a control character"), "\(usage.stderr)")
    }

    /// Server text and file text never reach the terminal raw: `ESC ] 0 ; … BEL` (retitle) and
    /// `ESC [ 2 J` (clear) in a `Location` header and in app IDs come out escaped in human output,
    /// and intact (JSON-escaped) in JSON.
    @Test func controlCharactersFromServersAndFilesAreEscaped() async throws {
        let hostile = "\u{1B}]0;pwned\u{07}\u{1B}[2J\u{9B}31m\u{202E}"
        let ca = try TestCA.shared()
        let fileWithHostileApp = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.\#(hostile.unicodeScalars.map { String(format: "\\u%04x", $0.value) }.joined())app"],"components":[{"/":"/*"}]}]}}"#
        let script = FaultScript(default: .respond(headers: [("Content-Type", "application/json")], body: fileWithHostileApp), hosts: [
            "redirect.fault.test": .respond(status: 301, headers: [("Location", "https://evil.test/\(hostile)")]),
        ])
        let server = try await FaultServer.start(script: script, certificate: try ca.leaf(for: ["fault.test", "*.fault.test"]))
        defer { server.stop() }
        let connection = ["--cacert", ca.caCertPath, "--connect-to", server.connectTo, "--allow-private", "--retry-delays", ""]
        let network = connection + ["--quiet", "--no-store"]
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-text-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let file = work.appendingPathComponent("aasa.json")
        try Data(fileWithHostileApp.utf8).write(to: file)
        let plain = work.appendingPathComponent("plain.json")
        try Data(FetchIntegrationTests.good.utf8).write(to: plain)

        let runs: [[String]] = [
            ["--domain", "applinks:redirect.fault.test", "--domain", "applinks:app.fault.test"] + network,  // no --app-id: app IDs listed
            ["diagnose", "redirect.fault.test", "--app-id", Self.appID] + connection,
            ["match", "https://x.test/a", "--aasa", file.path],
            ["diff", plain.path, file.path],
            ["lint", file.path],
        ]
        for arguments in runs {
            let human = try ToolRunner.run(arguments)
            let bytes = Array(human.stdout.utf8) + Array(human.stderr.utf8)
            #expect(!bytes.contains(0x1B) && !bytes.contains(0x07), "\(arguments.prefix(2)): raw ESC or BEL: \(human.stdout.debugDescription)")
            #expect(!human.stdout.unicodeScalars.contains { $0.value == 0x9B || $0.value == 0x202E }, "\(arguments.prefix(2))")
            #expect(human.stdout.contains("\\x1B]0;pwned\\x07\\x1B[2J"), "\(arguments.prefix(2)): \(human.stdout) \(human.stderr)")
        }
        // JSON keeps the text, escaped the JSON way.
        let json = try ToolRunner.run(runs[0] + ["--json"]).json()
        #expect((json.domain("redirect.fault.test")?["redirectLocation"] as? String)?.hasSuffix(hostile) == true)
    }

    /// Odd answers get documented codes: a 304 to a request without validators is a 3xx, so
    /// `http-redirect` (it was `http-unexpected-status`, against SPEC), but names no `Location`;
    /// an HTTP/0.9 or garbage answer is `invalid-response`; a 1 MB header line and endless trailers
    /// are `headers-too-large`.
    @Test func oddAnswersGetTheirOwnCodes() async throws {
        let ca = try TestCA.shared()
        let script = FaultScript(hosts: [
            "notmodified.fault.test": .respond(status: 304),
            "http09.fault.test": .raw("{\"applinks\":{}}"),
            "garbage.fault.test": .raw("SSH-2.0-OpenSSH_9.2\r\n"),
            "bigheader.fault.test": .bigHeader(headerBytes: 1024 * 1024),
            "trailers.fault.test": .endlessTrailers(body: "{}"),
            "early.fault.test": .raw("HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"),
        ])
        let server = try await FaultServer.start(script: script, certificate: try ca.leaf(for: ["fault.test", "*.fault.test"]))
        defer { server.stop() }
        let hosts = ["notmodified", "http09", "garbage", "bigheader", "trailers", "early"].map { "\($0).fault.test" }
        let run = try ToolRunner.run(hosts.flatMap { ["--domain", "applinks:\($0)"] } + [
            "--cacert", ca.caCertPath, "--connect-to", server.connectTo, "--allow-private", "--retry-delays", "", "--quiet",
            "--app-id", Self.appID, "--json", "--max-time", "60",
        ])
        #expect(run.status == 1, "\(run.stderr)")
        let report = try run.json()
        let notModified = report.domain("notmodified.fault.test")
        #expect(notModified?["code"] as? String == "http-redirect")
        #expect((notModified?["reason"] as? String)?.contains("Location") == false)
        #expect(report.domain("http09.fault.test")?["code"] as? String == "invalid-response")
        #expect(report.domain("garbage.fault.test")?["code"] as? String == "invalid-response")
        #expect(report.domain("bigheader.fault.test")?["code"] as? String == "headers-too-large")
        #expect(report.domain("trailers.fault.test")?["code"] as? String == "headers-too-large")
        // An interim 103 and then nothing: a failure with no status (it said 103, an answer).
        let early = report.domain("early.fault.test")
        #expect(early?["code"] as? String != "ok" && early?["httpStatus"] is NSNull, "\(String(describing: early))")
    }

    /// Answers libcurl 7.88 takes for something else: a connection closed inside the header block
    /// (libcurl calls that a whole answer with an empty body), a status line it refuses (it said
    /// "unsupported protocol", which read as our request's fault), a body in an encoding it cannot
    /// decode (it said the connection broke), and a `Content-Type` that comes only as a chunked
    /// trailer (it was taken for a header of the answer).
    @Test func answersCutOrMalformedInTheirFramingGetTheirOwnCodes() async throws {
        let ca = try TestCA.shared()
        let file = #"{"applinks":{"details":[{"appIDs":["\#(Self.appID)"],"components":[{"/":"/*"}]}]}}"#
        let chunk = String(file.utf8.count, radix: 16)
        let script = FaultScript(hosts: [
            "cuthead.fault.test": .raw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"),
            "cutstatus.fault.test": .raw("HTTP/1.1 200 OK\r\n"),
            "badstatus.fault.test": .raw("HTTP/1.1 099 Odd\r\nContent-Length: 2\r\n\r\n{}"),
            "badversion.fault.test": .raw("HTTP/1.2 200 OK\r\nContent-Length: 2\r\n\r\n{}"),
            "badencoding.fault.test": .raw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: x-foo\r\nContent-Length: 2\r\n\r\n{}"),
            "trailertype.fault.test": .raw("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(chunk)\r\n\(file)\r\n0\r\nContent-Type: application/json\r\n\r\n"),
        ])
        let server = try await FaultServer.start(script: script, certificate: try ca.leaf(for: ["fault.test", "*.fault.test"]))
        defer { server.stop() }
        let names = ["cuthead", "cutstatus", "badstatus", "badversion", "badencoding", "trailertype"]
        let run = try ToolRunner.run(names.flatMap { ["--domain", "applinks:\($0).fault.test"] } + [
            "--cacert", ca.caCertPath, "--connect-to", server.connectTo, "--allow-private", "--retry-delays", "", "--quiet",
            "--app-id", Self.appID, "--json", "--max-time", "60", "--no-store",
        ])
        #expect(run.status == 1, "\(run.stderr)")
        let report = try run.json()
        for name in ["cuthead", "cutstatus"] {
            let record = report.domain("\(name).fault.test")
            #expect(record?["code"] as? String == "transfer-failure", "\(name): \(record ?? [:])")
            #expect((record?["reason"] as? String)?.contains("before the response's headers ended") == true, "\(name): \(record ?? [:])")
        }
        for name in ["badstatus", "badversion", "badencoding"] {
            let record = report.domain("\(name).fault.test")
            #expect(record?["code"] as? String == "invalid-response", "\(name): \(record ?? [:])")
        }
        #expect((report.domain("badencoding.fault.test")?["reason"] as? String)?.contains("Content-Encoding") == true)
        let trailer = report.domain("trailertype.fault.test")
        #expect(trailer?["code"] as? String == "ok", "\(trailer ?? [:])")
        #expect(trailer?.findingCodes.contains("content-type") == true, "\(trailer ?? [:])")
    }

    /// Answers libcurl reads one way and the tool read another:
    /// - a status line libcurl accepts (`%3d`: "200\tOK", "404x") was no status at all, so a
    ///   whole answer was "closed before the response's headers ended", and a 404 lost its
    ///   legacy-path fallback;
    /// - a chunked trailer shaped as a status line started a new response;
    /// - two different `Content-Length`s (RFC 9112 §6.3) waited for bytes never sent (`timeout`);
    /// - bytes after a gzip stream (libcurl's `CURLE_WRITE_ERROR`) were `transfer-failure`
    ///   whatever the status: a 404 so sent never tried the legacy path;
    /// - a status of 999 was retried as a 5xx.
    @Test func statusLinesTrailersLengthsAndEncodingsAsLibcurlReadsThem() async throws {
        let ca = try TestCA.shared()
        let file = #"{"applinks":{"details":[{"appIDs":["\#(Self.appID)"],"components":[{"/":"/*"}]}]}}"#
        let length = file.utf8.count
        let chunk = String(length, radix: 16)
        var gzip404 = FaultBehavior.respond(status: 404, body: "<html>not found</html>", gzip: true)
        gzip404.afterGzip = "\r\n"
        var gzip200 = FaultBehavior.respond(status: 200, headers: [("Content-Type", "application/json")], body: file, gzip: true)
        gzip200.afterGzip = "\n"
        let legacy = FaultBehavior.respond(status: 200, headers: [("Content-Type", "application/json")], body: file)
        let script = FaultScript(
            hosts: [
                "tabstatus.fault.test": .raw("HTTP/1.1 200\tOK\r\nContent-Type: application/json\r\nContent-Length: \(length)\r\n\r\n\(file)"),
                "twolengths.fault.test": .raw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(length)\r\nContent-Length: \(length + 5)\r\n\r\n\(file)"),
                "trailerstatus.fault.test": .raw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n\(chunk)\r\n\(file)\r\n0\r\nHTTP/x 200 :y\r\n\r\n"),
                "gzipextra.fault.test": gzip200,
                "status999.fault.test": .respond(status: 999, body: file),
                // The host's first request (.well-known), then the legacy path.
                "suffix404.fault.test": .sequence([.raw("HTTP/1.1 404x NF\r\nContent-Length: 0\r\n\r\n"), legacy]),
                "gzip404.fault.test": .sequence([gzip404, legacy]),
            ])
        let server = try await FaultServer.start(script: script, certificate: try ca.leaf(for: ["fault.test", "*.fault.test"]))
        defer { server.stop() }
        let names = ["tabstatus", "twolengths", "trailerstatus", "gzipextra", "status999", "suffix404", "gzip404"]
        let run = try ToolRunner.run(names.flatMap { ["--domain", "applinks:\($0).fault.test"] } + [
            "--cacert", ca.caCertPath, "--connect-to", server.connectTo, "--allow-private", "--retry-delays", "0,0", "--quiet",
            "--app-id", Self.appID, "--json", "--max-time", "60", "--no-store",
        ])
        #expect(run.status == 1, "\(run.stderr)")
        let report = try run.json()
        func record(_ name: String) -> [String: Any] { report.domain("\(name).fault.test") ?? [:] }
        func attempts(_ name: String) -> Int { (record(name)["attempts"] as? [Any])?.count ?? -1 }
        #expect(record("tabstatus")["code"] as? String == "ok", "\(record("tabstatus"))")
        #expect(record("trailerstatus")["code"] as? String == "ok", "\(record("trailerstatus"))")
        #expect(record("twolengths")["code"] as? String == "invalid-response", "\(record("twolengths"))")
        #expect((record("twolengths")["reason"] as? String)?.contains("two different lengths") == true)
        #expect(attempts("twolengths") == 1, "not retried")
        #expect(record("gzipextra")["code"] as? String == "invalid-response", "\(record("gzipextra"))")
        #expect((record("gzipextra")["reason"] as? String)?.contains("Content-Encoding") == true)
        #expect(attempts("gzipextra") == 1, "not retried")
        for name in ["suffix404", "gzip404"] {
            #expect(record(name)["code"] as? String == "ok", "\(name): \(record(name))")
            #expect(record(name).findingCodes.first == "legacy-root-path", "\(name): \(record(name))")
        }
        #expect(record("status999")["code"] as? String == "http-unexpected-status", "\(record("status999"))")
        #expect(attempts("status999") == 1, "not retried as a 5xx")
    }

    /// A `--cdn-base` server without HTTP/2 gets one request at a time on the CDN's one
    /// connection; a request whose time runs out while it waits says so (libcurl's words, "Failed
    /// to resolve host '(nil)'", read as a DNS problem of a healthy server).
    @Test func aRequestThatWaitedForAConnectionSaysSo() async throws {
        let ca = try TestCA.shared()
        let file = #"{"applinks":{"details":[{"appIDs":["\#(Self.appID)"],"components":[{"/":"/*"}]}]}}"#
        var slow = FaultBehavior.respond(headers: [("Content-Type", "application/json")], body: file)
        slow.delay = 1.5
        let server = try await FaultServer.start(script: FaultScript(default: slow), certificate: try ca.leaf(for: ["cdn.fault.test", "*.fault.test"]))
        defer { server.stop() }
        let run = try ToolRunner.run((1...4).flatMap { ["--domain", "applinks:h\($0).fault.test"] } + [
            "--route", "cdn", "--cdn-base", "https://cdn.fault.test/a/v1/",
            "--cacert", ca.caCertPath, "--connect-to", server.connectTo, "--allow-private", "--retry-delays", "", "--quiet",
            "--app-id", Self.appID, "--json", "--max-time", "2", "--no-store",
        ])
        let reasons = ((try run.json()["domains"] as? [[String: Any]]) ?? []).compactMap { $0["reason"] as? String }
        let waited = reasons.filter { $0.contains("the time ran out while the request waited for a connection to the host") }
        #expect(!waited.isEmpty, "\(reasons)")
        #expect(reasons.allSatisfy { !$0.contains("(nil)") || $0.contains("waited for a connection") }, "\(reasons)")
    }

    /// A CA file or endpoint libcurl cannot use is the run's fault, never the hosts': a CA file
    /// that cannot be read or holds no certificate, and a `--connect-to` or `--resolve` port or
    /// address libcurl cannot read, are usage errors before anything runs (every host used to be
    /// recorded `tls-failure` or `transfer-failure`, "broke" events included); a certificate
    /// libcurl cannot load ends the run with `invalid-request` (exit 2), nothing recorded.
    @Test func aBadCAFileOrEndpointIsNeverTheHostsFault() async throws {
        let ca = try TestCA.shared()
        let file = #"{"applinks":{"details":[{"appIDs":["\#(Self.appID)"],"components":[{"/":"/*"}]}]}}"#
        let server = try await FaultServer.start(script: FaultScript(default: .respond(status: 200, body: file)),
                                                 certificate: try ca.leaf(for: ["fault.test", "*.fault.test"]))
        defer { server.stop() }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("bad-ca-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let cache = work.appendingPathComponent("store").path
        let notPEM = work.appendingPathComponent("not.pem").path
        let brokenPEM = work.appendingPathComponent("broken.pem").path
        try "not a certificate\n".write(toFile: notPEM, atomically: true, encoding: .utf8)
        try "-----BEGIN CERTIFICATE-----\nnotbase64\n-----END CERTIFICATE-----\n".write(toFile: brokenPEM, atomically: true, encoding: .utf8)
        let common = ["--allow-private", "--retry-delays", "", "--quiet"]
        let hosts = ["--domain", "applinks:a.fault.test", "--domain", "applinks:b.fault.test", "--app-id", Self.appID]

        let recorded = try ToolRunner.run(hosts + common + ["--cacert", ca.caCertPath, "--connect-to", server.connectTo], cache: cache)
        #expect(recorded.status == 0, "\(recorded.stderr)")

        let usage: [(String, [String])] = [
            ("--cacert", ["--cacert", work.appendingPathComponent("missing.pem").path, "--connect-to", server.connectTo]),
            ("--cacert", ["--cacert", notPEM, "--connect-to", server.connectTo]),
            ("--connect-to", ["--cacert", ca.caCertPath, "--connect-to", "::127.0.0.1:99999"]),
            ("--connect-to", ["--cacert", ca.caCertPath, "--connect-to", "::127.0.0.1:-1"]),
            ("--resolve", ["--cacert", ca.caCertPath, "--resolve", "a.fault.test:443:not-an-address"]),
            ("--resolve", ["--cacert", ca.caCertPath, "--resolve", "a.fault.test:443:127.0.0.1, 127.0.0.2"]),
            ("--connect-to", ["--cacert", ca.caCertPath, "--connect-to", "::::1:8443"]),
        ]
        for (option, arguments) in usage {
            for command in [hosts, ["refresh", "--all"]] {
                let run = try ToolRunner.run(command + common + arguments, cache: cache)
                #expect(run.status == 64, "\(command) \(arguments): \(run.status) \(run.stderr)")
                #expect(run.stderr.contains(option), "\(arguments): \(run.stderr)")
            }
        }
        let refresh = try ToolRunner.run(["refresh", "--all", "--json"] + common + ["--cacert", brokenPEM, "--connect-to", server.connectTo], cache: cache)
        #expect(refresh.status == 2, "\(refresh.stderr) \(refresh.stdout)")
        #expect(refresh.stderr.contains("invalid-request"), "\(refresh.stderr)")
        // A due pass ends there too: the hosts it released are due, and it used to claim them
        // again at once, over and over.
        let due = try ToolRunner.run(["refresh", "--now", "2031-01-01T00:00:00Z"] + common + ["--cacert", brokenPEM, "--connect-to", server.connectTo], cache: cache)
        #expect(due.status == 2, "\(due.stderr)")
        #expect(due.stderr.contains("invalid-request: 2 hosts could not be fetched"), "\(due.stderr)")
        #expect(!due.stderr.contains("stopped;"), "\(due.stderr)")
        let fetch = try ToolRunner.run(hosts + common + ["--cacert", brokenPEM, "--connect-to", server.connectTo], cache: cache)
        #expect(fetch.status == 2, "\(fetch.stderr)")
        #expect(fetch.stderr.contains("invalid-request"), "\(fetch.stderr)")

        // diagnose says the same (it blamed the host, exit 1, after a TLS step that "passed").
        let diagnosed = try ToolRunner.run(["diagnose", "a.fault.test", "--app-id", Self.appID, "--json"] + common
                                           + ["--cacert", brokenPEM, "--connect-to", server.connectTo], cache: cache)
        #expect(diagnosed.status == 2, "\(diagnosed.stderr)")
        #expect(diagnosed.stderr.contains("invalid-request"), "\(diagnosed.stderr)")
        let steps = ((try? diagnosed.json())?["diagnoses"] as? [[String: Any]])?.first?["steps"] as? [[String: Any]] ?? []
        #expect(!steps.isEmpty, "\(diagnosed.stdout)")
        #expect(!steps.contains { $0["step"] as? String == "tls" && $0["status"] as? String == "passed" }, "\(steps)")

        // The stored results are still the good ones: nothing broke.
        let show = try ToolRunner.run(["show", "--json"], cache: cache)
        let stored = (try show.json()["hosts"] as? [[String: Any]]) ?? []
        #expect(stored.count == 2, "\(show.stdout)")
        for host in stored {
            #expect(host["code"] as? String == "ok", "\(host)")
        }
        let history = try ToolRunner.run(["show", "a.fault.test", "--json"], cache: cache)
        #expect(!history.stdout.contains("broke"), "\(history.stdout)")
    }

    /// The body of an answer other than 200 is not judged: a 404 page over the size cap is still a
    /// 404 (the legacy path is tried and serves the file), a 503 one is still retried, and a 301
    /// one is still a redirect. Only a 200 answer's body can be `too-large`.
    @Test func largeBodiesOfOtherAnswersKeepTheirStatus() async throws {
        let ca = try TestCA.shared()
        let file = #"{"applinks":{"details":[{"appIDs":["\#(Self.appID)"],"components":[{"/":"/*"}]}]}}"#
        let page = "<html><body>not here</body></html>\n"
        let wellKnown = "/.well-known/apple-app-site-association"
        let legacyScript = FaultScript(paths: [
            wellKnown: .respond(status: 404, headers: [("Content-Type", "text/html")], body: page, repeat: 5000),
            "/apple-app-site-association": .respond(status: 200, headers: [("Content-Type", "application/json")], body: file),
        ])
        let hostScript = FaultScript(hosts: [
            "busy.fault.test": .sequence([.respond(status: 503, body: page, repeat: 5000), .respond(status: 200, body: file)]),
            "moved.fault.test": .respond(status: 301, headers: [("Location", "https://elsewhere.fault.test\(wellKnown)")], body: page, repeat: 5000),
            "big.fault.test": .respond(status: 200, body: page, repeat: 5000),
        ])
        let legacyServer = try await FaultServer.start(script: legacyScript, certificate: try ca.leaf(for: ["legacy.fault.test"]))
        defer { legacyServer.stop() }
        let hostServer = try await FaultServer.start(script: hostScript, certificate: try ca.leaf(for: ["fault.test", "*.fault.test"]))
        defer { hostServer.stop() }
        let common = ["--cacert", ca.caCertPath, "--allow-private", "--quiet", "--app-id", Self.appID, "--json", "--max-time", "60", "--no-store"]

        let legacy = try ToolRunner.run(["--domain", "applinks:legacy.fault.test", "--connect-to", legacyServer.connectTo, "--retry-delays", ""] + common)
        #expect(legacy.status == 0, "\(legacy.stderr)")
        let legacyRecord = try legacy.json().domain("legacy.fault.test")
        #expect(legacyRecord?["code"] as? String == "ok", "\(legacyRecord ?? [:])")
        #expect(legacyRecord?.findingCodes.contains("legacy-root-path") == true, "\(legacyRecord ?? [:])")

        let run = try ToolRunner.run(["busy", "moved", "big"].flatMap { ["--domain", "applinks:\($0).fault.test"] }
            + ["--connect-to", hostServer.connectTo, "--retry-delays", "0.1"] + common)
        #expect(run.status == 1, "\(run.stderr)")
        let report = try run.json()
        let busy = report.domain("busy.fault.test")
        #expect(busy?["code"] as? String == "ok", "\(busy ?? [:])")
        #expect((busy?["attempts"] as? [[String: Any]])?.count == 2, "\(busy ?? [:])")
        let moved = report.domain("moved.fault.test")
        #expect(moved?["code"] as? String == "http-redirect", "\(moved ?? [:])")
        #expect((moved?["reason"] as? String)?.contains("elsewhere.fault.test") == true, "\(moved ?? [:])")
        let big = report.domain("big.fault.test")
        #expect(big?["code"] as? String == "too-large", "\(big ?? [:])")
    }
}
