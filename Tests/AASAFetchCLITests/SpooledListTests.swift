import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

/// `--domains FILE` runs go through the run spool (a temporary SQLite database) instead of memory:
/// their JSON and human output must be byte for byte those of the same entries given as `--domain`
/// arguments (a plan in memory), and the spool must be gone after every run, failed or interrupted.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct SpooledListTests {
    static let appID = FetchIntegrationTests.appID

    /// A list with comments, blank lines, CRLF and a last line without a newline; duplicate hosts,
    /// a wildcard fetched from its parent, webcredentials for a host also listed for applinks,
    /// malformed entries and hosts of three tiers (with --region DE: .com/.org/.net, .de, the rest).
    static let list = [
        "# a crawl list", "good.example.com", "other.example.com   # lists another app", "",
        "  applinks:*.example.net", "webcredentials:good.example.com\r", "good.example.com", "applinks:bad/path",
        "shop.example.de", "example.fr\r", "\r", "legacy.example.org", "redirect.example.com # not followed",
        "applinks:bücher.example", "applinks:good.example.com?mode=developer", "applinks:$(DOMAIN)", "applinks:$(UNSET)",
        "webcredentials:www.example.de", "missing.example.com",
    ].joined(separator: "\n")

    /// The entries the list holds, as `--domain` arguments would give them.
    static func entries(of list: String) -> [String] {
        list.split(whereSeparator: \.isNewline).compactMap { line in
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let trimmed = content.trimmingCharacters(in: .whitespaces)
            return trimmed.isEmpty ? nil : (trimmed.contains(":") ? trimmed : "applinks:\(trimmed)")
        }
    }

    static func folder(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Output with the durations (the only thing that differs between two runs) blanked.
    static func normalized(_ text: String) -> String {
        var text = text.replacing(/"milliseconds": \d+/, with: "\"milliseconds\": 0")
        text = text.replacing(/after \d+ ms/, with: "after 0 ms")
        return text
    }

    /// The spool path and plain `--domain` arguments (a plan in memory) print the same report.
    @Test func spooledRunPrintsWhatTheInMemoryRunPrints() async throws {
        let fixture = try await FetchIntegrationTests.Fixture.start()
        defer { fixture.stop() }
        let work = try Self.folder("spool-equal")
        defer { try? FileManager.default.removeItem(at: work) }
        let listFile = work.appendingPathComponent("list.txt")
        try Data(Self.list.utf8).write(to: listFile)
        let tmp = work.appendingPathComponent("tmp")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)

        let common = fixture.network + ["--app-id", Self.appID, "--region", "DE", "--define", "DOMAIN=example.net",
                                        "--domain", "applinks:error.example.com"]
        let asArguments = Self.entries(of: Self.list).flatMap { ["--domain", $0] }
        for output in [["--json"], []] {
            let cache = work.appendingPathComponent("cache-\(output.count)").path
            let spooled = try ToolRunner.run(common + ["--domains", listFile.path] + output, cache: cache, environment: ["TMPDIR": tmp.path])
            let plain = try ToolRunner.run(common + asArguments + output)
            #expect(spooled.status == 1, "\(spooled.stderr)")
            #expect(plain.status == spooled.status)
            #expect(Self.normalized(spooled.stdout) == Self.normalized(plain.stdout), "\(output)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty, "spool left behind")

            // The spooled run registered and recorded its hosts in the store.
            let shown = try ToolRunner.run(["show", "--json"], cache: cache)
            #expect(shown.status == 0, "\(shown.stderr)")
            for host in ["good.example.com", "shop.example.de", "example.net", "xn--bcher-kva.example", "error.example.com"] {
                #expect(shown.stdout.contains("\"\(host)\""), "\(host) not in the store")
            }
        }

        // What the comparison looks at: every kind of line made it into the report.
        let report = try ToolRunner.run(common + ["--domains", listFile.path, "--json"], environment: ["TMPDIR": tmp.path]).json()
        let hosts = (report["domains"] as? [[String: Any]])?.compactMap { $0["host"] as? String } ?? []
        #expect(hosts.first == "error.example.com")
        #expect(hosts.firstIndex(of: "shop.example.de")! > hosts.firstIndex(of: "missing.example.com")!, "tier 1 after tier 0")
        #expect(hosts.firstIndex(of: "example.fr")! > hosts.firstIndex(of: "www.example.de")!, "tier 2 after tier 1")
        #expect((report.domain("good.example.com")?["entries"] as? [String])
            == ["applinks:good.example.com", "webcredentials:good.example.com", "applinks:good.example.com", "applinks:good.example.com?mode=developer"])
        #expect((report.domain("example.net")?["entries"] as? [String]) == ["applinks:*.example.net", "applinks:$(DOMAIN)"])
        let entries = report["entries"] as? [[String: Any]] ?? []
        #expect(entries.count == Self.entries(of: Self.list).count + 1)
        #expect(entries.contains { $0.findingCodes.contains("entitlement-duplicate") })
        #expect(entries.contains { $0["code"] as? String == "entitlement-path" })
        #expect(entries.contains { $0["code"] as? String == "entitlement-unresolved-variable" })
        #expect(report.domain("other.example.com")?["code"] as? String == "app-not-listed")
    }

    /// Past the page size (1,000 hosts a query): the window runs across pages and the order holds.
    @Test func largeListCrossesPagesInTheSameOrder() throws {
        let work = try Self.folder("spool-large")
        defer { try? FileManager.default.removeItem(at: work) }
        var lines: [String] = []
        for index in 0..<2600 {
            let tld = ["com", "de", "io"][index % 3]
            lines.append("h\(index % 2300).example.\(tld)")
            if index % 97 == 0 { lines.append("webcredentials:h\(index).example.\(tld) # again") }
        }
        let listFile = work.appendingPathComponent("list.txt")
        try Data(lines.joined(separator: "\n").utf8).write(to: listFile)
        let asArguments = Self.entries(of: lines.joined(separator: "\n")).flatMap { ["--domain", $0] }
        // Every host is refused as a private address without a request: deterministic, no network.
        let arguments = ["--domains", listFile.path, "--no-store", "--region", "DE", "--app-id", Self.appID, "--quiet",
                         "--connect-to", "::127.0.0.1:9", "--connect-timeout", "1", "--retry-delays", "", "--concurrency", "64"]
        for output in [["--json"], []] {
            let spooled = try ToolRunner.run(arguments + output, environment: ["TMPDIR": work.path], timeout: .seconds(240))
            let inMemory = try ToolRunner.run(asArguments + Array(arguments.dropFirst(2)) + output, timeout: .seconds(240))
            #expect(spooled.status == 1, "\(spooled.stderr)")
            #expect(Self.normalized(spooled.stdout) == Self.normalized(inMemory.stdout), "\(output)")
            #expect(spooled.stdout.count > 100_000)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: work.path) == ["list.txt"])
    }

    /// Failed runs remove the spool too; unreadable lists keep their code and exit 2.
    @Test func failedRunsRemoveTheSpool() throws {
        let work = try Self.folder("spool-fail")
        defer { try? FileManager.default.removeItem(at: work) }
        let tmp = work.appendingPathComponent("tmp")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        func leftovers() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: tmp.path) }
        let base = ["--app-id", Self.appID, "--quiet", "--connect-to", "::127.0.0.1:9", "--connect-timeout", "1", "--retry-delays", ""]

        // Not UTF-8: the line is named, on every route; the in-memory reading (`plan`) fails the same way (code and exit status).
        let latin1 = work.appendingPathComponent("latin1.txt")
        try Data(Array("good.example.com\n".utf8) + [0x62, 0xFC, 0x63, 0x68, 0x65, 0x72, 0x2E, 0x64, 0x65, 0x0A]).write(to: latin1)
        for route in ["origin", "cdn", "both"] {
            let invalid = try ToolRunner.run(base + ["--route", route, "--domains", latin1.path], environment: ["TMPDIR": tmp.path])
            #expect(invalid.status == 2, "\(route)")
            #expect(invalid.stderr.contains("domains-unreadable") && invalid.stderr.contains("line 2 is not valid UTF-8"), "\(route): \(invalid.stderr)")
            #expect(invalid.stdout.isEmpty)
            #expect(try leftovers().isEmpty, "\(route)")
        }
        let invalidInMemory = try ToolRunner.run(["plan", "--domains", latin1.path])
        #expect(invalidInMemory.status == 2)
        #expect(invalidInMemory.stderr.contains("domains-unreadable"))

        // Missing and unreadable lists.
        for path in ["/nonexistent/list.txt", work.path] {
            let result = try ToolRunner.run(base + ["--domains", path], environment: ["TMPDIR": tmp.path])
            #expect(result.status == 2, "\(path)")
            #expect(result.stderr.contains("domains-unreadable"), "\(path): \(result.stderr)")
            #expect(try leftovers().isEmpty)
        }

        // A corrupt store stops the run after the list was spooled.
        let list = work.appendingPathComponent("list.txt")
        try Data("good.example.com\nexample.org\n".utf8).write(to: list)
        let cache = work.appendingPathComponent("cache")
        try FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
        try Data(repeating: 0x7A, count: 4096).write(to: cache.appendingPathComponent(SQLiteAssociationStore.fileName))
        let corrupt = try ToolRunner.run(base + ["--domains", list.path], cache: cache.path, environment: ["TMPDIR": tmp.path])
        #expect(corrupt.status == 2)
        #expect(corrupt.stderr.contains("store-corrupt"), "\(corrupt.stderr)")
        #expect(try leftovers().isEmpty)

        // A spool that cannot be created: its own code, exit 2.
        let noTmp = try ToolRunner.run(base + ["--domains", list.path, "--no-store"], environment: ["TMPDIR": "/proc/no-such-dir"])
        #expect(noTmp.status == 2)
        #expect(noTmp.stderr.contains("spool-error"), "\(noTmp.stderr)")

        // A run that completes (every host refused, exit 1) leaves nothing either.
        let done = try ToolRunner.run(base + ["--domains", list.path, "--no-store"], environment: ["TMPDIR": tmp.path])
        #expect(done.status == 1, "\(done.stderr)")
        #expect(try leftovers().isEmpty)
    }

    /// A line over 64 KiB (a file without line ends, `/dev/zero` among them) stops the run with
    /// `domains-line-too-long` naming the line, exit 2, in bounded memory, and removes the spool
    /// (`--route cdn` spools too); the in-memory reading (`plan`) reads the list through the same reader.
    @Test func overlongLineStopsTheRunAndRemovesTheSpool() throws {
        let work = try Self.folder("spool-long-line")
        defer { try? FileManager.default.removeItem(at: work) }
        let tmp = work.appendingPathComponent("tmp")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        let base = ["--app-id", Self.appID, "--quiet", "--no-store", "--connect-to", "::127.0.0.1:9", "--connect-timeout", "1", "--retry-delays", ""]
        let list = work.appendingPathComponent("long.txt")
        try Data(Array("good.example.com\r\nexample.org\n".utf8) + Array(repeating: UInt8(ascii: "a"), count: 200_000)).write(to: list)
        for (path, line) in [(list.path, 3), ("/dev/zero", 1)] {
            let spooled = try ToolRunner.run(base + ["--domains", path], environment: ["TMPDIR": tmp.path], timeout: .seconds(60))
            #expect(spooled.status == 2, "\(path): \(spooled.stderr)")
            #expect(spooled.stderr.contains("domains-line-too-long") && spooled.stderr.contains("line \(line) is longer than 65536 bytes"),
                    "\(path): \(spooled.stderr)")
            #expect(spooled.stdout.isEmpty)
            #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty, "spool left behind")
            for arguments in [base + ["--route", "cdn"], ["plan"]] {
                let result = try ToolRunner.run(arguments + ["--domains", path], environment: ["TMPDIR": tmp.path], timeout: .seconds(60))
                #expect(result.status == 2, "\(arguments) \(path): \(result.stderr)")
                #expect(result.stderr.contains("domains-line-too-long"), "\(arguments) \(path): \(result.stderr)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty, "\(arguments): spool left behind")
            }
        }
    }

    /// Starts a spooled run of `list` that waits on `server` (which never answers), with `tmp` as
    /// its `TMPDIR`. Its connect timeout is a minute, as its `--max-time`: with the default 5 s, a
    /// handshake the overloaded test process did not finish in time ended the run (exit 1) before
    /// the test's signal came.
    /// `ignoring`: signals the run inherits ignored (every other stopping signal at its default);
    /// `errors`: the file its standard error goes to (else nowhere).
    static func startWaitingRun(route: String = "origin", list: URL, tmp: URL, server: FaultServer, ca: TestCA, ignoring: [Int32] = [],
                                errors: URL? = nil) throws -> Process {
        let command = ChildProcess.withSignalDispositions(ignored: ignoring, ToolRunner.binary, [
            "--route", route, "--domains", list.path, "--no-store", "--quiet", "--cacert", ca.caCertPath, "--connect-to", server.connectTo,
            "--allow-private", "--connect-timeout", "60", "--max-time", "60", "--retry-delays", "", "--app-id", Self.appID,
        ])
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command.executable)
        process.arguments = command.arguments
        process.environment = ChildProcess.inheritedEnvironment.merging(["TMPDIR": tmp.path, "NO_COLOR": "1"]) { _, new in new }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        if let errors {
            _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
            process.standardError = try FileHandle(forWritingTo: errors)
        } else {
            process.standardError = FileHandle.nullDevice
        }
        try process.run()
        return process
    }

    /// What a run that waits needs: a server that never answers `slow.example.com`, and a scratch
    /// folder holding a one-line list for `route` and an empty `TMPDIR`.
    struct WaitingRunSetup {
        let ca: TestCA
        let server: FaultServer
        let work: URL
        let list: URL
        let tmp: URL

        func cleanUp() {
            server.stop()
            try? FileManager.default.removeItem(at: work)
        }
    }

    static func waitingRun(_ name: String, route: String = "origin") async throws -> WaitingRunSetup {
        let ca = try TestCA.shared()
        let server = try await FaultServer.start(script: FaultScript(default: .neverAnswer), certificate: try ca.leaf(for: ["slow.example.com"]))
        let work = try Self.folder(name)
        let list = work.appendingPathComponent("list.txt")
        let tmp = work.appendingPathComponent("tmp")
        do {
            try Data((route == "origin" ? "slow.example.com\n" : "applinks:slow.example.com?mode=developer\n").utf8).write(to: list)
            try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        } catch {
            server.stop()
            try? FileManager.default.removeItem(at: work)
            throw error
        }
        return WaitingRunSetup(ca: ca, server: server, work: work, list: list, tmp: tmp)
    }

    /// The spool folders in `tmp`.
    static func spools(in tmp: URL) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: tmp.path)) ?? [])
    }

    /// SIGTERM in the middle of the downloads: the spool is deleted and the process ends as the
    /// signal would end it, on every route (the `?mode=developer` entry is fetched from the origin
    /// on each, so no request goes to Apple's CDN); SIGINT and SIGHUP (a closed terminal) too.
    @Test(arguments: [("origin", SIGTERM), ("cdn", SIGTERM), ("both", SIGTERM), ("origin", SIGINT), ("origin", SIGHUP), ("both", SIGHUP)])
    func interruptedRunRemovesTheSpool(route: String, signal: Int32) async throws {
        let setup = try await Self.waitingRun("spool-signal", route: route)
        defer { setup.cleanUp() }
        let (ca, server, list, tmp) = (setup.ca, setup.server, setup.list, setup.tmp)

        let errors = setup.work.appendingPathComponent("stderr.txt")
        let process = try Self.startWaitingRun(route: route, list: list, tmp: tmp, server: server, ca: ca, errors: errors)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let spooled = await waitUntil(timeout: .seconds(20)) { !Self.spools(in: tmp).isEmpty }
        #expect(spooled, "no spool appeared")
        // Let the download start, then interrupt.
        try await Task.sleep(for: .milliseconds(500))
        let runningWhenSignalled = process.isRunning
        kill(process.processIdentifier, signal)
        #expect(ChildProcess.waitForExit(process, timeout: .seconds(20)))
        #expect(process.terminationStatus == 128 + signal,
                "running when signalled: \(runningWhenSignalled); \((try? String(contentsOf: errors, encoding: .utf8)) ?? "")")
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty)
    }

    /// A run started with SIGHUP ignored (`nohup`) keeps it ignored: a hang-up neither stops it nor
    /// deletes its spool; SIGTERM still does.
    @Test func anIgnoredHangUpStaysIgnored() async throws {
        let setup = try await Self.waitingRun("spool-nohup")
        defer { setup.cleanUp() }
        let (ca, server, list, tmp) = (setup.ca, setup.server, setup.list, setup.tmp)

        let process = try Self.startWaitingRun(list: list, tmp: tmp, server: server, ca: ca, ignoring: [SIGHUP])
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        #expect(await waitUntil(timeout: .seconds(20)) { !Self.spools(in: tmp).isEmpty }, "no spool appeared")
        try await Task.sleep(for: .milliseconds(500))
        kill(process.processIdentifier, SIGHUP)
        try await Task.sleep(for: .seconds(1))
        #expect(process.isRunning, "a hang-up the run inherited ignored stopped it")
        #expect(Self.spools(in: tmp).count == 1)
        kill(process.processIdentifier, SIGTERM)
        #expect(ChildProcess.waitForExit(process, timeout: .seconds(20)))
        #expect(process.terminationStatus == 128 + SIGTERM)
        #expect(Self.spools(in: tmp).isEmpty)
    }

    /// A run killed with SIGKILL cannot remove its spool; the next spooled run in the same
    /// `TMPDIR` removes it, and leaves the spool of a run still going (another process's).
    @Test func aKilledRunsSpoolIsRemovedByTheNextRun() async throws {
        let setup = try await Self.waitingRun("spool-killed")
        defer { setup.cleanUp() }
        let (ca, server, list, tmp) = (setup.ca, setup.server, setup.list, setup.tmp)

        // A run that goes on, and a run killed while it waits.
        let going = try Self.startWaitingRun(list: list, tmp: tmp, server: server, ca: ca)
        defer { if going.isRunning { kill(going.processIdentifier, SIGKILL) } }
        #expect(await waitUntil(timeout: .seconds(20)) { Self.spools(in: tmp).count == 1 }, "no spool appeared")
        let goingSpool = Self.spools(in: tmp)
        let victim = try Self.startWaitingRun(list: list, tmp: tmp, server: server, ca: ca)
        defer { if victim.isRunning { kill(victim.processIdentifier, SIGKILL) } }
        #expect(await waitUntil(timeout: .seconds(20)) { Self.spools(in: tmp).count == 2 }, "no second spool appeared")
        let killedSpool = Self.spools(in: tmp).subtracting(goingSpool)
        kill(victim.processIdentifier, SIGKILL)
        #expect(ChildProcess.waitForExit(victim, timeout: .seconds(20)))
        #expect(Self.spools(in: tmp) == goingSpool.union(killedSpool), "the killed run's spool should still be there")

        // The next run: every host fails fast (nothing listens on the port it is sent to).
        let refused = try Loopback.freePort()
        let next = try ToolRunner.run(["--domains", list.path, "--no-store", "--quiet", "--cacert", ca.caCertPath, "--connect-to", "::127.0.0.1:\(refused)",
                                       "--allow-private", "--retry-delays", "", "--app-id", Self.appID],
                                      environment: ["TMPDIR": tmp.path], timeout: .seconds(60))
        #expect(next.status == 1, "\(next.stderr)")
        #expect(Self.spools(in: tmp) == goingSpool, "the killed run's spool should be removed, the going one's kept")
        kill(going.processIdentifier, SIGTERM)
        #expect(ChildProcess.waitForExit(going, timeout: .seconds(20)))
        #expect(Self.spools(in: tmp).isEmpty)
    }
}
