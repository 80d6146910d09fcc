import AASAFetchCore
import CurlTransport
import AASAFetchTestSupport
import Foundation
import PostgresClient
import Testing

/// One store under test: a handle, a way to open a second one (another process's connection) and
/// the test-only way to make hosts due.
struct ContractStore: Sendable {
    let store: any AssociationStore
    let reopen: @Sendable () async throws -> any AssociationStore
    let setNextCheck: @Sendable (Date, String?) async throws -> Void

    /// A SQLite store in `temporary`'s file, reopened from the same path.
    static func sqlite(_ temporary: StoreTests.TemporaryStore) throws -> ContractStore {
        let path = temporary.path
        let store = try temporary.open()
        return ContractStore(
            store: store,
            reopen: { try SQLiteAssociationStore(path: path, create: false) },
            setNextCheck: { date, host in try await store.setNextCheck(date, host: host) })
    }

    /// A PostgreSQL store of the database at `url`, reopened with a new connection.
    static func postgres(_ url: String) async throws -> (fixture: ContractStore, store: PostgresAssociationStore) {
        let store = try await PostgresAssociationStore.connect(url: url)
        let fixture = ContractStore(
            store: store,
            reopen: { try await PostgresAssociationStore.connect(url: url) },
            setNextCheck: { date, host in try await store.setNextCheck(date, host: host) })
        return (fixture, store)
    }
}

/// The behaviour every ``AssociationStore`` must have, run against SQLite and PostgreSQL alike:
/// registration, due hosts in priority order with limits, exclusive and expiring leases,
/// recording (the approved body kept through failures, history, lease release, lost leases),
/// release, forget, nextDue.
enum StoreContract {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    static let appID = "ABCDE12345.com.example.app"

    static func key(_ host: String) -> HostKey { HostKey(host: host) }

    static func register(_ store: any AssociationStore, _ hosts: [(String, Int)], at now: Date = t0) async throws {
        _ = try await store.register(
            hosts: hosts.map { HostRegistration(key: key($0.0), tier: $0.1) },
            needs: hosts.map { EntryNeed(entry: "applinks:\($0.0)", service: .applinks, host: $0.0, appID: appID) },
            now: now)
    }

    /// The update the policy makes for `result`, as if it came from `host`.
    static func update(_ result: HostFetchResult, host: String = "example.com", previous: HostState?, now: Date) throws -> HostUpdate {
        var update = try #require(RefreshPolicy().update(for: result, previous: previous, needs: [], now: now))
        update.key = key(host)
        update.events = update.events.map { event in
            var event = event
            event.key = key(host)
            return event
        }
        return update
    }

    static let checks: [(name: String, run: @Sendable (ContractStore) async throws -> Void)] = [
        ("round trip keeps the last approved file through failures", roundTrip),
        ("due hosts come in priority order, only when due, within the limit", dueOrder),
        ("leases are exclusive and are taken over after expiry", leasesExpire),
        ("recording releases the lease; release frees abandoned hosts", recordReleases),
        ("a lapsed lease taken over is not recorded over the newer result", lostLease),
        ("a leased result judged before a run recorded the host is not recorded", recordedMeanwhile),
        ("a download recorded again is recorded once and is not a lost lease", recordedAgain),
        ("forget removes host, entries and history", forget),
        ("registering again keeps state; nextDue", registerAgain),
        ("odd text and binary bodies round-trip", oddValues),
        ("refresh fetches each row over its own route, with its own validators", refreshPerRoute),
    ]

    static let names = checks.map(\.name)

