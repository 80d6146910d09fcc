import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

/// Hostile files given to the binary: property-list bombs and cycles through every way a plist is
/// read, files without an end (`/dev/zero`) and files over the size limit. Each ends in a code and
/// an exit status, at once and in bounded memory. The files are generated here.
@Suite(.timeLimit(.minutes(5)))
struct HostileFileTests {
    /// `report` keeps each host's markup in a temporary file until the page is written (the page
    /// of 300,000 hosts took 2.8 GB): without a temporary folder it is `spool-error`, and the
    /// page written through the file is the page written to standard output.
    @Test func theStatusPageIsWrittenFromItsTemporaryFile() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("page-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let cache = work.appendingPathComponent("cache").path
        let offline = ["--connect-to", "::127.0.0.1:9", "--allow-private", "--retry-delays", "", "--quiet"]
        let recorded = try ToolRunner.run((0..<30).flatMap { ["--domain", "applinks:h\($0).example.com"] } + offline, cache: cache)
        #expect(recorded.status == 1, "\(recorded.stderr)")
        let file = work.appendingPathComponent("page.html").path
        let written = try ToolRunner.run(["report", "--html", file, "--now", "2027-01-01T00:00:00Z", "--json"], cache: cache)
        #expect(written.status == 0, "\(written.stderr)")
        let page = try Data(contentsOf: URL(fileURLWithPath: file))
        #expect((try written.json()["bytes"] as? Int) == page.count)
        let printed = try ToolRunner.run(["report", "--html", "-", "--now", "2027-01-01T00:00:00Z"], cache: cache)
        #expect(Data(printed.stdout.utf8) == page)
        #expect(page.count > 30 * 500 && String(decoding: page, as: UTF8.self).contains("h29.example.com"))
        let noTemporary = try ToolRunner.run(["report", "--html", file], cache: cache, environment: ["TMPDIR": work.appendingPathComponent("missing").path])
        #expect(noTemporary.status == 2 && noTemporary.stderr.contains("spool-error"), "\(noTemporary.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == page, "the old page stays")
    }

    /// A SQLite store is not trusted: a value of the wrong type in any column the commands read
    /// (text in a number column, a number past `Int`'s range, a blob for a date) is
    /// `store-corrupt` naming the file and the column, exit 2, on every command that reads it.
    /// GRDB's row subscript stopped the process on such a value (SIGILL), and a failure count at
    /// `Int.max` overflowed when the next failure was counted.
    @Test func aStoreWithValuesOfTheWrongTypeIsCorruptNotACrash() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("tampered-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let original = work.appendingPathComponent("original").path
        let offline = ["--connect-to", "::127.0.0.1:9", "--allow-private", "--retry-delays", "0.01", "--quiet"]
        let recorded = try ToolRunner.run(["--domain", "applinks:a.example.com", "--domain", "applinks:b.example.com",
                                           "--app-id", "ABCDE12345.com.example.app"] + offline, cache: original)
        #expect(recorded.status == 1, "\(recorded.stderr)")
        let python = try #require(ChildProcess.find("python3"))
        let cases: [(sql: String, column: String)] = [
            ("UPDATE hosts SET tier = 'abc'", "tier"),
            ("UPDATE hosts SET consecutive_failures = 1e300", "consecutive_failures"),
            ("UPDATE hosts SET last_http_status = 'abc'", "last_http_status"),
            ("UPDATE hosts SET added_at = X'00'", "added_at"),
            ("UPDATE hosts SET next_check = 'soon'", "next_check"),
            ("UPDATE hosts SET lease_owner = 'o', lease_expires = 'z'", "lease_expires"),
            ("UPDATE history SET at = 'x'", "at"),
            ("UPDATE hosts SET route = 'weird'", "route"),
        ]
        let commands: [[String]] = [
            ["show"], ["show", "a.example.com"], ["export", "--out", work.appendingPathComponent("out").path],
            ["report", "--html", work.appendingPathComponent("r.html").path],
            ["refresh", "--all"] + offline.filter { $0 != "--quiet" },
        ]
        for item in cases {
            let copy = work.appendingPathComponent("copy").path
            try? FileManager.default.removeItem(atPath: copy)
            try FileManager.default.copyItem(atPath: original, toPath: copy)
            let tamper = try ChildProcess.run(python, ["-c", "import sqlite3, sys; d = sqlite3.connect(sys.argv[1]); d.execute(sys.argv[2]); d.commit()",
                                                       copy + "/aasa-fetch.sqlite", item.sql])
            #expect(tamper.status == 0, "\(tamper.standardError)")
            var corrupt = 0
            for command in commands {
                let run = try ToolRunner.run(command, cache: copy)
                #expect(run.status < 128, "\(item.sql) | \(command): killed by signal \(run.status - 128): \(run.stderr)")
                #expect([0, 1, 2].contains(run.status), "\(item.sql) | \(command): \(run.status) \(run.stderr)")
                if run.status == 2 {
                    #expect(run.stderr.contains("store-corrupt: \(copy)/aasa-fetch.sqlite: the column \(item.column) holds"), "\(item.sql) | \(command): \(run.stderr)")
                    corrupt += 1
                }
            }
            #expect(corrupt >= 2, "\(item.sql): only \(corrupt) commands said store-corrupt")
        }

        // The most failures a file can claim: the next failure is counted without overflow.
        let copy = work.appendingPathComponent("copy").path
        try? FileManager.default.removeItem(atPath: copy)
        try FileManager.default.copyItem(atPath: original, toPath: copy)
        _ = try ChildProcess.run(python, ["-c", "import sqlite3, sys; d = sqlite3.connect(sys.argv[1]); d.execute(sys.argv[2]); d.commit()",
                                          copy + "/aasa-fetch.sqlite", "UPDATE hosts SET consecutive_failures = 9223372036854775807"])
        let refresh = try ToolRunner.run(["refresh", "--all"] + offline, cache: copy)
        #expect(refresh.status == 0 || refresh.status == 1, "\(refresh.status) \(refresh.stderr)")
    }

