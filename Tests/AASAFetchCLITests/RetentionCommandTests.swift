import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

/// Store retention end to end, through the real binary against nginx on 127.0.0.1: a fetch run
/// replaces its app's set (dropped hosts are no longer refreshed and are removed after the grace
/// period, `refresh --now` travelling in time), history pruned by age, the kept approved files
/// (`show --versions`) and `diff --stored`.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct RetentionCommandTests {
    typealias Sites = StoreIntegrationTests.Sites
    static let appID = StoreIntegrationTests.appID

    static func later(days: Double) -> String { StoreIntegrationTests.later(days: days) }

    static func hosts(_ result: ToolRunner.Result) throws -> [[String: Any]] {
        try #require(try result.json()["hosts"] as? [[String: Any]], "\(result.stdout)")
    }

    @Test func aNewRecordReplacesTheAppsSetAndDroppedHostsArePrunedAfterTheGracePeriod() async throws {
        let sites = try await Sites.start(count: 3)
        defer { sites.stop() }
        try sites.record()
        let dropped = sites.hosts[2]

        // The app's entitlements again, without h2.
        let again = try sites.run(sites.network + ["--domain", "applinks:\(sites.hosts[0])", "--domain", "applinks:\(sites.hosts[1])",
                                                   "--app-id", Self.appID, "--json"])
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(again.stderr.contains("no longer needed") && again.stderr.contains(dropped), "\(again.stderr)")
        let show = try Self.hosts(try sites.run(["show", "--json"]))
        #expect(show.map { $0["unneededSince"] is String } == [false, false, true], "\(show)")
        let table = try sites.run(["show"])
        let row = try #require(table.stdout.split(separator: "\n").first { $0.contains(dropped) })
        #expect(row.contains("unneeded since"), "\(table.stdout)")
        let detail = try sites.run(["show", dropped])
        #expect(detail.stdout.contains("unneeded since") && !detail.stdout.contains("\n  entry "), "\(detail.stdout)")

        // Not refreshed when due, nor by --all; a record of another app ID leaves this app's set alone.
        let before = sites.requestCounts()[dropped] ?? 0
        let metrics = sites.cache.appendingPathComponent("aasa.prom").path
        let due = try sites.run(["refresh", "--now", Self.later(days: 2), "--json", "--metrics", metrics] + sites.network)
        #expect(due.status == 0, "stderr: \(due.stderr)")
        let exposition = try String(contentsOfFile: metrics, encoding: .utf8)
        #expect(exposition.contains(sites.hosts[0]) && !exposition.contains(dropped), "no series for an unneeded host")
        #expect(try Self.hosts(due).map { $0["host"] as? String } == Array(sites.hosts[0..<2]))
        let all = try sites.run(["refresh", "--all", "--now", Self.later(days: 3), "--json"] + sites.network)
        #expect(try Self.hosts(all).compactMap { $0["host"] as? String }.contains(dropped) == false)
        #expect((sites.requestCounts()[dropped] ?? 0) == before, "an unneeded host is never fetched by a refresh")
        // So `show` never calls it due, however late (the others are).
        let late = try Self.hosts(try sites.run(["show", "--json", "--now", Self.later(days: 5)]))
        #expect(late.map { $0["due"] as? Bool } == [true, true, false], "\(late)")

        // Kept within the grace period, and forever with --prune-after never.
        let within = try sites.run(["refresh", "--now", Self.later(days: 20), "--json"] + sites.network)
        #expect((try within.json()["pruned"] as? [String: Any])?["hosts"] as? [String] == [])
        let never = try sites.run(["refresh", "--prune-after", "never", "--now", Self.later(days: 40), "--json"] + sites.network)
        #expect((try never.json()["pruned"] as? [String: Any])?["hosts"] as? [String] == [], "\(never.stdout)")
        #expect(try sites.run(["show", dropped]).status == 0)

        // Past the default 30 days: removed with its history and files; said on standard output.
        let past = try sites.run(["refresh", "--now", Self.later(days: 40)] + sites.network)
        #expect(past.status == 0, "stderr: \(past.stderr)")
        #expect(past.stdout.contains("removed 1 host") && past.stdout.contains(dropped), "\(past.stdout)")
        let gone = try sites.run(["show", dropped])
        #expect(gone.status == 1 && gone.stderr.contains("host-unknown"), "\(gone.stderr)")
        let store = try sites.store()
        #expect(try await store.history(of: HostKey(host: dropped), limit: 10).isEmpty)
        #expect(try await store.versions(of: HostKey(host: dropped), bodies: false).isEmpty)
        #expect(try await store.allHosts().map(\.key.host) == Array(sites.hosts[0..<2]))

        // Bad values are usage errors.
        let bad = try sites.run(["refresh", "--prune-after", "soon"])
        #expect(bad.status == 64 && bad.stderr.contains("--prune-after"), "\(bad.stderr)")
    }

    /// A stored name that is no host name (a store edited by hand) is never made into a URL:
    /// `refresh` records `entitlement-invalid-host` for it and fetches the others, and the next
    /// refresh is not blocked by it.
    @Test func aStoredNameThatIsNoHostNameIsNeverFetched() async throws {
        let sites = try await Sites.start(count: 3)
        defer { sites.stop() }
        try sites.record()
        let store = try sites.store()
        let tampered = ["\(sites.hosts[1])/evil?", "user:pw@\(sites.hosts[2])"]
        try await store.executeForTesting("UPDATE hosts SET host = '\(tampered[0])' WHERE host = '\(sites.hosts[1])'")
        try await store.executeForTesting("UPDATE hosts SET host = '\(tampered[1])' WHERE host = '\(sites.hosts[2])'")
        let before = sites.requestCounts()
        let refresh = try sites.run(["refresh", "--all", "--json"] + sites.network)
        #expect(refresh.status == 1, "a host that stood approved broke: \(refresh.stderr)")
        let hosts = try Self.hosts(refresh)
        let codes = Dictionary(uniqueKeysWithValues: hosts.map { ($0["host"] as? String ?? "", $0["code"] as? String ?? "") })
        #expect(codes == [sites.hosts[0]: "ok", tampered[0]: "entitlement-invalid-host", tampered[1]: "entitlement-invalid-host"], "\(codes)")
        let after = sites.requestCounts()
        #expect(after[sites.hosts[0]] == (before[sites.hosts[0]] ?? 0) + 1)
        #expect(after[sites.hosts[1]] == before[sites.hosts[1]] && after[sites.hosts[2]] == before[sites.hosts[2]], "\(after)")
        #expect(!sites.nginx.requests().contains { $0.uri.contains("evil") })
        // Recorded like any failure: not due again at once, and a due pass runs clean.
        let next = try sites.run(["refresh", "--json"] + sites.network)
        #expect(next.status == 0, "\(next.stderr)")
    }

    @Test func historyIsPrunedByAge() async throws {
        let sites = try await Sites.start(count: 2)
        defer { sites.stop() }
        try sites.record()
        try sites.serve(StoreIntegrationTests.narrowed, for: sites.hosts[0])
        let changed = try sites.run(["refresh", "--now", Self.later(days: 2), "--json"] + sites.network)
        #expect(changed.status == 0, "stderr: \(changed.stderr)")
        func history(_ host: String) throws -> [[String: Any]] {
            let show = try sites.run(["show", host, "--json"])
            return try #require(try Self.hosts(show).first?["history"] as? [[String: Any]])
        }
        #expect(try history(sites.hosts[0]).count == 2, "approved, then changed")

        let kept = try sites.run(["refresh", "--keep-history", "0", "--now", Self.later(days: 100), "--json"] + sites.network)
        #expect((try kept.json()["pruned"] as? [String: Any])?["historyEvents"] as? Int == 0, "\(kept.stdout)")
        // 50 days: the events of the recording run and of day 2 go; the hosts and files stay.
        let pruned = try sites.run(["refresh", "--keep-history", "50d", "--now", Self.later(days: 100), "--json"] + sites.network)
        #expect((try pruned.json()["pruned"] as? [String: Any])?["historyEvents"] as? Int == 3, "\(pruned.stdout)")
        #expect(try history(sites.hosts[0]).isEmpty && history(sites.hosts[1]).isEmpty)
        #expect(try await sites.store().allHosts().allSatisfy { $0.approvedSize != nil })
        // The default keeps 180 days: nothing more to remove.
        let again = try sites.run(["refresh", "--now", Self.later(days: 101), "--json"] + sites.network)
        #expect((try again.json()["pruned"] as? [String: Any])?["historyEvents"] as? Int == 0)
    }

    @Test func keptVersionsAndStoredDiff() async throws {
        let sites = try await Sites.start(count: 1)
        defer { sites.stop() }
        try sites.record()
        let host = sites.hosts[0]
        try sites.serve(StoreIntegrationTests.narrowed, for: host)
        #expect(try sites.run(["refresh", "--now", Self.later(days: 2)] + sites.network).status == 0)
        // The same file again (a 304, then a 200 after a touch): no new version.
        #expect(try sites.run(["refresh", "--now", Self.later(days: 4)] + sites.network).status == 0)
        try sites.serve(StoreIntegrationTests.narrowed, for: host)
        #expect(try sites.run(["refresh", "--all", "--now", Self.later(days: 5)] + sites.network).status == 0)

        let show = try sites.run(["show", host, "--versions", "--json"])
        #expect(show.status == 0, "\(show.stderr)")
        let versions = try #require(try Self.hosts(show).first?["versions"] as? [[String: Any]])
        #expect(versions.map { $0["index"] as? Int } == [0, -1])
        #expect(versions.map { $0["sha256"] as? String } == [StoreIntegrationTests.narrowed, StoreIntegrationTests.good].map { SHA256.hex(Array($0.utf8)) })
        #expect(versions.map { $0["bytes"] as? Int } == [StoreIntegrationTests.narrowed.utf8.count, StoreIntegrationTests.good.utf8.count])
        #expect(versions.allSatisfy { $0["etag"] is String })
        let human = try sites.run(["show", host, "--versions"])
        #expect(human.stdout.contains("2 approved files kept") && human.stdout.contains("diff --stored \(host)@-1 \(host)"), "\(human.stdout)")

        let diff = try sites.run(["diff", "--stored", "\(host)@-1", host])
        #expect(diff.status == 1, "\(diff.stderr)")
        #expect(diff.stdout.contains("rules-changed") && diff.stdout.contains("/shop/*"), "\(diff.stdout)")
        let same = try sites.run(["diff", "--stored", host, "\(host)@0"])
        #expect(same.status == 0 && same.stdout == "no semantic change\n", "\(same.stdout)")

        let unknownVersion = try sites.run(["diff", "--stored", "\(host)@-2", host])
        #expect(unknownVersion.status == 2 && unknownVersion.stderr.hasPrefix("aasa-fetch: version-unknown: "), "\(unknownVersion.stderr)")
        let unknownHost = try sites.run(["diff", "--stored", "nosuch.example.com@-1", host])
        #expect(unknownHost.status == 2 && unknownHost.stderr.hasPrefix("aasa-fetch: host-unknown: "), "\(unknownHost.stderr)")
        let otherRoute = try sites.run(["diff", "--stored", "\(host)@-1", host, "--route", "cdn"])
        #expect(otherRoute.status == 2 && otherRoute.stderr.contains("host-unknown"), "\(otherRoute.stderr)")
        for usage in [["diff", "--stored", "\(host)@1", host], ["diff", "--stored", "\(host)@x", host], ["diff", "a.json", "b.json", "--route", "cdn"],
                      ["show", "--versions"]] {
            let result = try sites.run(usage)
            #expect(result.status == 64, "\(usage): \(result.stderr)")
        }
    }

    /// The same through a PostgreSQL store (`--store`): replace on record, prune after the grace
    /// period, kept files and diff --stored.
    @Test func aPostgreSQLStoreRetainsTheSameWay() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let sites = try await Sites.start(count: 2)
        defer { sites.stop() }
        let store = ["--store", server.url]
        let all = sites.network + sites.domains + ["--app-id", Self.appID, "--quiet"] + store
        #expect(try sites.run(all).status == 0)
        let (kept, dropped) = (sites.hosts[0], sites.hosts[1])
        let again = try sites.run(sites.network + ["--domain", "applinks:\(kept)", "--app-id", Self.appID] + store)
        #expect(again.status == 0 && again.stderr.contains(dropped), "\(again.stderr)")
        let show = try Self.hosts(try sites.run(["show", "--json"] + store))
        #expect(show.map { $0["unneededSince"] is String } == [false, true], "\(show)")

        try sites.serve(StoreIntegrationTests.narrowed, for: kept)
        let due = try sites.run(["refresh", "--now", Self.later(days: 2), "--json"] + sites.network + store)
        #expect(try Self.hosts(due).map { $0["host"] as? String } == [kept], "\(due.stdout)")
        let diff = try sites.run(["diff", "--stored", "\(kept)@-1", kept] + store)
        #expect(diff.status == 1 && diff.stdout.contains("/shop/*"), "\(diff.stdout)\(diff.stderr)")

        let past = try sites.run(["refresh", "--now", Self.later(days: 40), "--json"] + sites.network + store)
        #expect((try past.json()["pruned"] as? [String: Any])?["hosts"] as? [String] == [dropped], "\(past.stdout)")
        #expect(try Self.hosts(try sites.run(["show", "--json"] + store)).map { $0["host"] as? String } == [kept])
    }
}
