import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Glibc
import Testing

/// The store end to end: the real binary records runs, `refresh` fetches what is due with
/// conditional requests against real nginx (ETags), survives SIGKILL at random moments and shares
/// a store with a second refresh. Everything on 127.0.0.1; stores live in temporary folders.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct StoreIntegrationTests {
    static let appID = "ABCDE12345.com.example.app"
    static let good = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/*"}]}]}}"#
    static let narrowed = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/shop/*"}]}]}}"#
    static let otherApp = #"{"applinks":{"details":[{"appIDs":["ZYXWV98765.com.example.other","ZYXWV98765.com.example.more"],"components":[{"/":"/*"}]}]}}"#

    /// `count` hosts `hN.store.example.com` served by one nginx virtual host from `root/HOST/`.
    struct Sites {
        let nginx: NginxServer
        let ca: TestCA
        let root: URL
        let cache: URL
        let hosts: [String]

        static func start(count: Int) async throws -> Sites {
            let ca = try TestCA.shared()
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-store-sites-\(UUID().uuidString)")
            let cache = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-store-cache-\(UUID().uuidString)")
            let hosts = (0..<count).map { "h\($0).store.example.com" }
            let sites = Sites(nginx: try await NginxServer.start(
                hosts: [NginxVirtualHost(
                    certificate: try ca.leaf(for: ["*.store.example.com"]), serverNames: ["*.store.example.com"],
                    documentRoot: root.path + "/$host",
                    directives: ["location ~ apple-app-site-association$ { default_type application/json; }"])],
                http2: false), ca: ca, root: root, cache: cache, hosts: hosts)
            for host in hosts { try sites.serve(Self.good(), for: host) }
            return sites
        }

        static func good() -> String { StoreIntegrationTests.good }

        func serve(_ body: String?, for host: String) throws {
            let file = root.appendingPathComponent("\(host)/.well-known/apple-app-site-association")
            guard let body else {
                try? FileManager.default.removeItem(at: file)
                return
            }
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(body.utf8).write(to: file)
        }

        func stop() {
            nginx.stop()
            try? FileManager.default.removeItem(at: root)
            try? FileManager.default.removeItem(at: cache)
        }

        var network: [String] {
            ["--cacert", ca.caCertPath, "--connect-to", nginx.connectTo, "--allow-private",
             "--retry-delays", "0.05", "--connect-timeout", "2", "--max-time", "5"]
        }

        var domains: [String] { hosts.flatMap { ["--domain", "applinks:\($0)"] } }

        func run(_ arguments: [String]) throws -> ToolRunner.Result {
            try ToolRunner.run(arguments, cache: cache.path, timeout: .seconds(120))
        }

        /// Records every host with a fetch run.
        func record() throws {
            let result = try run(network + domains + ["--app-id", StoreIntegrationTests.appID, "--quiet", "--json"])
            #expect(result.status == 0, "stderr: \(result.stderr)")
        }

        func store() throws -> SQLiteAssociationStore {
            try SQLiteAssociationStore(path: cache.appendingPathComponent(SQLiteAssociationStore.fileName).path, create: false)
        }

        /// `.well-known` requests nginx answered per host.
        func requestCounts() -> [String: Int] {
            var counts: [String: Int] = [:]
            for request in nginx.requests() where request.uri.hasSuffix("/.well-known/apple-app-site-association") {
                counts[request.host, default: 0] += 1
            }
            return counts
        }
    }

    static func later(days: Double) -> String { String(Int(Date().timeIntervalSince1970 + days * 86400)) }

    @Test func runRecordsAndRefreshWithNothingDueIsSilent() async throws {
        let sites = try await Sites.start(count: 3)
        defer { sites.stop() }
        try sites.record()
        let states = try await sites.store().allHosts()
        #expect(states.map(\.key.host) == sites.hosts)
        #expect(states.allSatisfy { $0.isApproved && $0.approvedSize == Self.good.utf8.count && $0.validators.etag != nil })
        let before = sites.nginx.requests().count

        let refresh = try sites.run(["refresh"] + sites.network)
        #expect(refresh.status == 0, "stderr: \(refresh.stderr)")
        #expect(refresh.stdout.isEmpty)
        #expect(refresh.stderr.isEmpty)
        #expect(sites.nginx.requests().count == before, "nothing was due, so nothing was fetched")

        let show = try sites.run(["show", "--json"])
        #expect(show.status == 0)
        let hosts = try #require(try show.json()["hosts"] as? [[String: Any]])
        #expect(hosts.map { $0["host"] as? String } == sites.hosts)
        #expect(hosts.allSatisfy { $0["code"] as? String == "ok" && $0["due"] as? Bool == false && $0["approved"] as? Bool == true })

        let noStore = try ToolRunner.run(sites.network + ["--domain", "applinks:h0.store.example.com", "--no-store", "--quiet"],
                                         cache: sites.cache.appendingPathComponent("unused").path)
        #expect(noStore.status == 1 || noStore.status == 0)
        #expect(!FileManager.default.fileExists(atPath: sites.cache.appendingPathComponent("unused").path))
    }

    @Test func refreshUsesETagsAndReportsChanges() async throws {
        let sites = try await Sites.start(count: 4)
        defer { sites.stop() }
        try sites.record()
        try sites.serve(Self.narrowed, for: "h1.store.example.com")
        try sites.serve(Self.otherApp, for: "h2.store.example.com")
        try sites.serve(nil, for: "h3.store.example.com")
        let logged = sites.nginx.requests().count

        let refresh = try sites.run(["refresh", "--now", Self.later(days: 2), "--json"] + sites.network)
        #expect(refresh.status == 1, "an app stopped being listed and a host broke; stderr: \(refresh.stderr)")
        let report = try refresh.json()
        #expect(report["fetched"] as? Int == 4)
        #expect(report["notModified"] as? Int == 1)
        #expect(report["broken"] as? Bool == true)
        let hosts = try #require(report["hosts"] as? [[String: Any]])
        func kinds(_ host: String) -> [String] {
            let record = hosts.first { $0["host"] as? String == host }
            return (record?["events"] as? [[String: Any]])?.compactMap { $0["kind"] as? String } ?? ["missing"]
        }
        #expect(kinds("h0.store.example.com") == [])
        #expect(kinds("h1.store.example.com") == ["changed"])
        #expect(kinds("h2.store.example.com") == ["changed", "association-lost"])
        #expect(kinds("h3.store.example.com") == ["broke"])
        let h0 = hosts.first { $0["host"] as? String == "h0.store.example.com" }
        #expect(h0?["httpStatus"] as? Int == 304)
        #expect(h0?["outcome"] as? String == "not-modified")

        // nginx saw conditional requests: the unchanged host answered 304.
        let answers = sites.nginx.requests().dropFirst(logged).filter { $0.uri.hasSuffix("/.well-known/apple-app-site-association") }
        #expect(answers.first { $0.host == "h0.store.example.com" }?.status == 304)
        #expect(answers.first { $0.host == "h1.store.example.com" }?.status == 200)

        // The broken host keeps its last approved file; show and export say so.
        let show = try sites.run(["show", "h3.store.example.com", "--json"])
        #expect(show.status == 0)
        let record = try #require((try show.json()["hosts"] as? [[String: Any]])?.first)
        #expect(record["code"] as? String == "http-client-error")
        #expect(record["approvedBytes"] as? Int == Self.good.utf8.count)
        #expect(record["consecutiveFailures"] as? Int == 1)
        #expect((record["history"] as? [[String: Any]])?.compactMap { $0["kind"] as? String } == ["approved", "broke"])
        #expect((record["entries"] as? [[String: Any]])?.first?["entry"] as? String == "applinks:h3.store.example.com")

        let out = sites.cache.appendingPathComponent("out")
        let export = try sites.run(["export", "--out", out.path, "--json"])
        #expect(export.status == 0, "stderr: \(export.stderr)")
        #expect(try String(contentsOf: out.appendingPathComponent("origin/h3.store.example.com.json"), encoding: .utf8) == Self.good)
        #expect(try String(contentsOf: out.appendingPathComponent("origin/h2.store.example.com.json"), encoding: .utf8) == Self.otherApp)

        // Human output of the next change: a summary on stdout, exit 1 for the lost app.
        try sites.serve(Self.otherApp, for: "h0.store.example.com")
        let human = try sites.run(["refresh", "--now", Self.later(days: 9)] + sites.network)
        #expect(human.status == 1)
        #expect(human.stdout.contains("h0.store.example.com association-lost"), "stdout: \(human.stdout)")
        #expect(human.stdout.contains("app-removed"))

        let forget = try sites.run(["forget", "h3.store.example.com"])
        #expect(forget.status == 0)
        #expect(try sites.run(["show", "h3.store.example.com"]).status == 1)
    }

    @Test func matchUsesTheStoredApprovedFile() async throws {
        let sites = try await Sites.start(count: 1)
        defer { sites.stop() }
        try sites.record()
        try sites.serve(Self.otherApp, for: "h0.store.example.com")
        let logged = sites.nginx.requests().count
        let match = try sites.run(["match", "https://h0.store.example.com/anything", "--domain", "applinks:h0.store.example.com",
                                   "--app-id", Self.appID] + sites.network)
        #expect(match.status == 0, "stdout: \(match.stdout) stderr: \(match.stderr)")
        #expect(sites.nginx.requests().count == logged, "the stored file was used")
        let fresh = try sites.run(["match", "https://h0.store.example.com/anything", "--domain", "applinks:h0.store.example.com",
                                   "--app-id", Self.appID, "--no-store"] + sites.network)
        #expect(fresh.status == 1)
    }

    @Test func unusableStoresExitTwoWithACode() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-bad-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = try ToolRunner.run(["refresh"], cache: folder.path)
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("store-missing"))
        #expect(missing.stdout.isEmpty)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(repeating: 0x7A, count: 4096).write(to: folder.appendingPathComponent(SQLiteAssociationStore.fileName))
        for arguments in [["refresh"], ["show"], ["export"], ["forget", "x.example.com"],
                          ["--domain", "applinks:example.com", "--quiet"]] {
            let result = try ToolRunner.run(arguments, cache: folder.path)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("store-corrupt"), "\(arguments): \(result.stderr)")
        }
    }

    // MARK: - Processes at once, and killed

    /// A tool process running in the background.
    final class Running {
        let process = Process()
        let out: URL
        let err: URL

        /// Started with the stopping signals at their default action, whatever the test runner's
        /// are; `environment` is added to the inherited one.
        init(_ arguments: [String], cache: URL, environment: [String: String] = [:]) throws {
            let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-running-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            out = scratch.appendingPathComponent("out")
            err = scratch.appendingPathComponent("err")
            _ = FileManager.default.createFile(atPath: out.path, contents: nil)
            _ = FileManager.default.createFile(atPath: err.path, contents: nil)
            let command = ChildProcess.withSignalDispositions(ignored: [], ToolRunner.binary, arguments)
            process.executableURL = URL(fileURLWithPath: command.executable)
            process.arguments = command.arguments
            process.environment = ChildProcess.inheritedEnvironment.merging(["NO_COLOR": "1", "AASA_FETCH_CACHE": cache.path].merging(environment) { $1 }) { _, new in new }
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = try FileHandle(forWritingTo: out)
            process.standardError = try FileHandle(forWritingTo: err)
            try process.run()
        }

        deinit {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            try? FileManager.default.removeItem(at: out.deletingLastPathComponent())
        }

        /// Sends SIGTERM, then waits (bounded) as ``finish(timeout:)`` does.
        func terminate(timeout: Duration = .seconds(30)) -> (status: Int32, stdout: String, stderr: String) {
            kill(process.processIdentifier, SIGTERM)
            return finish(timeout: timeout)
        }

        /// Waits (bounded) and returns status, stdout and stderr.
        func finish(timeout: Duration = .seconds(120)) -> (status: Int32, stdout: String, stderr: String) {
            if !ChildProcess.waitForExit(process, timeout: timeout) {
                kill(process.processIdentifier, SIGKILL)
                ChildProcess.waitForExit(process, timeout: .seconds(5))
            }
            return (process.terminationStatus, (try? String(contentsOf: out, encoding: .utf8)) ?? "",
                    (try? String(contentsOf: err, encoding: .utf8)) ?? "")
        }
    }

    @Test func twoRefreshesAtOnceFetchEveryDueHostExactlyOnce() async throws {
        let sites = try await Sites.start(count: 40)
        defer { sites.stop() }
        try sites.record()
        #expect(Set(sites.requestCounts().values) == [1])
        let now = Self.later(days: 2)
        let arguments = ["refresh", "--now", now, "--json", "--concurrency", "2", "--batch-size", "3"] + sites.network
        let first = try Running(arguments, cache: sites.cache)
        let second = try Running(arguments, cache: sites.cache)
        let results = [first.finish(), second.finish()]
        for result in results {
            #expect(result.status == 0, "stderr: \(result.stderr)")
        }
        let fetched = try results.map { result -> Int in
            let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            return try #require(object?["fetched"] as? Int, "stdout: \(result.stdout)")
        }
        #expect(fetched.reduce(0, +) == 40, "the two refreshes shared the due hosts: \(fetched)")
        print("two refreshes at once: hosts fetched by each \(fetched)")
        let counts = sites.requestCounts()
        #expect(counts.count == 40)
        #expect(counts.filter { $0.value != 2 }.isEmpty, "one fetch in the recording run, exactly one in the refreshes: \(counts.filter { $0.value != 2 })")
        let store = try sites.store()
        #expect(try await store.integrityCheck() == ["ok"])
        let states = try await store.allHosts()
        #expect(states.allSatisfy { $0.lease == nil && $0.isApproved && $0.lastResult?.httpStatus == 304 })

        // A third refresh finds nothing due and says nothing.
        let third = try sites.run(["refresh", "--now", now] + sites.network)
        #expect(third.status == 0 && third.stdout.isEmpty && third.stderr.isEmpty, "\(third.stdout) \(third.stderr)")
    }

    /// SplitMix64: a seeded generator, so a failing run can be replayed.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test func refreshKilledAtRandomMomentsLeavesTheStoreSound() async throws {
        let sites = try await Sites.start(count: 60)
        defer { sites.stop() }
        try sites.record()
        let variants = [Self.good, Self.narrowed, Self.otherApp]
        var generator = SeededGenerator(state: 0xAA5A_F37C)
        let start = Date().timeIntervalSince1970
        var killedMidRun = 0
        for round in 0..<15 {
            // Change some files (bigger or smaller, so nginx's ETag changes), break a few hosts.
            for host in sites.hosts where Int.random(in: 0..<4, using: &generator) == 0 {
                let pick = Int.random(in: 0...variants.count, using: &generator)
                try sites.serve(pick == variants.count ? nil : variants[pick], for: host)
            }
            let now = String(Int(start) + (round + 1) * 8 * 86400)
            let running = try Running(["refresh", "--now", now, "--quiet", "--concurrency", "4", "--batch-size", "4"] + sites.network,
                                      cache: sites.cache)
            usleep(UInt32(Int.random(in: 20_000...600_000, using: &generator)))
            kill(running.process.processIdentifier, SIGKILL)
            _ = running.finish(timeout: .seconds(10))
            if running.process.terminationReason == .uncaughtSignal { killedMidRun += 1 }

            let store = try sites.store()
            #expect(try await store.integrityCheck() == ["ok"], "round \(round)")
            let states = try await store.states(of: sites.hosts.map { HostKey(host: $0) })
            #expect(states.count == sites.hosts.count)
            for host in sites.hosts {
                let body = states[HostKey(host: host)]?.approvedBody.map { String(decoding: $0, as: UTF8.self) }
                #expect(body.map(variants.contains) == true, "round \(round): \(host) lost its last approved file")
            }
        }
        print("refresh kill test: \(killedMidRun) of 15 refreshes killed before they finished")
        // A refresh left to finish completes on the store the kills left behind.
        let final = try sites.run(["refresh", "--now", String(Int(start) + 200 * 86400), "--json"] + sites.network)
        #expect(final.status == 0 || final.status == 1, "stderr: \(final.stderr)")
        #expect(try await sites.store().integrityCheck() == ["ok"])
    }

    /// SIGTERM stops `refresh --watch` cleanly; so do SIGINT and a hang-up (SIGHUP).
    @Test(arguments: [SIGTERM, SIGINT, SIGHUP])
    func watchStopsCleanlyOnASignal(signal: Int32) async throws {
        let sites = try await Sites.start(count: 3)
        defer { sites.stop() }
        try sites.record()
        let running = try Running(["refresh", "--watch", "--interval", "1s", "--now", Self.later(days: 2), "--json"] + sites.network,
                                  cache: sites.cache)
        // Wait (bounded) until the first pass has printed its line.
        let passed = await waitUntil(timeout: .seconds(30)) {
            ((try? String(contentsOf: running.out, encoding: .utf8)) ?? "").contains("\n")
        }
        #expect(passed)
        kill(running.process.processIdentifier, signal)
        let result = running.finish(timeout: .seconds(30))
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("stopped"))
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count >= 1)
        let first = try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any]
        #expect(first?["fetched"] as? Int == 3)
        let states = try await sites.store().allHosts()
        #expect(states.allSatisfy { $0.lease == nil })
        #expect(try await sites.store().integrityCheck() == ["ok"])
    }
}