    typealias F = AppFixtures
    typealias H = HostileFiles

    static func write(_ bytes: [UInt8], _ name: String, in folder: URL) throws -> String {
        let url = folder.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: url)
        return url.path
    }

    /// `plan --entitlements`: shared objects 24 levels deep (1.9 GB and 24 s before), a cycle, deep
    /// nesting and an endless file each stop with their code, exit 2.
    @Test func entitlementsFiles() throws {
        let dir = try F.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let cases: [(path: String, code: String, text: String)] = [
            (try Self.write(H.sharedObjectsPlist(depth: 24), "bomb.entitlements", in: dir), "entitlements-too-complex", "more than 100000 values"),
            (try Self.write(H.sharedObjectsPlist(depth: 26), "bomb26.entitlements", in: dir), "entitlements-too-complex", "more than 100000 values"),
            (try Self.write(H.cyclicPlist(), "cycle.entitlements", in: dir), "entitlements-malformed", "reference cycle"),
            (try Self.write(H.deepPlist(depth: 5000), "deep.entitlements", in: dir), "entitlements-too-complex", "deeper than 64"),
            ("/dev/zero", "entitlements-too-large", "more than 4194304 bytes"),
        ]
        for (path, code, text) in cases {
            for command in [["plan", "--entitlements", path], ["match", "https://example.com/", "--no-store", "--entitlements", path],
                            ["diagnose", "--entitlements", path]] {
                let result = try ToolRunner.run(command, timeout: .seconds(60))
                #expect(result.status == 2, "\(command) \(path): \(result.stderr)")
                #expect(result.stderr.contains("\(code):") && result.stderr.contains(text), "\(command) \(path): \(result.stderr)")
            }
        }
        // Shared objects within the limits read as they always did.
        let fine = try Self.write(H.sharedObjectsPlist(depth: 8), "fine.entitlements", in: dir)
        let plan = try ToolRunner.run(["plan", "--entitlements", fine, "--json"])
        #expect(plan.status == 0, "\(plan.stderr)")
        #expect(plan.stdout.contains("example.com"))
    }

    /// The same bomb as an app's `Info.plist` (a warning: the executable name is assumed), as the
    /// XML entitlements blob of a Mach-O, and as a provisioning profile's content.
    @Test func appParts() throws {
        let dir = try F.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bomb = H.sharedObjectsPlist(depth: 24)

        // An .app folder and an .ipa whose Info.plist is the bomb: the signature is still read.
        let app = try F.writeAppFolder(in: dir, executable: F.signedExecutable(), profile: nil)
        try Data(bomb).write(to: URL(fileURLWithPath: app).appendingPathComponent("Info.plist"))
        var entries = F.ipaEntries(executable: F.signedExecutable(), profile: nil)
        entries[0].bytes = bomb
        let ipa = try Self.write(F.zip(entries), "Bomb.ipa", in: dir)
        for path in [app, ipa] {
            let result = try ToolRunner.run(["entitlements", path, "--json"], timeout: .seconds(60))
            #expect(result.status == 0, "\(path): \(result.stderr)")
            let json = try result.json()
            #expect(json.findingCodes.contains("plist-too-complex"), "\(path): \(json.findingCodes)")
            #expect(json["appID"] as? String == F.appID)
        }

        // A Mach-O whose only entitlements blob is the bomb (or a cycle): nothing usable, exit 2.
        for (name, plist, text) in [("bomb", bomb, "more than 100000 values"), ("cycle", H.cyclicPlist(), "reference cycle")] {
            let macho = try Self.write(F.machO(signature: F.superBlob(xml: plist, der: nil)), "\(name).macho", in: dir)
            let code = name == "bomb" ? "plist-too-complex" : "signature-malformed"
            for command in [["entitlements", macho], ["plan", "--app", macho]] {
                let result = try ToolRunner.run(command, timeout: .seconds(60))
                #expect(result.status == 2, "\(command): \(result.stderr)")
                #expect(result.stderr.contains("\(code):") && result.stderr.contains(text), "\(command): \(result.stderr)")
            }
        }

        // A provisioning profile whose signed content is the bomb.
        let profile = try Self.write(try F.cmsSign(bomb), "Bomb.mobileprovision", in: dir)
        let result = try ToolRunner.run(["entitlements", profile], timeout: .seconds(60))
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("plist-too-complex:") && result.stderr.contains("the profile's content"), "\(result.stderr)")

        // A device is no app: refused before it is read (the cap on an .ipa is 2 GiB).
        let endless = try ToolRunner.run(["entitlements", "/dev/zero"], timeout: .seconds(60))
        #expect(endless.status == 2)
        #expect(endless.stderr.contains("app-unreadable:") && endless.stderr.contains("is a device"), "\(endless.stderr)")
    }

    /// One size limit for association files read from disk (`--max-size`, 128 KiB by default):
    /// `lint` reports `too-large` alone without parsing, `diff` and `match --aasa` stop with
    /// `file-too-large`, and a file without an end is never read whole.
    @Test func associationFilesOverTheLimit() throws {
        let dir = try F.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = (0..<12_000).map { "\"key\($0)\":{}" }.joined(separator: ",")
        let large = "{\"applinks\":{\"details\":[{\"appIDs\":[\"ABCDE12345.com.example.app\"],\"components\":[{\"/\":\"/*\"}]}]},\(keys)}"
        #expect(large.utf8.count > 128 * 1024 && large.utf8.count < 300 * 1024)
        let big = try Self.write(Array(large.utf8), "big.json", in: dir)
        let small = try Self.write(Array(#"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/a/*"}]}]}}"#.utf8),
                                   "small.json", in: dir)

        // lint: the one finding, with the size when the file has one.
        for (path, size) in [(big, large.utf8.count as Int?), ("/dev/zero", nil)] {
            let result = try ToolRunner.run(["lint", path, "--json"], timeout: .seconds(60))
            #expect(result.status == 1, "\(path): \(result.stderr)")
            let file = try #require((try result.json()["files"] as? [[String: Any]])?.first)
            #expect(file.findingCodes == ["too-large"], "\(path)")
            #expect(file["size"] as? Int == size, "\(path)")
        }
        let raised = try ToolRunner.run(["lint", big, "--json", "--max-size", "1000000"])
        #expect(raised.status == 0, "\(raised.stderr)")
        #expect(try raised.json()["warnings"] as? Int == 12_000)

        // diff and match --aasa: file-too-large, exit 2; --max-size raises the limit.
        for command in [["diff", small, big], ["diff", "/dev/zero", small], ["match", "--aasa", big, "https://example.com/a/b"],
                        ["match", "--aasa", "/dev/zero", "https://example.com/a/b"]] {
            let result = try ToolRunner.run(command, timeout: .seconds(60))
            #expect(result.status == 2, "\(command): \(result.stderr)")
            #expect(result.stderr.contains("file-too-large:") && result.stderr.contains("131072"), "\(command): \(result.stderr)")
        }
        let diff = try ToolRunner.run(["diff", small, big, "--max-size", "1000000"])
        #expect(diff.status == 1, "\(diff.stderr)")
        let match = try ToolRunner.run(["match", "--aasa", big, "https://example.com/a/b", "--max-size", "1000000"])
        #expect(match.status == 0, "\(match.stderr)")
        let jsonDiff = try ToolRunner.run(["diff", small, big, "--json"])
        #expect(jsonDiff.status == 2)
        #expect((try jsonDiff.json()["error"] as? [String: Any])?["code"] as? String == "file-too-large")

        // A URL list without line ends.
        let urls = try ToolRunner.run(["match", "--aasa", small, "--urls", "/dev/zero"], timeout: .seconds(60))
        #expect(urls.status == 2)
        #expect(urls.stderr.contains("urls-line-too-long:"), "\(urls.stderr)")
    }

    /// `export` over a store holding host names a tampered SQLite file or a shared PostgreSQL store
    /// may hold: nothing is written outside `--out`, the unsafe names are skipped with a warning
    /// (exit 1), and `x.cdn` on the origin route and `x` on the CDN route get separate files.
    @Test func exportStaysInsideItsFolder() async throws {
        let dir = try F.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let cache = dir.appendingPathComponent("cache")
        try FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
        let store = try SQLiteAssociationStore(path: cache.appendingPathComponent(SQLiteAssociationStore.fileName).path)
        // A valid host name has up to 253 bytes; HOST.json fits a file name (255) up to 250.
        func long(_ bytes: Int) -> String {
            [String(repeating: "a", count: 63), String(repeating: "b", count: 63), String(repeating: "c", count: 63),
             String(repeating: "d", count: bytes - 192)].joined(separator: ".")
        }
        let safe = [HostKey(host: "x.cdn"), HostKey(host: "x", route: .cdn), HostKey(host: "good.example.com"), HostKey(host: long(250))]
        let unsafe = [HostKey(host: "../escape"), HostKey(host: "/abs/x", route: .cdn), HostKey(host: "a/../../b"), HostKey(host: ".."),
                      HostKey(host: "evil\u{1B}]0;title\u{07}"), HostKey(host: long(251)), HostKey(host: long(253))]
        let now = Date()
        _ = try await store.register(hosts: (safe + unsafe).map { HostRegistration(key: $0, tier: 0) }, needs: [], now: now)
        func body(_ key: HostKey) -> [UInt8] { Array("{\"applinks\":{\"details\":[]},\"for\":\"\(key)\"}".utf8) }
        for key in safe + unsafe {
            let result = StoredResult(code: "ok", reason: "HTTP 200", httpStatus: 200, url: "https://example.com/", headers: [],
                                      body: body(key), fetchedAt: now)
            let update = HostUpdate(key: key, result: result, approvedBody: body(key), validators: nil, consecutiveFailures: 0,
                                    nextCheck: now.addingTimeInterval(86400), outcome: .approved, events: [])
            #expect(try await store.record(update, owner: nil) == .recorded)
        }

        let out = dir.appendingPathComponent("out/inner")
        let result = try ToolRunner.run(["export", "--out", out.path, "--json"], cache: cache.path)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.components(separatedBy: "export-unsafe-host").count - 1 == unsafe.count, "\(result.stderr)")
        #expect(!result.stderr.contains("\u{1B}"), "a control character reached the terminal")
        let json = try result.json()
        #expect((json["files"] as? [[String: Any]])?.count == safe.count)
        #expect(Set((json["skipped"] as? [[String: Any]])?.compactMap { $0["host"] as? String } ?? []) == Set(unsafe.map(\.host)))
        for key in safe {
            let path = out.appendingPathComponent("\(key.route.rawValue)/\(key.host).json")
            #expect(try Data(contentsOf: path) == Data(body(key)), "\(key)")
        }
        // Everything under the scratch folder: the store, and the exported files inside --out.
        let all = FileManager.default.enumerator(atPath: dir.path)?.compactMap { $0 as? String } ?? []
        let outside = all.filter { !$0.hasPrefix("cache") && !$0.hasPrefix("out/inner") && $0 != "out" }
        #expect(outside.isEmpty, "written outside --out: \(outside)")
        #expect(!FileManager.default.fileExists(atPath: "/abs/x.json") && !FileManager.default.fileExists(atPath: "/abs/x.cdn.json"))
        #expect(Set(all.filter { $0.hasPrefix("out/inner/") && $0.hasSuffix(".json") })
                    == ["out/inner/origin/x.cdn.json", "out/inner/cdn/x.json", "out/inner/origin/good.example.com.json",
                        "out/inner/origin/\(long(250)).json"])
    }
}