    static func roundTrip(_ fixture: ContractStore) async throws {
        let store = fixture.store
        try await register(store, [("example.com", 0)])
        let policy = RefreshPolicy()
        let good = RefreshPolicyTests.approved(RefreshPolicyTests.good, headers: [HTTPHeader(name: "ETag", value: "\"e1\""), HTTPHeader(name: "Content-Type", value: "application/json")])
        var previous = try await store.states(of: [key("example.com")])
        let first = try #require(policy.update(for: good, previous: previous[key("example.com")], needs: [], now: t0))
        #expect(try await store.record(first, owner: nil) == .recorded)

        previous = try await store.states(of: [key("example.com")])
        let failed = try #require(policy.update(for: RefreshPolicyTests.failure("http-server-error", status: 500),
                                                previous: previous[key("example.com")], needs: [], now: t0.addingTimeInterval(60)))
        try await store.record(failed, owner: nil)

        let state = try #require(try await store.states(of: [key("example.com")])[key("example.com")])
        #expect(state.lastResult?.code == "http-server-error")
        #expect(state.lastResult?.httpStatus == 500)
        #expect(state.lastResult?.fetchedAt == t0.addingTimeInterval(60))
        #expect(state.approvedBody == Array(RefreshPolicyTests.good.utf8))
        #expect(state.approvedSize == RefreshPolicyTests.good.utf8.count)
        #expect(state.approvedAt == t0)
        #expect(state.validators.etag == "\"e1\"")
        #expect(state.consecutiveFailures == 1)
        #expect(state.nextCheck == t0.addingTimeInterval(60 + 3 * 3600))
        #expect(state.addedAt == t0)
        #expect(state.approvedDocument != nil)
        let history = try await store.history(of: key("example.com"), limit: 10)
        #expect(history.map(\.kind) == [.approved, .broke])
        #expect(history.last?.detail.code == "http-server-error")
        #expect(history.first?.at == t0)
        #expect(try await store.history(of: key("example.com"), limit: 1).map(\.kind) == [.broke])
        let needs = try await store.needs(for: [key("example.com")])
        #expect(needs[key("example.com")]?.map(\.appID) == [appID])
        // allHosts carries no bodies, only their size.
        let summary = try #require(try await store.allHosts().first)
        #expect(summary.approvedBody == nil && summary.approvedSize == RefreshPolicyTests.good.utf8.count)
        #expect(summary.lastResult?.code == "http-server-error")
    }

    static func dueOrder(_ fixture: ContractStore) async throws {
        let store = fixture.store
        try await register(store, [("a.de", 2), ("b.com", 0), ("c.cn", 1), ("d.org", 0), ("later.com", 0)])
        try await fixture.setNextCheck(t0.addingTimeInterval(3600), "later.com")
        let claim = try await store.claimDue(now: t0, limit: 10, leaseSeconds: 7200, owner: "one")
        #expect(claim.hosts.map(\.key.host) == ["b.com", "d.org", "c.cn", "a.de"])
        #expect(claim.hosts.allSatisfy { $0.lease?.owner == "one" && $0.lease?.expires == t0.addingTimeInterval(7200) })
        #expect(claim.leasedElsewhere == 0)
        #expect(claim.nextLeaseExpiry == nil)

        let limited = try await fixture.reopen().claimDue(now: t0.addingTimeInterval(3600), limit: 1, leaseSeconds: 600, owner: "two")
        #expect(limited.hosts.map(\.key.host) == ["later.com"])
        #expect(limited.leasedElsewhere == 4)
        #expect(limited.otherOwners == ["one"])
        #expect(limited.nextLeaseExpiry == t0.addingTimeInterval(7200))
        #expect(try await store.claimDue(now: t0.addingTimeInterval(3600), limit: 10, leaseSeconds: 600, owner: "three").hosts.isEmpty)
        #expect(try await store.claimDue(now: t0, limit: 0, leaseSeconds: 600, owner: "four").hosts.isEmpty)
    }

    static func leasesExpire(_ fixture: ContractStore) async throws {
        let store = fixture.store
        try await register(store, [("example.com", 0), ("example.net", 0)])
        let first = try await store.claimDue(now: t0, limit: 10, leaseSeconds: 600, owner: "crashed")
        #expect(first.hosts.count == 2)
        let during = try await store.claimDue(now: t0.addingTimeInterval(599), limit: 10, leaseSeconds: 600, owner: "second")
        #expect(during.hosts.isEmpty)
        #expect(during.leasedElsewhere == 2)
        #expect(during.otherOwners == ["crashed"])
        let after = try await store.claimDue(now: t0.addingTimeInterval(600), limit: 10, leaseSeconds: 600, owner: "second")
        #expect(after.hosts.map(\.key.host) == ["example.com", "example.net"])
        #expect(after.hosts.allSatisfy { $0.lease?.owner == "second" })
        let stored = try await store.states(of: [key("example.com")])[key("example.com")]
        #expect(stored?.lease == HostLease(owner: "second", expires: t0.addingTimeInterval(1200)))
    }

    static func recordReleases(_ fixture: ContractStore) async throws {
        let store = fixture.store
        try await register(store, [("example.com", 0), ("example.net", 0)])
        let claim = try await store.claimDue(now: t0, limit: 10, leaseSeconds: 600, owner: "me")
        let update = try update(RefreshPolicyTests.approved(RefreshPolicyTests.good), previous: claim.hosts.first, now: t0)
        #expect(try await store.record(update, owner: "me") == .recorded)
        try await store.release([key("example.net")], owner: "me")
        let states = try await store.states(of: [key("example.com"), key("example.net")])
        #expect(states[key("example.com")]?.lease == nil)
        #expect(states[key("example.net")]?.lease == nil)
        // Releasing someone else's lease does nothing.
        let other = try await store.claimDue(now: t0, limit: 10, leaseSeconds: 600, owner: "other")
        #expect(other.hosts.map(\.key.host) == ["example.net"], "example.com is approved for a day")
        try await store.release([key("example.net")], owner: "me")
        #expect(try await store.states(of: [key("example.net")])[key("example.net")]?.lease?.owner == "other")
    }

    static func lostLease(_ fixture: ContractStore) async throws {
        let store = fixture.store
        try await register(store, [("example.com", 0)])
        let slow = try await store.claimDue(now: t0, limit: 10, leaseSeconds: 60, owner: "slow")
        let taker = try await fixture.reopen()
        let taken = try await taker.claimDue(now: t0.addingTimeInterval(61), limit: 10, leaseSeconds: 60, owner: "fast")
        #expect(taken.hosts.map(\.key.host) == ["example.com"])

        let late = try update(RefreshPolicyTests.failure("timeout"), previous: slow.hosts.first, now: t0.addingTimeInterval(62))
        #expect(try await store.record(late, owner: "slow") == .leaseLost(owner: "fast"), "the new owner still holds it")

        let newer = try update(RefreshPolicyTests.approved(RefreshPolicyTests.good), previous: taken.hosts.first, now: t0.addingTimeInterval(63))
        #expect(try await taker.record(newer, owner: "fast") == .recorded)
        #expect(try await store.record(late, owner: "slow") == .leaseLost(owner: nil), "the new owner recorded and released it")

        let state = try #require(try await store.states(of: [key("example.com")])[key("example.com")])
        #expect(state.lastResult?.code == "ok")
        #expect(state.lease == nil)
        #expect(try await store.history(of: key("example.com"), limit: 10).map(\.kind) == [.approved])
        // A direct run (no owner) records only over the state it was judged against, and only a
        // download newer than the stored one; an unknown host is reported as missing.
        #expect(try await store.record(late, owner: nil) == .leaseLost(owner: nil), "judged against the state before fast's")
        let stale = try update(RefreshPolicyTests.failure("timeout"), previous: state, now: t0.addingTimeInterval(62))
        #expect(try await store.record(stale, owner: nil) == .leaseLost(owner: nil), "older than the stored download")
        let run = try update(RefreshPolicyTests.failure("timeout"), previous: state, now: t0.addingTimeInterval(64))
        #expect(try await store.record(run, owner: nil) == .recorded)
        #expect(try await store.record(run, owner: nil) == .recorded, "the same download again: already stored")
        #expect(try await store.history(of: key("example.com"), limit: 10).map(\.kind) == [.approved, .broke])
        #expect(try await store.record(try update(RefreshPolicyTests.failure("timeout"), host: "gone.example", previous: nil, now: t0),
                                       owner: nil) == .hostMissing)
    }

    /// A refresh leased a host, and a recording run (no lease) fetched and recorded it meanwhile:
    /// the refresh's result was judged against the state before, so it is not recorded (its
    /// `approved (first approved file)` came a second time, with its notification), and the
    /// run's result stands.
    static func recordedMeanwhile(_ fixture: ContractStore) async throws {
        let store = fixture.store
        try await register(store, [("example.com", 0)])
        let claim = try await store.claimDue(now: t0, limit: 10, leaseSeconds: 600, owner: "refresh")
        let run = try update(RefreshPolicyTests.approved(RefreshPolicyTests.good), previous: nil, now: t0.addingTimeInterval(1.5))
        #expect(try await store.record(run, owner: nil) == .recorded)
        let late = try update(RefreshPolicyTests.approved(RefreshPolicyTests.good), previous: claim.hosts.first, now: t0.addingTimeInterval(2.25))
        #expect(!late.events.isEmpty, "judged against the state before the run")
        #expect(try await store.record(late, owner: "refresh") == .leaseLost(owner: nil))
        #expect(try await store.history(of: key("example.com"), limit: 10).map(\.kind) == [.approved])
        // Judged against the stored state, the same lease records.
        let fresh = try #require(try await store.states(of: [key("example.com")])[key("example.com")])
        let again = try await store.claimDue(now: t0.addingTimeInterval(3 * 86400), limit: 10, leaseSeconds: 600, owner: "refresh")
        #expect(again.hosts.map(\.key.host) == ["example.com"])
        let current = try update(RefreshPolicyTests.failure("timeout"), previous: again.hosts.first ?? fresh, now: t0.addingTimeInterval(3 * 86400 + 1))
        #expect(try await store.record(current, owner: "refresh") == .recorded)
    }

    /// A batch recorded again after its first answer was lost (an outage in the middle of the
    /// batch, a COMMIT whose reply never came): what landed is reported as recorded, once, and
    /// a newer result of another process is still told apart by its fetch time.
    static func recordedAgain(_ fixture: ContractStore) async throws {
        let store = fixture.store
        try await register(store, [("example.com", 0), ("example.net", 0)])
        let claim = try await store.claimDue(now: t0, limit: 10, leaseSeconds: 60, owner: "me")
        let previous = Dictionary(uniqueKeysWithValues: claim.hosts.map { ($0.key.host, $0) })
        // Fetched at a time with microseconds, as real ones are.
        let updates = try ["example.com", "example.net"].map { host in
            try update(RefreshPolicyTests.approved(RefreshPolicyTests.good), host: host, previous: previous[host],
                       now: t0.addingTimeInterval(1.234567))
        }
        #expect(updates.allSatisfy { !$0.events.isEmpty && $0.approvedBody != nil }, "each update writes history and a version")
        #expect(try await store.recordAll([updates[0]], owner: "me") == [.recorded])
        // The whole batch again: the first host's record landed, the second's did not.
        #expect(try await store.recordAll(updates, owner: "me") == [.recorded, .recorded])
        #expect(try await store.recordAll(updates, owner: "me") == [.recorded, .recorded])
        for host in ["example.com", "example.net"] {
            #expect(try await store.history(of: key(host), limit: 10).map(\.kind) == [.approved], "\(host): one event")
            #expect(try await store.versions(of: key(host), bodies: false).count == 1, "\(host): one version")
            let state = try #require(try await store.states(of: [key(host)])[key(host)])
            let fetched = try #require(state.lastResult?.fetchedAt)
            #expect(state.lease == nil && abs(fetched.timeIntervalSince(updates[0].result.fetchedAt)) < 0.001, "\(host): \(fetched)")
        }

        // Another process fetched example.com later and recorded that: the old download is lost.
        try await fixture.setNextCheck(t0, "example.com")
        let taker = try await fixture.reopen()
        let taken = try await taker.claimDue(now: t0.addingTimeInterval(10), limit: 10, leaseSeconds: 60, owner: "other")
        #expect(taken.hosts.map(\.key.host) == ["example.com"])
        let newer = try update(RefreshPolicyTests.failure("timeout"), previous: taken.hosts.first, now: t0.addingTimeInterval(11))
        #expect(try await taker.record(newer, owner: "other") == .recorded)
        #expect(try await store.recordAll([updates[0]], owner: "me") == [.leaseLost(owner: nil)], "the newer result stands")
        #expect(try await store.states(of: [key("example.com")])[key("example.com")]?.lastResult?.code == "timeout")
    }

    static func forget(_ fixture: ContractStore) async throws {
        let store = fixture.store
        try await register(store, [("example.com", 0), ("example.net", 0)])
        let update = try update(RefreshPolicyTests.approved(RefreshPolicyTests.good), previous: nil, now: t0)
        try await store.record(update, owner: nil)
        #expect(try await store.forget(host: "example.com") == 1)
        #expect(try await store.forget(host: "example.com") == 0)
        #expect(try await store.allHosts().map(\.key.host) == ["example.net"])
        #expect(try await store.history(of: key("example.com"), limit: 10).isEmpty)
        #expect(try await store.needs(for: [key("example.com")])[key("example.com")] == [])
        #expect(try await store.needs(for: [key("example.net")])[key("example.net")]?.count == 1)
    }

    static func registerAgain(_ fixture: ContractStore) async throws {
        let store = fixture.store
        #expect(try await store.nextDue() == nil)
        try await register(store, [("example.com", 0)])
        #expect(try await store.nextDue() == t0)
        let update = try update(RefreshPolicyTests.approved(RefreshPolicyTests.good), previous: nil, now: t0)
        try await store.record(update, owner: nil)
        let states = try await store.register(
            hosts: [HostRegistration(key: key("example.com"), tier: 2), HostRegistration(key: key("new.example"), tier: 2)],
            needs: [EntryNeed(entry: "applinks:*.example.com", service: .applinks, host: "example.com", appID: appID),
                    EntryNeed(entry: "applinks:*.example.com", service: .applinks, host: "example.com", appID: appID)],
            now: t0.addingTimeInterval(10))
        #expect(states[key("example.com")]?.approvedBody == Array(RefreshPolicyTests.good.utf8))
        #expect(states[key("example.com")]?.tier == 0)
        #expect(states[key("new.example")]?.nextCheck == t0.addingTimeInterval(10))
        #expect(try await store.allHosts().map(\.key.host) == ["example.com", "new.example"])
        #expect(try await store.needs(for: [key("example.com")])[key("example.com")]?.map(\.entry) == ["applinks:example.com", "applinks:*.example.com"])
        #expect(try await store.nextDue() == t0.addingTimeInterval(10))

        // A run that records in batches registers without reading the states back; the hosts
        // and needs are stored all the same.
        let none = try await store.register(
            hosts: [HostRegistration(key: key("third.example"), tier: 1)],
            needs: [EntryNeed(entry: "applinks:third.example", service: .applinks, host: "third.example", appID: appID)],
            now: t0.addingTimeInterval(20), returningStates: false)
        #expect(none.isEmpty)
        #expect(try await store.states(of: [key("third.example")])[key("third.example")]?.tier == 1)
        #expect(try await store.needs(for: [key("third.example")])[key("third.example")]?.map(\.entry) == ["applinks:third.example"])
    }

    static func oddValues(_ fixture: ContractStore) async throws {
        let store = fixture.store
        let host = "xn--fiqs8s.example"
        try await register(store, [(host, 1)])
        let body: [UInt8] = Array(0...255) + Array(RefreshPolicyTests.good.utf8)
        let result = StoredResult(code: "ok", reason: "quote ' \" backslash \\ {braces}, comma", httpStatus: 200,
                                  url: "https://\(host)/.well-known/apple-app-site-association",
                                  headers: [HTTPHeader(name: "ETag", value: "W/\"a,b\"")], body: body, fetchedAt: t0.addingTimeInterval(0.25))
        let update = HostUpdate(key: key(host), result: result, approvedBody: body, validators: CacheValidators(etag: "W/\"a,b\""),
                                consecutiveFailures: 0, nextCheck: t0.addingTimeInterval(86400.5), outcome: .approved,
                                events: [HistoryEvent(key: key(host), at: t0, kind: .approved, detail: HistoryDetail(reason: "ünïcödé ✔"))])
        #expect(try await store.record(update, owner: nil) == .recorded)
        let state = try #require(try await store.states(of: [key(host)])[key(host)])
        #expect(state.approvedBody == body)
        #expect(state.lastResult?.body == body)
        #expect(state.lastResult?.reason == result.reason)
        #expect(state.lastResult?.headers == result.headers)
        #expect(state.lastResult?.fetchedAt == t0.addingTimeInterval(0.25))
        #expect(state.nextCheck == t0.addingTimeInterval(86400.5))
        #expect(state.validators.etag == "W/\"a,b\"")
        #expect(try await store.history(of: key(host), limit: 5).first?.detail.reason == "ünïcödé ✔")
    }
}

