@testable import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import PostgresClient
import Testing

/// Retention, the same on every ``AssociationStore``: an app's set of needs replaced on record
/// (unneeded hosts neither due nor forced by `--all`), unneeded hosts pruned after their grace
/// period, history pruned by age in batches, the last approved files kept per host.
enum RetentionContract {
    static let t0 = StoreContract.t0
    static let appA = "ABCDE12345.com.example.app"
    static let appB = "ZYXWV98765.com.example.other"

    static func key(_ host: String, _ route: Route = .origin) -> HostKey { HostKey(host: host, route: route) }

    /// Registers `hosts` for `appID` at `at`, then makes them its whole set in `scopes`.
    static func record(_ store: any AssociationStore, app appID: String, _ hosts: [HostKey], at: Date,
                       scopes: [NeedScope] = RouteChoice.origin.needScopes) async throws -> RetiredNeeds {
        _ = try await store.register(
            hosts: hosts.map { HostRegistration(key: $0, tier: 0) },
            needs: hosts.map { EntryNeed(entry: "applinks:\($0.host)", service: .applinks, host: $0.host, route: $0.route, appID: appID) },
            now: at)
        return try await store.retireNeeds(appIDs: [appID], scopes: scopes, registeredBefore: at, now: at)
    }

    static func approve(_ store: any AssociationStore, _ host: String, json: String, etag: String? = nil, at: Date) async throws {
        let previous = try await store.states(of: [key(host)])[key(host)]
        let result = RefreshPolicyTests.approved(json, headers: etag.map { [HTTPHeader(name: "ETag", value: $0)] } ?? [])
        try await store.record(try StoreContract.update(result, host: host, previous: previous, now: at), owner: nil)
    }

    static let checks: [(name: String, run: @Sendable (any AssociationStore) async throws -> Void)] = [
        ("recording an app's set again makes the hosts it dropped unneeded", replaceOnRecord),
        ("a run replaces only the needs its route registers", replaceByRoute),
        ("unneeded hosts are pruned after the grace period, in batches", pruneUnneeded),
        ("history is pruned by age, in batches", pruneHistory),
        ("the last approved files are kept, an equal one only confirms", versions),
    ]

