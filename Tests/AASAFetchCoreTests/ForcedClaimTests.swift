import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import PostgresClient
import Testing

/// `claimForced` (refresh --host/--all) and `histories`, the same on SQLite and PostgreSQL:
/// named or every host leased whatever its next check, batch by batch through a cursor; hosts
/// leased elsewhere left alone and counted; parallel claimers never get one host twice.
enum ForcedClaimContract {
    typealias Contract = StoreContract
    static let t0 = StoreContract.t0
    static let later = t0.addingTimeInterval(30 * 86400)

    static let checks: [(name: String, run: @Sendable (ContractStore) async throws -> Void)] = [
        ("every host is leased whatever its next check, in batches through the cursor", everyHost),
        ("named hosts only, every route of them", namedHosts),
        ("hosts leased by another process are left to it and counted, until the lease lapses", leasedElsewhere),
        ("histories: the last events of each host, oldest first", histories),
    ]

    static let names = checks.map(\.name)

    static func everyHost(_ fixture: ContractStore) async throws {
        let store = fixture.store
        try await Contract.register(store, [("a.com", 0), ("b.de", 2), ("c.org", 0), ("d.net", 1), ("e.com", 0)])
        // Nothing due: a due claim takes nothing, a forced one takes everything.
        try await fixture.setNextCheck(later, nil)
        #expect(try await store.claimDue(now: t0, limit: 10, leaseSeconds: 600, owner: "due").hosts.isEmpty)
        let first = try await store.claimForced(hosts: nil, after: 0, now: t0, limit: 2, leaseSeconds: 600, owner: "forced")
        #expect(first.claim.hosts.map(\.key.host) == ["a.com", "b.de"], "order of addition, limit 2")
        #expect(first.claim.hosts.allSatisfy { $0.lease == HostLease(owner: "forced", expires: t0.addingTimeInterval(600)) })
        #expect(first.claim.leasedElsewhere == 0)
        let cursor = try #require(first.cursor)
        let second = try await store.claimForced(hosts: nil, after: cursor, now: t0, limit: 2, leaseSeconds: 600, owner: "forced")
        #expect(second.claim.hosts.map(\.key.host) == ["c.org", "d.net"])
        let third = try await store.claimForced(hosts: nil, after: try #require(second.cursor), now: t0, limit: 2, leaseSeconds: 600, owner: "forced")
        #expect(third.claim.hosts.map(\.key.host) == ["e.com"])
        let done = try await store.claimForced(hosts: nil, after: try #require(third.cursor), now: t0, limit: 2, leaseSeconds: 600, owner: "forced")
        #expect(done.claim.hosts.isEmpty && done.cursor == nil)
        // The leases are real: another process's forced claim gets nothing while they hold.
        let other = try await fixture.reopen().claimForced(hosts: nil, after: 0, now: t0.addingTimeInterval(1), limit: 10, leaseSeconds: 600, owner: "other")
        #expect(other.claim.hosts.isEmpty)
        #expect(other.claim.leasedElsewhere == 5 && other.claim.otherOwners == ["forced"])
        // The states come with their bodies, as a due claim's do.
        let states = try await store.allHosts()
        #expect(states.allSatisfy { $0.lease?.owner == "forced" })
    }

    static func namedHosts(_ fixture: ContractStore) async throws {
        let store = fixture.store
        try await Contract.register(store, [("a.com", 0), ("b.com", 0), ("c.com", 0)])
        _ = try await store.register(hosts: [HostRegistration(key: HostKey(host: "b.com", route: .cdn), tier: 0)], needs: [], now: t0)
        try await fixture.setNextCheck(later, nil)
        let claim = try await store.claimForced(hosts: ["b.com", "missing.com"], after: 0, now: t0, limit: 10, leaseSeconds: 600, owner: "me")
        #expect(claim.claim.hosts.map(\.key) == [HostKey(host: "b.com"), HostKey(host: "b.com", route: .cdn)])
        #expect(try await store.claimForced(hosts: [], after: 0, now: t0, limit: 10, leaseSeconds: 600, owner: "me").claim.hosts.isEmpty)
        let rest = try await store.claimForced(hosts: nil, after: 0, now: t0, limit: 10, leaseSeconds: 600, owner: "me")
        #expect(rest.claim.hosts.map(\.key.host) == ["a.com", "c.com"], "b.com is leased already")
    }

    static func leasedElsewhere(_ fixture: ContractStore) async throws {
        let store = fixture.store
        try await Contract.register(store, [("a.com", 0), ("b.com", 0), ("c.com", 0)])
        // A due refresh elsewhere holds a.com and b.com.
        let running = try await fixture.reopen().claimDue(now: t0, limit: 2, leaseSeconds: 300, owner: "cron")
        #expect(running.hosts.map(\.key.host) == ["a.com", "b.com"])
        let forced = try await store.claimForced(hosts: ["a.com", "c.com"], after: 0, now: t0.addingTimeInterval(10), limit: 10,
                                                 leaseSeconds: 600, owner: "forced")
        #expect(forced.claim.hosts.map(\.key.host) == ["c.com"])
        #expect(forced.claim.leasedElsewhere == 1, "only the selected hosts count")
        #expect(forced.claim.otherOwners == ["cron"])
        #expect(forced.claim.nextLeaseExpiry == t0.addingTimeInterval(300))
        // After the lease lapsed, the host is taken over.
        let after = try await store.claimForced(hosts: ["a.com"], after: 0, now: t0.addingTimeInterval(300), limit: 10,
                                                leaseSeconds: 600, owner: "forced")
        #expect(after.claim.hosts.map(\.key.host) == ["a.com"])
    }

    static func histories(_ fixture: ContractStore) async throws {
        let store = fixture.store
        try await Contract.register(store, [("a.com", 0), ("b.com", 0), ("quiet.com", 0)])
        var previous: HostState?
        for (index, result) in [RefreshPolicyTests.approved(RefreshPolicyTests.good), RefreshPolicyTests.failure("timeout"),
                                RefreshPolicyTests.failure("http-server-error", status: 500),
                                RefreshPolicyTests.approved(RefreshPolicyTests.good)].enumerated() {
            let update = try Contract.update(result, host: "a.com", previous: previous, now: t0.addingTimeInterval(Double(index) * 60))
            try await store.record(update, owner: nil)
            previous = try await store.states(of: [Contract.key("a.com")])[Contract.key("a.com")]
        }
        try await store.record(try Contract.update(RefreshPolicyTests.failure("dns-failure"), host: "b.com", previous: nil, now: t0), owner: nil)
        let keys = ["a.com", "b.com", "quiet.com", "unknown.com"].map(Contract.key)
        let all = try await store.histories(of: keys, limit: 10)
        #expect(all[Contract.key("a.com")]?.map(\.kind) == [.approved, .broke, .failed, .approved])
        #expect(all[Contract.key("a.com")]?.map(\.at) == [0, 60, 120, 180].map { t0.addingTimeInterval($0) })
        #expect(all[Contract.key("b.com")]?.map(\.kind) == [.failed])
        #expect(all[Contract.key("b.com")]?.first?.detail.code == "dns-failure")
        #expect(all[Contract.key("quiet.com")] ?? [] == [])
        let latest = try await store.histories(of: keys, limit: 2)
        #expect(latest[Contract.key("a.com")]?.map(\.kind) == [.failed, .approved], "the last two, oldest first")
        #expect(latest[Contract.key("a.com")] == (try await store.history(of: Contract.key("a.com"), limit: 2)))
    }

    /// Claims with forced claims until nothing is left, on every handle at once; every claim's hosts.
    static func drain(_ handles: [any AssociationStore], limit: Int) async throws -> [[String]] {
        try await withThrowingTaskGroup(of: [[String]].self) { group in
            for (index, handle) in handles.enumerated() {
                group.addTask {
                    var claims: [[String]] = []
                    var cursor: Int64 = 0
                    while true {
                        let forced = try await handle.claimForced(hosts: nil, after: cursor, now: t0, limit: limit, leaseSeconds: 600,
                                                                  owner: "claimer-\(index)")
                        guard let next = forced.cursor else { return claims }
                        cursor = next
                        claims.append(forced.claim.hosts.map(\.key.host))
                    }
                }
            }
            var all: [[String]] = []
            for try await claims in group { all += claims }
            return all
        }
    }
}

@Suite(.timeLimit(.minutes(3)))
struct ForcedClaimTests {
    @Test(arguments: ForcedClaimContract.names)
    func sqlite(_ name: String) async throws {
        let temporary = StoreTests.TemporaryStore()
        let fixture = try ContractStore.sqlite(temporary)
        let check = try #require(ForcedClaimContract.checks.first { $0.name == name })
        try await check.run(fixture)
        withExtendedLifetime(temporary) {}
    }

    /// Every check on a fresh database of one server, then parallel forced claimers.
    @Test func postgres() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let admin = try await PostgresConnection.connect(server.url)
        for (index, check) in ForcedClaimContract.checks.enumerated() {
            let url = try await StoreContractTests.freshDatabase(admin, server: server, name: "forced_\(index)")
            let (fixture, store) = try await ContractStore.postgres(url)
            print("postgres forced claims: \(check.name)")
            try await check.run(fixture)
            await store.close()
        }
        // Six connections forcing every host at once: each host leased by exactly one of them.
        let url = try await StoreContractTests.freshDatabase(admin, server: server, name: "forced_parallel")
        let first = try await PostgresAssociationStore.connect(url: url)
        try await StoreContract.register(first, (0..<300).map { ("h\($0).forced.example", $0 % 3) })
        var handles: [any AssociationStore] = [first]
        for _ in 1..<6 { handles.append(try await PostgresAssociationStore.connect(url: url)) }
        let claimed = try await ForcedClaimContract.drain(handles, limit: 7).flatMap { $0 }
        #expect(claimed.count == 300 && Set(claimed).count == 300, "every host leased once: \(claimed.count), \(Set(claimed).count) distinct")
        for handle in handles { await (handle as? PostgresAssociationStore)?.close() }
        await admin.close()
    }

    @Test func sqliteParallelForcedClaimersNeverGetTheSameHost() async throws {
        let temporary = StoreTests.TemporaryStore()
        let first = try temporary.open()
        try await StoreContract.register(first, (0..<200).map { ("h\($0).forced.example", 0) })
        let handles: [any AssociationStore] = [first] + (try (1..<4).map { _ in try temporary.open() })
        let claimed = try await ForcedClaimContract.drain(handles, limit: 7).flatMap { $0 }
        #expect(claimed.count == 200 && Set(claimed).count == 200)
    }
}