extension StoreContract {
    /// A store holding one host on both routes (a `?mode=developer` entry next to a plain one,
    /// recorded by `fetch --route cdn`) and a CDN-only host: a ``RefreshJob`` over a scripted
    /// transport fetches every row over its own route, asks each conditionally with that row's
    /// own `ETag`, and records each result on its row.
    static func refreshPerRoute(_ fixture: ContractStore) async throws {
        let store = fixture.store
        let base = "https://cdn.test/a/v1/"
        let rows = [HostKey(host: "both.example", route: .cdn), HostKey(host: "both.example", route: .origin),
                    HostKey(host: "cdn.example", route: .cdn)]
        _ = try await store.register(
            hosts: rows.map { HostRegistration(key: $0, tier: 0) },
            needs: rows.map { EntryNeed(entry: "applinks:\($0.host)\($0.route == .origin ? "?mode=developer" : "")", service: .applinks,
                                        host: $0.host, route: $0.route, appID: appID) },
            now: t0)
        let transport = ScriptedTransport()
        let urls = [rows[0]: base + "both.example", rows[1]: "https://both.example/.well-known/apple-app-site-association",
                    rows[2]: base + "cdn.example"]
        for (key, url) in urls {
            let etag = "\"\(key.host)-\(key.route.rawValue)\""
            transport.on(url, when: { $0.header("If-None-Match") == etag }, .status(304, headers: [("ETag", etag)]))
            transport.on(url, .json(RefreshPolicyTests.good, headers: [("ETag", etag)]))
        }
        var options = FetchOptions()
        options.retryDelays = []
        let job = RefreshJob(store: store, fetcher: AASAFetcher(transport: transport, options: options),
                             cdn: CDNFetcher(transport: transport, options: options, base: base),
                             prioritizer: DomainPrioritizer(region: nil), owner: "job", batchSize: 10, leaseSeconds: 600)

        let first = try await job.run(now: { t0 })
        #expect(Set(first.hosts.map(\.key)) == Set(rows))
        #expect(first.hosts.allSatisfy { $0.outcome == .approved && $0.httpStatus == 200 }, "\(first.hosts)")
        #expect(transport.requests.count == 3, "one request per row, none elsewhere: \(transport.requests.map(\.url))")
        #expect(Set(transport.requests.map(\.url)) == Set(urls.values))
        #expect(transport.requests(to: base + "both.example").allSatisfy { $0.httpVersion == .http2 })
        #expect(transport.requests(to: urls[rows[1]]!).allSatisfy { $0.httpVersion == .http1_1 })
        var states = try await store.states(of: rows)
        for key in rows {
            #expect(states[key]?.validators.etag == "\"\(key.host)-\(key.route.rawValue)\"", "\(key)")
            #expect(states[key]?.lastResult?.fetchedAt == t0, "\(key)")
            #expect(states[key]?.lease == nil, "\(key)")
        }

        let later = t0.addingTimeInterval(2 * 86400)
        let second = try await job.run(now: { later })
        #expect(Set(second.hosts.map(\.key)) == Set(rows))
        #expect(second.hosts.allSatisfy { $0.outcome == .notModified && $0.httpStatus == 304 }, "\(second.hosts)")
        #expect(second.leasedElsewhere == 0)
        for (key, url) in urls {
            #expect(transport.requests(to: url).last?.header("If-None-Match") == "\"\(key.host)-\(key.route.rawValue)\"", "\(key)")
        }
        states = try await store.states(of: rows)
        #expect(rows.allSatisfy { states[$0]?.lastResult?.fetchedAt == later && states[$0]?.lastResult?.httpStatus == 304 && states[$0]?.lease == nil })
        #expect(try await store.claimDue(now: later, limit: 10, leaseSeconds: 600, owner: "next").hosts.isEmpty)
    }
}

