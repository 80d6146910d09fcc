import AASAFetchCore
@testable import AASAFetchCLI
import AASAFetchTestSupport
import CurlTransport
import Foundation
import Testing

/// `--domains` runs on `--route cdn` and `--route both` go through the run spool too: the spool's
/// source (``SpoolSource``) gives the downloads, records and verdicts of the in-memory source
/// (``PlanSource`` over ``RoutedRun/split(_:route:)``), the store keys hosts by the route they are
/// fetched on as the in-memory registration does, and the tool prints byte for byte what the same
/// entries given as `--domain` arguments print.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct SpooledListRoutesTests {
    static let appID = "ABCDE12345.com.example.app"
    static let cdnBase = "https://cdn.test/a/v1/"
    static let good = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/*"}]}]},"webcredentials":{"apps":["ABCDE12345.com.example.app"]}}"#
    static let older = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/old/*"}]}]}}"#

    /// A host with entries with and without a mode (two downloads with `cdn`), a host with `?mode=`
    /// entries only, duplicates, a wildcard, a host that fails on both routes, a host whose CDN copy
    /// is behind, an unfetchable entry, and two tiers (`.de` first with region DE).
    static let strings = [
        "applinks:mixed.example.com", "applinks:mixed.example.com?mode=developer", "webcredentials:mixed.example.com",
        "applinks:mixed.example.com", "applinks:*.wild.example.com", "applinks:fail.example.com", "applinks:bad/path",
        "applinks:modes.example.com?mode=managed", "applinks:stale.example.de", "applinks:modes.example.com?mode=developer",
        "applinks:mixed.example.com?mode=developer", "applinks:stale.example.de?mode=developer+managed",
    ]

    static func transport() -> ScriptedTransport {
        let transport = ScriptedTransport(fallback: .status(404))
        for host in ["mixed.example.com", "wild.example.com", "modes.example.com", "stale.example.de"] {
            transport.on("https://\(host)/.well-known/apple-app-site-association", .json(good))
        }
        transport.on(cdnBase + "mixed.example.com", .json(good, headers: [("Age", "10")]))
        transport.on(cdnBase + "wild.example.com", .json(good))
        transport.on(cdnBase + "stale.example.de", .json(older, headers: [("Age", "5000"), ("Cache-Control", "max-age=21600,public")]))
        return transport
    }

    static func fetcher(_ transport: ScriptedTransport) -> RouteFetcher {
        var options = FetchOptions()
        options.retryDelays = []
        return RouteFetcher(origin: AASAFetcher(transport: transport, options: options),
                            cdn: CDNFetcher(transport: transport, options: options, base: cdnBase))
    }

    /// What a run of `source` gives: each download (start order, host, route, compared route), each
    /// record as JSON (durations blanked), the verdicts and their counts. Hosts are judged in start
    /// order, as ``StreamingRun`` judges them.
    static func run(_ source: any RunSource, appIDs: [String]) async throws -> (units: [String], domains: [String], verdicts: [EntryVerdict], counts: EntryCounts) {
        var waiting: [Int: FetchedHost] = [:]
        var next = 0
        var units: [String] = []
        var domains: [String] = []
        var failure: (any Error)?
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try await source.fetchEach(with: fetcher(transport())) { fetched in
            waiting[fetched.result.startOrder] = fetched
            while let ready = waiting.removeValue(forKey: next) {
                units.append("\(next) \(ready.result.host) \(ready.result.route) \(ready.comparison.map { "\($0.route)" } ?? "-")")
                next += 1
                do {
                    let text = String(decoding: try encoder.encode(try source.judge(ready, appIDs: appIDs)), as: UTF8.self)
                    domains.append(text.replacing(/"milliseconds":\d+/, with: "\"milliseconds\":0"))
                } catch {
                    failure = error
                }
            }
        }
        if let failure { throw failure }
        var verdicts: [EntryVerdict] = []
        try source.forEachVerdict(.all) { verdicts.append($0) }
        return (units, domains, verdicts, try source.counts())
    }

    static func folder(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A store's hosts (in the order they were added) and the needs of each, without the times.
    static func contents(_ store: any AssociationStore) async throws -> [String] {
        var lines: [String] = []
        for state in try await store.allHosts() {
            let result = state.lastResult.map { "\($0.code) \($0.httpStatus.map(String.init) ?? "-") \($0.url) \($0.body?.count ?? -1)" } ?? "none"
            lines.append("\(state.key.host) \(state.key.route) tier \(state.tier) \(result) failures \(state.consecutiveFailures) "
                + "approved \(state.approvedBody?.count ?? -1) needed \(state.unneededSince == nil)")
            let needs = try await store.needs(for: [state.key])[state.key] ?? []
            lines += needs.map { "  \($0.entry) \($0.service.name) \($0.host) \($0.route) \($0.appID)" }.sorted()
        }
        return lines
    }

    /// The spool's source gives the in-memory source's downloads (in the same order, a split host's
    /// CDN download first), records, verdicts and counts; registering the spool keys the store's
    /// hosts by route exactly as registering the split plan does.
    @Test(arguments: [RouteChoice.cdn, .both])
    func spoolSourceGivesWhatThePlanSourceGives(route: RouteChoice) async throws {
        let prioritizer = DomainPrioritizer(region: "DE")
        let entries = EntryParser(definitions: [:]).parse(Self.strings)
        let (routed, comparison) = RoutedRun.split(FetchPlan(entries: entries, prioritizer: prioritizer), route: route)
        for appIDs in [[Self.appID], []] {
            let plan = PlanSource(plan: routed, comparison: comparison, labelsCDN: route == .cdn)
            let spool = try RunSpool(prioritizer: prioritizer)
            defer { spool.remove() }
            try spool.append(definitions: [:]) { add in for string in Self.strings { try add(string) } }
            let spooled = try SpoolSource(spool: spool, route: route)
            #expect(spooled.entryCount == plan.entryCount)
            #expect(spooled.hostCount == plan.hostCount)
            #expect(spooled.longestHost == plan.longestHost)
            #expect(spooled.labelsCDN == plan.labelsCDN)

            let inMemory = try await Self.run(plan, appIDs: appIDs)
            let fromSpool = try await Self.run(spooled, appIDs: appIDs)
            #expect(fromSpool.units == inMemory.units)
            #expect(fromSpool.domains == inMemory.domains)
            #expect(fromSpool.verdicts == inMemory.verdicts)
            #expect(fromSpool.counts == inMemory.counts)
            // What the comparison covers.
            switch route {
            case .cdn:
                #expect(inMemory.units.filter { $0.contains("mixed.example.com") } == ["0 mixed.example.com cdn -", "1 mixed.example.com origin -"])
                #expect(inMemory.units.contains { $0.hasSuffix("modes.example.com origin -") })
                #expect(!inMemory.units.contains { $0.contains("modes.example.com cdn") })
            case .both:
                #expect(inMemory.units.contains { $0.hasSuffix("mixed.example.com origin cdn") })
                #expect(inMemory.units.contains { $0.hasSuffix("modes.example.com origin -") })
                #expect(inMemory.domains.contains { $0.contains("cdn-stale") })
            case .origin:
                break
            }
            #expect(inMemory.verdicts.contains { $0.findings.contains { $0.code == "entitlement-duplicate" } })
            #expect(inMemory.verdicts.contains { $0.entry.host == "fail.example.com" && $0.associated == false })
        }

        // The store: hosts keyed by (host, route) and the needs on each, as the in-memory run registers them.
        let work = try Self.folder("spool-routes-store")
        defer { try? FileManager.default.removeItem(at: work) }
        let spool = try RunSpool(prioritizer: prioritizer)
        defer { spool.remove() }
        try spool.append(definitions: [:]) { add in for string in Self.strings { try add(string) } }
        let now = Date()
        let inMemory = try SQLiteAssociationStore(path: work.appendingPathComponent("memory.sqlite").path, create: true)
        try await StoreSession.registerInChunks(plan: routed, appIDs: [Self.appID], in: inMemory, now: now)
        let fromSpool = try SQLiteAssociationStore(path: work.appendingPathComponent("spool.sqlite").path, create: true)
        // Chunks of 2 hosts: a split host's two keys may straddle pages of the in-memory chunking.
        try await StoreSession.registerInChunks(spool: spool, route: route, appIDs: [Self.appID], in: fromSpool, now: now, chunk: 2)
        let expected = try await Self.contents(inMemory)
        #expect(try await Self.contents(fromSpool) == expected)
        let keys = try await fromSpool.allHosts().map { "\($0.key.host) \($0.key.route)" }
        if route == .cdn {
            #expect(keys.contains("mixed.example.com cdn") && keys.contains("mixed.example.com origin"))
            #expect(keys.contains("modes.example.com origin") && !keys.contains("modes.example.com cdn"))
        } else {
            #expect(keys.allSatisfy { $0.hasSuffix(" origin") })
        }
    }

    // MARK: - The tool

    /// The list of the runs below: a host with a `?mode=developer` entry beside plain ones,
    /// duplicates, a wildcard, hosts failing on the origin, the CDN or both, a stale CDN copy, a
    /// host with a `?mode=` entry only, an unfetchable entry.
    static let list = [
        "# cdn and both through the spool", "approved.test", "applinks:approved.test?mode=developer", "approved.test   # again",
        "webcredentials:approved.test", "applinks:*.wild.test", "stale.test", "swc101.test", "e404.test", "",
        "applinks:legacy.test?mode=developer", "unknown.test", "applinks:bad/path", "applinks:approved.test?mode=developer",
    ].joined(separator: "\n")

    /// `--route cdn|both` with `--domains`: the JSON and human output, exit status and store of the
    /// spooled run are those of the in-memory run of the same entries (`--domain` arguments), and
    /// the spool is gone afterwards.
    @Test func cdnAndBothRunsPrintAndRecordWhatTheInMemoryRunDoes() async throws {
        let fixture = try await DiagnoseFaultMatrixTests.Fixture.start()
        defer { fixture.stop() }
        let work = try Self.folder("spool-routes")
        defer { try? FileManager.default.removeItem(at: work) }
        let listFile = work.appendingPathComponent("list.txt")
        try Data(Self.list.utf8).write(to: listFile)
        let tmp = work.appendingPathComponent("tmp")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        let asArguments = SpooledListTests.entries(of: Self.list).flatMap { ["--domain", $0] }
        func store(_ cache: String) throws -> SQLiteAssociationStore {
            try SQLiteAssociationStore(path: (cache as NSString).appendingPathComponent(SQLiteAssociationStore.fileName), create: false)
        }

        for route in ["cdn", "both"] {
            let common = fixture.network + ["--route", route, "--app-id", Self.appID, "--region", "DE"]
            for output in [["--json"], []] {
                let label = "\(route) \(output)"
                let spooledCache = work.appendingPathComponent("spooled-\(route)-\(output.count)").path
                let plainCache = work.appendingPathComponent("plain-\(route)-\(output.count)").path
                let spooled = try ToolRunner.run(common + ["--domains", listFile.path] + output, cache: spooledCache,
                                                 environment: ["TMPDIR": tmp.path], timeout: .seconds(120))
                let plain = try ToolRunner.run(common + asArguments + output, cache: plainCache, timeout: .seconds(120))
                #expect(spooled.status == 1, "\(label): \(spooled.stderr)")
                #expect(plain.status == spooled.status, "\(label)")
                #expect(SpooledListTests.normalized(spooled.stdout) == SpooledListTests.normalized(plain.stdout), "\(label)")
                #expect(spooled.stderr == plain.stderr, "\(label)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty, "\(label): spool left behind")
                let recorded = try await Self.contents(try store(spooledCache))
                #expect(recorded == (try await Self.contents(try store(plainCache))), "\(label)")
                if route == "cdn" {
                    #expect(recorded.contains { $0.hasPrefix("approved.test cdn ") } && recorded.contains { $0.hasPrefix("approved.test origin ") },
                            "\(recorded)")
                    #expect(recorded.contains { $0.hasPrefix("legacy.test origin ") } && !recorded.contains { $0.hasPrefix("legacy.test cdn ") })
                } else {
                    #expect(recorded.filter { !$0.hasPrefix(" ") }.allSatisfy { $0.split(separator: " ")[1] == "origin" }, "\(recorded)")
                }
            }

            // What the comparison looks at.
            let report = try ToolRunner.run(common + ["--domains", listFile.path, "--json", "--no-store"],
                                            environment: ["TMPDIR": tmp.path], timeout: .seconds(120)).json()
            let domains = report["domains"] as? [[String: Any]] ?? []
            let units = domains.map { "\($0["host"] as? String ?? "") \($0["route"] as? String ?? "")" }
            if route == "cdn" {
                #expect(Array(units.prefix(2)) == ["approved.test cdn", "approved.test origin"], "\(units)")
                #expect(units.contains("legacy.test origin") && units.contains("e404.test cdn"), "\(units)")
                #expect((domains[1]["entries"] as? [String]) == ["applinks:approved.test?mode=developer", "applinks:approved.test?mode=developer"])
                #expect((domains[0]["cdn"] as? [String: Any])?["code"] as? String == "ok")
            } else {
                #expect(units.allSatisfy { $0.hasSuffix(" origin") }, "\(units)")
                let stale = try #require(report.domain("stale.test"))
                #expect(stale["code"] as? String == "ok" && stale.findingCodes.contains("cdn-stale"))
                #expect(report.domain("legacy.test")?["cdn"] == nil || report.domain("legacy.test")?["cdn"] is NSNull)
                #expect(report.domain("e404.test")?["code"] as? String != "ok")
            }
            let entries = report["entries"] as? [[String: Any]] ?? []
            #expect(entries.count == SpooledListTests.entries(of: Self.list).count)
            #expect(entries.contains { $0.findingCodes.contains("entitlement-duplicate") })
        }
    }

    /// The spool is what cdn and both runs read the list from: with no usable `TMPDIR` they stop
    /// with `spool-error` (the in-memory path never needed one), while `--domain` runs go on.
    @Test func cdnAndBothRunsNeedTheSpool() throws {
        let work = try Self.folder("spool-routes-tmp")
        defer { try? FileManager.default.removeItem(at: work) }
        let list = work.appendingPathComponent("list.txt")
        try Data("applinks:slow.example.com?mode=developer\n".utf8).write(to: list)
        let base = ["--app-id", Self.appID, "--quiet", "--no-store", "--connect-to", "::127.0.0.1:9", "--connect-timeout", "1", "--retry-delays", ""]
        for route in ["cdn", "both"] {
            let spooled = try ToolRunner.run(base + ["--route", route, "--domains", list.path], environment: ["TMPDIR": "/proc/no-such-dir"])
            #expect(spooled.status == 2, "\(route): \(spooled.stderr)")
            #expect(spooled.stderr.contains("spool-error"), "\(route): \(spooled.stderr)")
            #expect(spooled.stdout.isEmpty)
            let inMemory = try ToolRunner.run(base + ["--route", route, "--domain", "applinks:slow.example.com?mode=developer"],
                                              environment: ["TMPDIR": "/proc/no-such-dir"])
            #expect(inMemory.status == 1, "\(route): \(inMemory.stderr)")
        }
    }
}