    static func replaceOnRecord(_ store: any AssociationStore) async throws {
        let (a, b, c) = (key("a.example"), key("b.example"), key("c.example"))
        let cdnA = key("a.example", .cdn)
        #expect(try await record(store, app: appA, [a, b, cdnA], at: t0,
                                       scopes: [NeedScope(route: .origin, entries: .all), NeedScope(route: .cdn, entries: .all)]).unneededHosts.isEmpty)
        #expect(try await record(store, app: appB, [b], at: t0).unneededHosts.isEmpty)

        // A drops b: B still needs it.
        let t1 = t0.addingTimeInterval(60)
        let first = try await record(store, app: appA, [a], at: t1)
        #expect(first.needs == 1 && first.unneededHosts.isEmpty, "\(first)")
        #expect(try await store.needs(for: [b])[b]?.map(\.appID) == [appB])
        // An origin-only run leaves A's CDN set alone.
        #expect(try await store.needs(for: [cdnA])[cdnA]?.map(\.appID) == [appA])

        // B now needs only c: b is needed by nobody.
        let t2 = t0.addingTimeInterval(120)
        let second = try await record(store, app: appB, [c], at: t2)
        #expect(second.unneededHosts == [b], "\(second)")
        var states = try await store.states(of: [a, b, c])
        #expect(states[b]?.unneededSince == t2)
        #expect(states[a]?.unneededSince == nil && states[c]?.unneededSince == nil)
        #expect(try await store.allHosts().first { $0.key == b }?.unneededSince == t2)

        // Not due, not in --all, not in nextDue; still fetched when named.
        let later = t0.addingTimeInterval(86400)
        let due = try await store.claimDue(now: later, limit: 10, leaseSeconds: 600, owner: "due")
        #expect(Set(due.hosts.map(\.key)) == [a, c, cdnA], "\(due.hosts.map(\.key))")
        try await store.release(due.hosts.map(\.key), owner: "due")
        let all = try await store.claimForced(hosts: nil, after: 0, now: later, limit: 10, leaseSeconds: 600, owner: "all")
        #expect(!all.claim.hosts.map(\.key).contains(b))
        try await store.release(all.claim.hosts.map(\.key), owner: "all")
        let named = try await store.claimForced(hosts: ["b.example"], after: 0, now: later, limit: 10, leaseSeconds: 600, owner: "named")
        #expect(named.claim.hosts.map(\.key) == [b])
        try await store.release([b], owner: "named")

        // Needed again: back in the schedule.
        let t3 = t0.addingTimeInterval(180)
        _ = try await record(store, app: appA, [a, b], at: t3)
        states = try await store.states(of: [b])
        #expect(states[b]?.unneededSince == nil)
        #expect(try await store.claimDue(now: later, limit: 10, leaseSeconds: 600, owner: "again").hosts.map(\.key).contains(b))
    }

    /// Runs of one app on different routes: each replaces the needs in the scopes its route
    /// registers (``RouteChoice/needScopes``) and leaves the others' alone.
    static func replaceByRoute(_ store: any AssociationStore) async throws {
        let plain = key("p.example"), plainCDN = key("p.example", .cdn), moded = key("m.example")
        /// Registers a run on `route` of the entries `plain` and `moded` name (at most one each),
        /// as the route rule keys them, then replaces the app's set.
        func run(_ route: RouteChoice, plain hasPlain: Bool, moded hasModed: Bool, at: Date) async throws -> RetiredNeeds {
            var hosts: [HostRegistration] = []
            var needs: [EntryNeed] = []
            for (host, isModed, present) in [("p.example", false, hasPlain), ("m.example", true, hasModed)] where present {
                for download in route.downloads(servesPlain: !isModed, servesModes: isModed) {
                    hosts.append(HostRegistration(key: key(host, download.route), tier: 0))
                    needs.append(EntryNeed(entry: "applinks:\(host)" + (isModed ? "?mode=developer" : ""), service: .applinks,
                                           host: host, route: download.route, appID: appA))
                }
            }
            _ = try await store.register(hosts: hosts, needs: needs, now: at)
            return try await store.retireNeeds(appIDs: [appA], scopes: route.needScopes, registeredBefore: at, now: at)
        }
        func needed() async throws -> Set<HostKey> {
            let needs = try await store.needs(for: [plain, plainCDN, moded])
            return Set(needs.filter { !$0.value.isEmpty }.keys)
        }

        _ = try await run(.origin, plain: true, moded: false, at: t0)
        _ = try await run(.cdn, plain: true, moded: true, at: t0.addingTimeInterval(60))
        // The CDN run keeps the origin run's plain need on the origin.
        #expect(try await needed() == [plain, plainCDN, moded])
        // A `both` run (the origin, compared with the CDN) keeps the CDN run's need on the CDN.
        let both = try await run(.both, plain: true, moded: true, at: t0.addingTimeInterval(120))
        #expect(both.needs == 0 && both.unneededHosts.isEmpty, "\(both)")
        #expect(try await needed() == [plain, plainCDN, moded])
        // A CDN run without the `?mode=` entry drops it from the origin, and only it.
        let dropped = try await run(.cdn, plain: true, moded: false, at: t0.addingTimeInterval(180))
        #expect(dropped.needs == 1 && dropped.unneededHosts == [moded], "\(dropped)")
        #expect(try await needed() == [plain, plainCDN])
        // A CDN run without the plain entry drops its CDN need; the origin's stays.
        let cdnDropped = try await run(.cdn, plain: false, moded: false, at: t0.addingTimeInterval(240))
        #expect(cdnDropped.unneededHosts == [plainCDN], "\(cdnDropped)")
        #expect(try await needed() == [plain])
        // An origin run without it drops the last.
        let originDropped = try await run(.origin, plain: false, moded: false, at: t0.addingTimeInterval(300))
        #expect(originDropped.unneededHosts == [plain], "\(originDropped)")
        #expect(try await needed().isEmpty)
    }

    static func pruneUnneeded(_ store: any AssociationStore) async throws {
        let hosts = ["p1.example", "p2.example", "p3.example", "keep.example"].map { key($0) }
        _ = try await record(store, app: appA, hosts, at: t0)
        for host in hosts { try await approve(store, host.host, json: RefreshPolicyTests.good, at: t0) }
        let dropped = t0.addingTimeInterval(3600)
        #expect(try await record(store, app: appA, [hosts[3]], at: dropped).unneededHosts == Array(hosts[0..<3]))

        // Within the grace period nothing goes.
        #expect(try await store.pruneUnneeded(before: dropped.addingTimeInterval(-1), now: dropped, limit: 10).isEmpty)
        // After it, at most `limit` per call.
        let policy = RetentionPolicy(pruneAfter: 30 * 86400, keepHistory: nil, batchSize: 2)
        let firstBatch = try await store.pruneUnneeded(before: dropped, now: dropped, limit: 2)
        #expect(firstBatch == Array(hosts[0..<2]))
        let report = try await policy.prune(store, now: dropped.addingTimeInterval(30 * 86400))
        #expect(report.hosts == [hosts[2]] && report.historyEvents == 0, "\(report)")
        #expect(try await store.allHosts().map(\.key) == [hosts[3]])
        for host in hosts[0..<3] {
            #expect(try await store.history(of: host, limit: 10).isEmpty, "history of \(host) removed")
            #expect(try await store.versions(of: host, bodies: false).isEmpty, "files of \(host) removed")
        }
        #expect(try await store.history(of: hosts[3], limit: 10).count == 1)
        #expect(try await store.versions(of: hosts[3], bodies: false).count == 1)
        // Keeping unneeded hosts: nothing is pruned.
        _ = try await record(store, app: appA, [], at: dropped)
        _ = try await store.retireNeeds(appIDs: [appA], scopes: RouteChoice.origin.needScopes, registeredBefore: dropped.addingTimeInterval(1), now: dropped)
        let kept = try await RetentionPolicy(pruneAfter: nil, keepHistory: nil).prune(store, now: dropped.addingTimeInterval(400 * 86400))
        let remaining = try await store.allHosts()
        #expect(kept.isEmpty && remaining.count == 1)
    }

    static func pruneHistory(_ store: any AssociationStore) async throws {
        let host = key("h.example")
        _ = try await record(store, app: appA, [host], at: t0)
        // approved, failed, approved again: three events at t0, t0 + 10 days, t0 + 20 days.
        try await approve(store, host.host, json: RefreshPolicyTests.good, at: t0)
        let previous = try await store.states(of: [host])[host]
        let failure = RefreshPolicyTests.failure("http-server-error", status: 500)
        try await store.record(try StoreContract.update(failure, host: host.host, previous: previous, now: t0.addingTimeInterval(10 * 86400)), owner: nil)
        try await approve(store, host.host, json: RefreshPolicyTests.good, at: t0.addingTimeInterval(20 * 86400))
        #expect(try await store.history(of: host, limit: 10).map(\.kind) == [.approved, .broke, .approved])

        let cutoff = t0.addingTimeInterval(15 * 86400)
        #expect(try await store.pruneHistory(before: cutoff, limit: 1) == 1)
        #expect(try await store.history(of: host, limit: 10).map(\.kind) == [.broke, .approved], "the oldest goes first")
        let report = try await RetentionPolicy(pruneAfter: nil, keepHistory: 5 * 86400, batchSize: 1)
            .prune(store, now: t0.addingTimeInterval(20 * 86400))
        #expect(report.historyEvents == 1 && report.hosts.isEmpty, "\(report)")
        #expect(try await store.history(of: host, limit: 10).map(\.at) == [t0.addingTimeInterval(20 * 86400)])
        #expect(try await store.states(of: [host])[host]?.approvedBody != nil, "the host itself stays")
    }

    static func versions(_ store: any AssociationStore) async throws {
        let host = key("v.example")
        _ = try await record(store, app: appA, [host], at: t0)
        try await approve(store, host.host, json: RefreshPolicyTests.good, etag: "\"e1\"", at: t0)
        var kept = try await store.versions(of: host, bodies: true)
        #expect(kept.count == 1)
        #expect(kept.first?.digest == SHA256.hex(Array(RefreshPolicyTests.good.utf8)))
        #expect(kept.first?.body == Array(RefreshPolicyTests.good.utf8) && kept.first?.size == RefreshPolicyTests.good.utf8.count)
        #expect(kept.first?.etag == "\"e1\"" && kept.first?.fetchedAt == t0 && kept.first?.index == 0)

        // The same bytes again (a 200 with a new ETag, or a 304): confirmed, no new version.
        let t1 = t0.addingTimeInterval(86400)
        try await approve(store, host.host, json: RefreshPolicyTests.good, etag: "\"e2\"", at: t1)
        kept = try await store.versions(of: host, bodies: false)
        #expect(kept.count == 1 && kept[0].fetchedAt == t0 && kept[0].approvedAt == t1 && kept[0].etag == "\"e2\"", "\(kept)")
        #expect(kept[0].body == nil)

        // A failure keeps them; a changed file is the new latest.
        let previous = try await store.states(of: [host])[host]
        try await store.record(try StoreContract.update(RefreshPolicyTests.failure("timeout"), host: host.host, previous: previous,
                                                        now: t1.addingTimeInterval(60)), owner: nil)
        #expect(try await store.versions(of: host, bodies: false).count == 1)
        let t2 = t0.addingTimeInterval(2 * 86400)
        try await approve(store, host.host, json: RefreshPolicyTests.narrowed, at: t2)
        kept = try await store.versions(of: host, bodies: true)
        #expect(kept.map(\.index) == [0, -1])
        #expect(kept.map(\.body) == [Array(RefreshPolicyTests.narrowed.utf8), Array(RefreshPolicyTests.good.utf8)])

        // Only the last five distinct files stay.
        for n in 0..<6 {
            let json = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/v\#(n)/*"}]}]}}"#
            try await approve(store, host.host, json: json, at: t2.addingTimeInterval(Double(n + 1) * 3600))
        }
        kept = try await store.versions(of: host, bodies: true)
        #expect(kept.count == StoreRetention.keptVersions)
        #expect(kept.first.flatMap { $0.body.map { String(decoding: $0, as: UTF8.self) } }?.contains("/v5/*") == true)
        #expect(kept.last.flatMap { $0.body.map { String(decoding: $0, as: UTF8.self) } }?.contains("/v1/*") == true)

        #expect(try await store.forget(host: host.host) == 1)
        #expect(try await store.versions(of: host, bodies: false).isEmpty)
    }
}