/// The contract against SQLite files and against a real PostgreSQL server on 127.0.0.1.
@Suite(.timeLimit(.minutes(3)))
struct StoreContractTests {
    @Test(arguments: StoreContract.names)
    func sqlite(_ name: String) async throws {
        let temporary = StoreTests.TemporaryStore()
        let fixture = try ContractStore.sqlite(temporary)
        let check = try #require(StoreContract.checks.first { $0.name == name })
        try await check.run(fixture)
        withExtendedLifetime(temporary) {}
    }

    /// Every check on a fresh database of one server (started and stopped here).
    @Test func postgres() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let admin = try await PostgresConnection.connect(server.url)
        for (index, check) in StoreContract.checks.enumerated() {
            let url = try await Self.freshDatabase(admin, server: server, name: "contract_\(index)")
            let (fixture, store) = try await ContractStore.postgres(url)
            print("postgres store contract: \(check.name)")
            try await check.run(fixture)
            await store.close()
        }
        await admin.close()
    }

    static func freshDatabase(_ admin: PostgresConnection, server: PostgresServer, name: String) async throws -> String {
        try await admin.execute("CREATE DATABASE \(name)")  // a fixed identifier made here, not input
        return server.url.replacingOccurrences(of: "/postgres?", with: "/\(name)?")
    }
}

