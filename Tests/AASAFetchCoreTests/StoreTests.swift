import AASAFetchCore
import Foundation
import Testing

/// The SQLite store on real files in temporary folders.
struct StoreTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    final class TemporaryStore {
        let folder: URL
        let path: String
        init() {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-store-test-\(UUID().uuidString)")
            path = folder.appendingPathComponent(SQLiteAssociationStore.fileName).path
        }
        deinit { try? FileManager.default.removeItem(at: folder) }
        func open(create: Bool = true) throws -> SQLiteAssociationStore { try SQLiteAssociationStore(path: path, create: create) }
    }

    static func key(_ host: String) -> HostKey { HostKey(host: host) }

    static func register(_ store: SQLiteAssociationStore, _ hosts: [(String, Int)], at now: Date = t0) async throws {
        _ = try await store.register(
            hosts: hosts.map { HostRegistration(key: key($0.0), tier: $0.1) },
            needs: hosts.map { EntryNeed(entry: "applinks:\($0.0)", service: .applinks, host: $0.0, appID: "ABCDE12345.com.example.app") },
            now: now)
    }

    @Test func migrationsRunOnceAndReopen() async throws {
        let temporary = TemporaryStore()
        let store = try temporary.open()
        #expect(try await store.appliedMigrations() == ["v1"])
        #expect(try await store.integrityCheck() == ["ok"])
        try await Self.register(store, [("example.com", 0)])
        let reopened = try temporary.open(create: false)
        #expect(try await reopened.appliedMigrations() == ["v1"])
        #expect(try await reopened.allHosts().map(\.key.host) == ["example.com"])
    }

    @Test func dueQueryUsesTheNextCheckIndex() async throws {
        let temporary = TemporaryStore()
        let plan = try await temporary.open().dueQueryPlan().joined(separator: " | ")
        #expect(plan.contains("hosts_next_check"), "plan: \(plan)")
    }

    @Test func unusableFilesGiveStableCodes() async throws {
        let temporary = TemporaryStore()
        do {
            _ = try temporary.open(create: false)
            Issue.record("a missing store opened")
        } catch let error as StoreError {
            #expect(error.code == "store-missing")
        }
        try FileManager.default.createDirectory(at: temporary.folder, withIntermediateDirectories: true)
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: temporary.path))
        do {
            _ = try temporary.open()
            Issue.record("a corrupt store opened")
        } catch let error as StoreError {
            #expect(error.code == "store-corrupt", "\(error)")
        }
    }

    @Test func newerSchemaIsRefused() async throws {
        let temporary = TemporaryStore()
        let store = try temporary.open()
        try await store.executeForTesting("INSERT INTO grdb_migrations (identifier) VALUES ('v999-future')")
        do {
            _ = try temporary.open()
            Issue.record("a newer store opened")
        } catch let error as StoreError {
            #expect(error.code == "store-newer-schema")
        }
    }

    @Test func roundTripKeepsTheLastApprovedFileThroughFailures() async throws {
        let temporary = TemporaryStore()
        let store = try temporary.open()
        try await Self.register(store, [("example.com", 0)])
        let policy = RefreshPolicy()
        let good = RefreshPolicyTests.approved(RefreshPolicyTests.good, headers: [HTTPHeader(name: "ETag", value: "\"e1\""), HTTPHeader(name: "Content-Type", value: "application/json")])
        var previous = try await store.states(of: [Self.key("example.com")])
        let first = try #require(policy.update(for: good, previous: previous[Self.key("example.com")], needs: [], now: Self.t0))
        try await store.record(first, owner: nil)

        previous = try await store.states(of: [Self.key("example.com")])
        let failed = try #require(policy.update(for: RefreshPolicyTests.failure("http-server-error", status: 500),
                                                previous: previous[Self.key("example.com")], needs: [], now: Self.t0.addingTimeInterval(60)))
        try await store.record(failed, owner: nil)

        let state = try #require(try await store.states(of: [Self.key("example.com")])[Self.key("example.com")])
        #expect(state.lastResult?.code == "http-server-error")
        #expect(state.lastResult?.httpStatus == 500)
        #expect(state.approvedBody == Array(RefreshPolicyTests.good.utf8))
        #expect(state.approvedAt == Self.t0)
        #expect(state.validators.etag == "\"e1\"")
        #expect(state.consecutiveFailures == 1)
        #expect(state.nextCheck == Self.t0.addingTimeInterval(60 + 3 * 3600))
        #expect(state.approvedDocument != nil)
        let history = try await store.history(of: Self.key("example.com"), limit: 10)
        #expect(history.map(\.kind) == [.approved, .broke])
        #expect(history.last?.detail.code == "http-server-error")
        let needs = try await store.needs(for: [Self.key("example.com")])
        #expect(needs[Self.key("example.com")]?.map(\.appID) == ["ABCDE12345.com.example.app"])
    }

    @Test func dueHostsComeInPriorityOrderAndOnlyWhenDue() async throws {
        let temporary = TemporaryStore()
        let store = try temporary.open()
        try await Self.register(store, [("a.de", 2), ("b.com", 0), ("c.cn", 1), ("d.org", 0), ("later.com", 0)])
        try await store.setNextCheck(Self.t0.addingTimeInterval(3600), host: "later.com")
        let claim = try await store.claimDue(now: Self.t0, limit: 10, leaseSeconds: 7200, owner: "one")
        #expect(claim.hosts.map(\.key.host) == ["b.com", "d.org", "c.cn", "a.de"])
        #expect(claim.hosts.allSatisfy { $0.lease?.owner == "one" })
        #expect(claim.leasedElsewhere == 0)

        let limited = try await temporary.open().claimDue(now: Self.t0.addingTimeInterval(3600), limit: 1, leaseSeconds: 600, owner: "two")
        #expect(limited.hosts.map(\.key.host) == ["later.com"])
        #expect(limited.leasedElsewhere == 4)
        #expect(limited.otherOwners == ["one"])
    }

    @Test func leasesExpireAndAreTakenOver() async throws {
        let temporary = TemporaryStore()
        let store = try temporary.open()
        try await Self.register(store, [("example.com", 0), ("example.net", 0)])
        let first = try await store.claimDue(now: Self.t0, limit: 10, leaseSeconds: 600, owner: "crashed")
        #expect(first.hosts.count == 2)
        let during = try await store.claimDue(now: Self.t0.addingTimeInterval(599), limit: 10, leaseSeconds: 600, owner: "second")
        #expect(during.hosts.isEmpty)
        #expect(during.leasedElsewhere == 2)
        let after = try await store.claimDue(now: Self.t0.addingTimeInterval(600), limit: 10, leaseSeconds: 600, owner: "second")
        #expect(after.hosts.map(\.key.host) == ["example.com", "example.net"])
        #expect(after.hosts.allSatisfy { $0.lease?.owner == "second" })
    }

    @Test func recordingReleasesTheLeaseAndReleaseFreesAbandonedHosts() async throws {
        let temporary = TemporaryStore()
        let store = try temporary.open()
        try await Self.register(store, [("example.com", 0), ("example.net", 0)])
        let claim = try await store.claimDue(now: Self.t0, limit: 10, leaseSeconds: 600, owner: "me")
        let update = try #require(RefreshPolicy().update(for: RefreshPolicyTests.approved(RefreshPolicyTests.good), previous: claim.hosts.first,
                                                          needs: [], now: Self.t0))
        try await store.record(update, owner: "me")
        try await store.release([Self.key("example.net")], owner: "me")
        let states = try await store.states(of: [Self.key("example.com"), Self.key("example.net")])
        #expect(states[Self.key("example.com")]?.lease == nil)
        #expect(states[Self.key("example.net")]?.lease == nil)
        // example.net is due and free again; example.com is approved for a day.
        let again = try await store.claimDue(now: Self.t0, limit: 10, leaseSeconds: 600, owner: "other")
        #expect(again.hosts.map(\.key.host) == ["example.net"])
    }

    @Test func forgetRemovesHostEntriesAndHistory() async throws {
        let temporary = TemporaryStore()
        let store = try temporary.open()
        try await Self.register(store, [("example.com", 0), ("example.net", 0)])
        let update = try #require(RefreshPolicy().update(for: RefreshPolicyTests.approved(RefreshPolicyTests.good), previous: nil, needs: [], now: Self.t0))
        try await store.record(update, owner: nil)
        #expect(try await store.forget(host: "example.com") == 1)
        #expect(try await store.forget(host: "example.com") == 0)
        #expect(try await store.allHosts().map(\.key.host) == ["example.net"])
        #expect(try await store.history(of: Self.key("example.com"), limit: 10).isEmpty)
        #expect(try await store.needs(for: [Self.key("example.com")])[Self.key("example.com")] == [])
    }

    @Test func registeringAgainKeepsState() async throws {
        let temporary = TemporaryStore()
        let store = try temporary.open()
        try await Self.register(store, [("example.com", 0)])
        let update = try #require(RefreshPolicy().update(for: RefreshPolicyTests.approved(RefreshPolicyTests.good), previous: nil, needs: [], now: Self.t0))
        try await store.record(update, owner: nil)
        let states = try await store.register(hosts: [HostRegistration(key: Self.key("example.com"), tier: 2)], needs: [], now: Self.t0.addingTimeInterval(10))
        #expect(states[Self.key("example.com")]?.approvedBody == Array(RefreshPolicyTests.good.utf8))
        #expect(states[Self.key("example.com")]?.tier == 0)
        #expect(try await store.nextDue() == Self.t0.addingTimeInterval(86400))
    }
}