/// The retention contract on SQLite files and on a real PostgreSQL server, and the upgrade of
/// stores made with the previous schema (`v1`) on both.
@Suite(.timeLimit(.minutes(3)))
struct StoreRetentionTests {
    @Test(arguments: RetentionContract.checks.map(\.name))
    func sqlite(_ name: String) async throws {
        let temporary = StoreTests.TemporaryStore()
        let check = try #require(RetentionContract.checks.first { $0.name == name })
        try await check.run(try temporary.open())
        withExtendedLifetime(temporary) {}
    }

    @Test func postgres() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let admin = try await PostgresConnection.connect(server.url)
        for (index, check) in RetentionContract.checks.enumerated() {
            let url = try await StoreContractTests.freshDatabase(admin, server: server, name: "retention_\(index)")
            let store = try await PostgresAssociationStore.connect(url: url)
            print("postgres retention contract: \(check.name)")
            try await check.run(store)
            await store.close()
        }
        await admin.close()
    }

    static let body = RefreshPolicyTests.good

    /// What a store of the previous schema holds, upgraded: hosts, entries, history as they were,
    /// the approved file as version 0, the entries replaceable, the host needed.
    static func checkUpgraded(_ store: any AssociationStore) async throws {
        let host = HostKey(host: "old.example")
        let state = try #require(try await store.states(of: [host])[host])
        #expect(state.approvedBody == Array(body.utf8) && state.unneededSince == nil)
        #expect(try await store.needs(for: [host])[host]?.map(\.appID) == [RetentionContract.appA])
        #expect(try await store.history(of: host, limit: 10).map(\.kind) == [.approved])
        let kept = try await store.versions(of: host, bodies: true)
        #expect(kept.count == 1, "the approved file of the old schema is version 0")
        #expect(kept.first?.digest == SHA256.hex(Array(body.utf8)) && kept.first?.body == Array(body.utf8))
        #expect(kept.first?.etag == "\"old\"" && kept.first?.approvedAt == StoreContract.t0)
        // The same file again adds no version.
        try await RetentionContract.approve(store, host.host, json: body, at: StoreContract.t0.addingTimeInterval(60))
        #expect(try await store.versions(of: host, bodies: false).count == 1)
        // Entries recorded by the old schema are replaced by a new record of the app.
        let later = StoreContract.t0.addingTimeInterval(86400)
        let retired = try await RetentionContract.record(store, app: RetentionContract.appA, [HostKey(host: "new.example")], at: later)
        #expect(retired.unneededHosts == [host])
        // History older than the default keep is pruned.
        let report = try await RetentionPolicy(pruneAfter: nil).prune(store, now: StoreContract.t0.addingTimeInterval(181 * 86400))
        #expect(report.historyEvents == 1)
    }

    @Test func sqliteStoreOfThePreviousSchemaIsUpgraded() async throws {
        let temporary = StoreTests.TemporaryStore()
        try FileManager.default.createDirectory(at: temporary.folder, withIntermediateDirectories: true)
        let t0 = StoreContract.t0.timeIntervalSince1970
        try SQLiteAssociationStore.createForTesting(path: temporary.path, through: "v1", then: """
            INSERT INTO hosts (host, route, tier, added_at, last_code, last_reason, last_http_status, last_url, last_headers,
                               fetched_at, approved_body, approved_at, etag, consecutive_failures, next_check)
            VALUES ('old.example', 'origin', 0, \(t0), 'ok', 'HTTP 200', 200, 'https://old.example/.well-known/apple-app-site-association',
                    '[]', \(t0), CAST('\(Self.body)' AS BLOB), \(t0), '"old"', 0, \(t0 + 86400));
            INSERT INTO entries (entry, app_id, route, service, host, added_at)
            VALUES ('applinks:old.example', '\(RetentionContract.appA)', 'origin', 'applinks', 'old.example', \(t0));
            INSERT INTO history (host, route, at, kind, detail) VALUES ('old.example', 'origin', \(t0), 'approved', '{"code":"ok"}');
            """)
        let store = try temporary.open(create: false)
        #expect(try await store.appliedMigrations() == ["v1", "v2-retention", "v3-notify", "v4-claim-indexes"])
        try await Self.checkUpgraded(store)
        #expect(try await store.integrityCheck() == ["ok"])
    }

    /// A store of the schema before the claim's indexes is read as it is by a command that opens
    /// it read-only (a migration that only adds indexes changes nothing it reads); one older than
    /// that is still refused there; a command that writes adds the indexes.
    @Test func aStoreWithoutTheClaimIndexesIsReadReadOnly() async throws {
        let temporary = StoreTests.TemporaryStore()
        try FileManager.default.createDirectory(at: temporary.folder, withIntermediateDirectories: true)
        let t0 = StoreContract.t0.timeIntervalSince1970
        try SQLiteAssociationStore.createForTesting(path: temporary.path, through: "v3-notify", then: """
            INSERT INTO hosts (host, route, tier, added_at, next_check) VALUES ('old.example', 'origin', 0, \(t0), \(t0));
            """)
        let reader = try SQLiteAssociationStore(path: temporary.path, create: false, readOnly: true)
        #expect(try await reader.allHosts().map(\.key.host) == ["old.example"])
        #expect(try await reader.appliedMigrations() == ["v1", "v2-retention", "v3-notify"], "nothing written")
        let writer = try temporary.open(create: false)
        #expect(try await writer.appliedMigrations().last == "v4-claim-indexes")

        let older = StoreTests.TemporaryStore()
        try FileManager.default.createDirectory(at: older.folder, withIntermediateDirectories: true)
        try SQLiteAssociationStore.createForTesting(path: older.path, through: "v2-retention")
        #expect(throws: StoreError.self) { try SQLiteAssociationStore(path: older.path, create: false, readOnly: true) }
    }

    @Test func postgresStoreOfThePreviousSchemaIsUpgraded() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let old = try await PostgresAssociationStore.connect(url: server.url, through: "v1")
        #expect(try await old.appliedMigrations() == ["v1"])
        let t0 = StoreContract.t0.timeIntervalSince1970
        try await old.executeForTesting("""
            INSERT INTO hosts (host, route, tier, added_at, last_code, last_reason, last_http_status, last_url, last_headers,
                               fetched_at, approved_body, approved_at, etag, consecutive_failures, next_check)
            VALUES ('old.example', 'origin', 0, to_timestamp(\(t0)), 'ok', 'HTTP 200', 200,
                    'https://old.example/.well-known/apple-app-site-association', '[]', to_timestamp(\(t0)),
                    convert_to('\(Self.body)', 'UTF8'), to_timestamp(\(t0)), '"old"', 0, to_timestamp(\(t0 + 86400)))
            """)
        try await old.executeForTesting("""
            INSERT INTO entries (entry, app_id, route, service, host, added_at)
            VALUES ('applinks:old.example', '\(RetentionContract.appA)', 'origin', 'applinks', 'old.example', to_timestamp(\(t0)))
            """)
        try await old.executeForTesting("""
            INSERT INTO history (host, route, at, kind, detail) VALUES ('old.example', 'origin', to_timestamp(\(t0)), 'approved', '{"code":"ok"}')
            """)
        await old.close()
        let store = try await PostgresAssociationStore.connect(url: server.url)
        #expect(try await store.appliedMigrations() == ["v1", "v2-retention", "v3-notify", "v4-claim-indexes"])
        try await Self.checkUpgraded(store)
        await store.close()
    }

    @Test func sha256MatchesKnownDigests() {
        #expect(SHA256.hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }
}