/// What is particular to PostgreSQL: parallel claimers, migrations raced by many connections,
/// and connection failures with stable codes. Each test starts and stops its own server.
@Suite(.timeLimit(.minutes(3)))
struct PostgresStoreTests {
    /// Claims until nothing is left, on `handles` stores at once; returns every claim's hosts.
    static func drain(_ handles: [any AssociationStore], limit: Int) async throws -> [[String]] {
        try await withThrowingTaskGroup(of: [[String]].self) { group in
            for (index, handle) in handles.enumerated() {
                group.addTask {
                    var claims: [[String]] = []
                    while true {
                        let claim = try await handle.claimDue(now: StoreContract.t0, limit: limit, leaseSeconds: 600, owner: "claimer-\(index)")
                        if claim.hosts.isEmpty { return claims }
                        claims.append(claim.hosts.map(\.key.host))
                    }
                }
            }
            var all: [[String]] = []
            for try await claims in group { all += claims }
            return all
        }
    }

    /// A route the store does not know is store-corrupt naming the column, as on SQLite (it was
    /// read as origin, and lost to `show HOST` and `export`).
    @Test func anUnknownRouteIsCorrupt() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let store = try await PostgresAssociationStore.connect(url: server.url)
        try await StoreContract.register(store, [("a.route.example", 0), ("b.route.example", 0)])
        try await store.executeForTesting("UPDATE hosts SET route = 'weird' WHERE host = 'b.route.example'")
        do {
            _ = try await store.hosts(after: 0, limit: 10)
            Issue.record("a page holding the bad row was read without an error")
        } catch let error as StoreError {
            #expect(error.code == "store-corrupt" && error.message.contains("the column route"), "\(error)")
        }
        #expect(try await store.states(of: [HostKey(host: "a.route.example")]).count == 1, "the other rows still read")
    }

    @Test func parallelClaimersNeverGetTheSameHost() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let first = try await PostgresAssociationStore.connect(url: server.url)
        let hosts = (0..<400).map { ("h\($0).parallel.example", $0 % 3) }
        try await StoreContract.register(first, hosts)
        var handles: [any AssociationStore] = [first]
        for _ in 1..<6 { handles.append(try await PostgresAssociationStore.connect(url: server.url)) }
        let claims = try await Self.drain(handles, limit: 7)
        let claimed = claims.flatMap { $0 }
        #expect(claimed.count == 400, "every host claimed once")
        #expect(Set(claimed).count == claimed.count, "no host claimed twice")
        #expect(claims.allSatisfy { $0.count <= 7 })
        let owners = Set(try await first.allHosts().compactMap { $0.lease?.owner })
        print("parallel claimers: \(claims.count) claims by \(owners.count) of 6 connections")
        for handle in handles { await (handle as? PostgresAssociationStore)?.close() }
    }

    @Test func sqliteClaimersInOneFileNeverGetTheSameHost() async throws {
        let temporary = StoreTests.TemporaryStore()
        let first = try temporary.open()
        try await StoreContract.register(first, (0..<200).map { ("h\($0).parallel.example", 0) })
        let handles: [any AssociationStore] = [first] + (try (1..<4).map { _ in try temporary.open() })
        let claimed = try await Self.drain(handles, limit: 7).flatMap { $0 }
        #expect(claimed.count == 200 && Set(claimed).count == 200)
    }

    @Test func migrationsRaceSafelyAndNewerSchemasAreRefused() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let url = server.url
        // Eight processes' first connections at once: the advisory lock lets one create the schema.
        let stores = try await withThrowingTaskGroup(of: PostgresAssociationStore.self) { group in
            for _ in 0..<8 { group.addTask { try await PostgresAssociationStore.connect(url: url) } }
            var stores: [PostgresAssociationStore] = []
            for try await store in group { stores.append(store) }
            return stores
        }
        #expect(try await stores[0].appliedMigrations() == ["v1", "v2-retention", "v3-notify", "v4-claim-indexes"])
        try await StoreContract.register(stores[1], [("example.com", 0)])
        #expect(try await stores[2].allHosts().map(\.key.host) == ["example.com"])
        try await stores[0].executeForTesting("INSERT INTO schema_migrations (version) VALUES ('v999-future')")
        do {
            _ = try await PostgresAssociationStore.connect(url: url)
            Issue.record("a newer schema was accepted")
        } catch let error as StoreError {
            #expect(error.code == "store-newer-schema", "\(error)")
        }
        for store in stores { await store.close() }
    }

    static func code(_ url: String) async -> String? {
        do {
            _ = try await PostgresAssociationStore.connect(url: url)
            return nil
        } catch let error as StoreError {
            return error.code
        } catch {
            return "\(error)"
        }
    }

    /// libpq quotes the URL, or the piece it could not read, in its message: the password never
    /// reaches ours (`invalid percent-encoded token: "s3%"` showed it).
    @Test func aURLsPasswordNeverReachesAMessage() async {
        for url in ["postgres://u:s3cret@[bad/db", "postgres://u:s3cr%@h/db", "postgres://u@h/db?password=s3cr%zz"] {
            do {
                _ = try await PostgresAssociationStore.connect(url: url)
                Issue.record("\(url) connected")
            } catch let error as StoreError {
                #expect(error.code == "store-bad-url", "\(error)")
                #expect(!error.message.contains("s3cr"), "\(error.message)")
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    @Test func connectionFailuresHaveStableCodes() async throws {
        let server = try await PostgresServer.start(password: "right-secret")
        defer { server.stop() }
        #expect(await Self.code(server.url) == nil)
        let port = server.port
        #expect(await Self.code("mysql://root@127.0.0.1/db") == "store-bad-url")
        #expect(await Self.code("postgres://postgres@127.0.0.1:notaport/postgres") == "store-bad-url")
        #expect(await Self.code("postgres://postgres@127.0.0.1:\(try Loopback.freePort())/postgres?connect_timeout=2") == "store-unreachable")
        #expect(await Self.code("postgres://postgres:wrong@127.0.0.1:\(port)/postgres?connect_timeout=5") == "store-auth-failed")
        #expect(await Self.code("postgres://postgres:right-secret@127.0.0.1:\(port)/nosuchdb?connect_timeout=5") == "store-missing")
        do {
            _ = try await PostgresAssociationStore.connect(url: "postgres://postgres:wrong@127.0.0.1:\(port)/postgres")
        } catch let error as StoreError {
            #expect(!error.message.contains("wrong"), "the password is not repeated: \(error.message)")
            #expect(error.message.contains("postgres://postgres:***@127.0.0.1"), "\(error.message)")
        }
        #expect(PostgresAssociationStore.redacted("postgresql://u:p%40ss@h:5/db?sslmode=require&password=x") == "postgresql://u:***@h:5/db?sslmode=require&password=***")
        #expect(PostgresAssociationStore.redacted("postgres://u@h/db") == "postgres://u@h/db")

        // A store whose server goes away answers store-unreachable, not a crash or a hang.
        let store = try await PostgresAssociationStore.connect(url: server.url)
        server.stop()
        do {
            _ = try await store.allHosts()
            Issue.record("a stopped server answered")
        } catch let error as StoreError {
            #expect(error.code == "store-unreachable", "\(error)")
        }
    }
}
