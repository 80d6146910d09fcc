@testable import AASAFetchCore
import AASAFetchTestSupport
import CurlTransport
import Foundation
import PostgresClient
import Testing

/// `refresh --notify`: the events built from recorded changes, their Slack line, the delivery
/// policy (attempts, Retry-After, what is retried), and the store's queue on SQLite and PostgreSQL
/// (order, one deliverer at a time, removal only on acknowledgement, lapsed leases, the bound).
@Suite(.timeLimit(.minutes(3)))
struct NotificationTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    static let appID = "ABCDE12345.com.example.app"
    static let needs = [EntryNeed(entry: "applinks:example.com", service: .applinks, host: "example.com", appID: appID)]

    /// The notifications the recorder queues for `result` after `previous`.
    static func notifications(_ result: HostFetchResult, previous: HostState?, now: Date) throws -> (HostUpdate, [NotificationEvent]) {
        let update = try #require(RefreshPolicy().update(for: result, previous: previous, needs: needs, now: now))
        return (update, NotificationEvent.events(for: update.events, result: result, previousCode: previous?.lastResult?.code, needs: needs))
    }

    static func state(after update: HostUpdate, previous: HostState? = nil) -> HostState {
        var state = previous ?? HostState(key: update.key, tier: 0, nextCheck: update.nextCheck, addedAt: t0)
        state.lastResult = update.result
        if let body = update.approvedBody {
            state.approvedBody = body
            state.approvedSize = body.count
        }
        state.consecutiveFailures = update.consecutiveFailures
        return state
    }

    // MARK: - Events

    @Test func eventsSayBeforeAfterCodeFixAndAppsForEveryKind() throws {
        let good = RefreshPolicyTests.approved(RefreshPolicyTests.good)
        let (first, approved) = try Self.notifications(good, previous: nil, now: Self.t0)
        #expect(approved.map(\.kind) == [.approved])
        #expect(approved[0].before == nil && approved[0].after == "ok" && approved[0].code == "ok" && approved[0].appIDs == [Self.appID])
        #expect(approved[0].fix == nil && !approved[0].breaking)

        var failure = RefreshPolicyTests.failure("http-client-error", status: 404)
        failure.findings = [.error("http-client-error", "HTTP 404", fix: "serve the file with status 200")]
        let (_, broke) = try Self.notifications(failure, previous: Self.state(after: first), now: Self.t0.addingTimeInterval(60))
        #expect(broke.map(\.kind) == [.broke])
        #expect(broke[0].before == "ok" && broke[0].after == "http-client-error" && broke[0].code == "http-client-error")
        #expect(broke[0].fix == "serve the file with status 200" && broke[0].httpStatus == 404 && broke[0].breaking)

        let other = #"{"applinks":{"details":[{"appIDs":["ZYXWV98765.com.example.other"],"components":[{"/":"/*"}]}]}}"#
        let (_, lost) = try Self.notifications(RefreshPolicyTests.approved(other), previous: Self.state(after: first), now: Self.t0.addingTimeInterval(120))
        #expect(lost.map(\.kind) == [.changed, .associationLost])
        #expect(lost[0].changes?.isEmpty == false && lost[0].reason.hasPrefix("the file changed: "))
        #expect(lost[1].before == "ok" && lost[1].after == "app-not-listed" && lost[1].code == "app-not-listed")
        #expect(lost[1].appIDs == [Self.appID] && lost[1].entry == "applinks:example.com" && lost[1].breaking)
        #expect(lost[1].fix == "add \"\(Self.appID)\" to the appIDs of a detail under applinks.details")
        #expect(Set((approved + broke + lost).map(\.id)).count == 4, "every event has its own id")
    }

    @Test func theWebhookDocumentHasEveryKeyAndRoundTripsThroughTheQueue() throws {
        let event = NotificationEvent(kind: .failed, host: "example.com", route: .cdn, time: Self.t0, before: nil,
                                      after: "timeout", code: "timeout", reason: "no answer in 10 s")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(event.json)) as? [String: Any])
        #expect(Set(object.keys) == ["schemaVersion", "id", "kind", "breaking", "host", "route", "time", "before", "after", "code",
                                     "reason", "fix", "httpStatus", "appIDs", "entry", "changes"])
        #expect(object["time"] as? String == "2027-01-15T08:00:00Z")
        #expect(object["before"] is NSNull && object["fix"] is NSNull && object["route"] as? String == "cdn")
        let problems = try SchemaValidator.problems(in: [.init(schema: "notification", text: String(decoding: event.json, as: UTF8.self), origin: "event")])
        #expect(problems.isEmpty, "\(problems)")
    }

    @Test func slackLinesEscapeMarkupAndStayOnOneLine() throws {
        #expect(NotificationEvent.slackEscaped("a & <b> > c\nd\re\u{2028}f") == "a &amp; &lt;b&gt; &gt; c d e f")
        let event = NotificationEvent(kind: .broke, host: "x.example", route: .origin, time: Self.t0, before: "ok",
                                      after: "http-client-error", code: "http-client-error",
                                      reason: "HTTP 404 <!channel>\nsecond line", fix: "serve <it> & more")
        #expect(event.slackText == ":x: *x.example* broke: http-client-error (was ok) — HTTP 404 &lt;!channel&gt; second line — fix: serve &lt;it&gt; &amp; more")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(NotificationEvent.slackJSON([event]))) as? [String: Any])
        #expect(Array(object.keys) == ["text"])
        #expect(object["text"] as? String == event.slackText)
    }

    // MARK: - Delivery policy

    static let hook = "https://hooks.example/aasa"

    static func notifier(_ transport: ScriptedTransport, format: NotifyFormat = .json) -> Notifier {
        var notifier = Notifier(transport: transport, url: hook, format: format)
        notifier.retryDelays = [0.01]
        notifier.retryAfterCap = 0.05
        return notifier
    }

    static let event = NotificationEvent(kind: .broke, host: "example.com", route: .origin, time: t0, before: "ok",
                                         after: "timeout", code: "timeout", reason: "no answer")

    /// A receiver that answers nothing until its --max-time.
    struct SilentReceiver: HTTPTransferring {
        func perform(_ request: TransferRequest) async throws(TransferFailure) -> TransferResponse {
            do { try await Task.sleep(for: .seconds(120)) } catch { throw TransferFailure(kind: .cancelled, message: "cancelled") }
            throw TransferFailure(kind: .timeout, message: "no answer in 120 s")
        }
    }

    /// A stop (SIGTERM, SIGINT) during a webhook's POST ends the attempt: the run stopped only
    /// after the attempt's whole --max-time, and then said nothing.
    @Test(.timeLimit(.minutes(1))) func aStopEndsAPostInFlight() async {
        let stop = StopSignal()
        let stopper = Task {
            try? await Task.sleep(for: .milliseconds(200))
            stop.stop()
        }
        defer { stopper.cancel() }
        let notifier = Notifier(transport: SilentReceiver(), url: Self.hook)
        guard case .stopped = await notifier.send(Self.event, stop: stop) else {
            Issue.record("a stop during the POST did not stop it")
            return
        }
    }

    @Test func aFailingReceiverIsTriedAgainAndARejectionIsNot() async throws {
        let retried = ScriptedTransport()
        retried.on(Self.hook, .status(500), .status(503, headers: [("Retry-After", "120")]), .status(204))
        guard case .delivered = await Self.notifier(retried).send(Self.event, stop: StopSignal()) else {
            Issue.record("500, 503 then 204 is delivered on the third attempt")
            return
        }
        #expect(retried.requests.count == 3)
        let request = try #require(retried.requests.first)
        #expect(request.body?.contentType == "application/json" && request.body?.bytes == Self.event.json)
        #expect(request.allowPlainHTTP && !request.allowPrivateAddresses)

        let down = ScriptedTransport(fallback: .fail(.connectFailure, "refused"))
        guard case .failed(let failure) = await Self.notifier(down).send(Self.event, stop: StopSignal()) else {
            Issue.record("a receiver that never answers fails")
            return
        }
        #expect(failure.code == "notify-failed" && failure.attempts == 3 && down.requests.count == 3)

        for (status, tries) in [(400, 1), (404, 1), (301, 1), (408, 3), (429, 3)] {
            let transport = ScriptedTransport()
            transport.on(Self.hook, .status(status))
            guard case .failed(let failure) = await Self.notifier(transport).send(Self.event, stop: StopSignal()) else {
                Issue.record("HTTP \(status) is not a delivery")
                continue
            }
            #expect(transport.requests.count == tries, "HTTP \(status)")
            #expect(failure.code == (tries == 1 ? "notify-rejected" : "notify-failed"), "HTTP \(status)")
        }

        let slack = ScriptedTransport()
        slack.on(Self.hook, .status(200))
        _ = await Self.notifier(slack, format: .slack).send(Self.event, stop: StopSignal())
        #expect(slack.requests.first?.body?.bytes == NotificationEvent.slackJSON([Self.event]))
    }

    @Test func retryAfterTakesSecondsOrADate() {
        #expect(Notifier.retryAfter([("Retry-After", " 7 ")], now: Self.t0) == 7)
        #expect(Notifier.retryAfter([("retry-after", "Fri, 15 Jan 2027 08:00:30 GMT")], now: Self.t0) == 30)
        #expect(Notifier.retryAfter([("Retry-After", "soon")], now: Self.t0) == nil)
        #expect(Notifier.retryAfter([], now: Self.t0) == nil)
    }

    @Test func webhookURLsAreCheckedBeforeAnythingRuns() {
        #expect(Notifier.problem(with: "https://hooks.slack.com/services/T/B/x") == nil)
        #expect(Notifier.problem(with: "http://127.0.0.1:9000/hook") == nil)
        #expect(Notifier.problem(with: "ftp://example.com/") != nil)
        #expect(Notifier.problem(with: "https://user:pw@example.com/") != nil)
        #expect(Notifier.problem(with: "https:///path") != nil)
        #expect(Notifier.problem(with: "https://example.com/a b") != nil)
        #expect(Notifier.problem(with: "https://example.com/#x") != nil)
        // What libcurl refuses at every delivery is refused here (the queue grew behind it).
        for url in ["https://localhost:99999/x", "https://localhost:0/x", "https://bücher.example/x"] {
            #expect(Notifier.problem(with: url) != nil, "\(url)")
        }
        #expect(Notifier.problem(with: "https://xn--bcher-kva.example:65535/x") == nil)
    }

    // MARK: - The queue, on both stores

    /// Records one download of `host` with these notifications (as the recorder queues them).
    static func record(_ store: any AssociationStore, host: String, _ events: [NotificationEvent], at time: Date) async throws {
        // Judged against the stored state, and later than its download, as a run records.
        let previous = try await store.states(of: [HostKey(host: host)])[HostKey(host: host)]
        let stored = previous?.lastResult?.fetchedAt
        let at = stored.map { max(time, $0.addingTimeInterval(1)) } ?? time
        var update = try #require(RefreshPolicy().update(for: RefreshPolicyTests.failure("timeout"), previous: previous, needs: [], now: at))
        update.key = HostKey(host: host)
        update.events = []
        update.notifications = events
        #expect(try await store.record(update, owner: nil) == .recorded)
    }

    static func events(_ names: [String]) -> [NotificationEvent] {
        names.map { NotificationEvent(kind: .failed, host: $0, route: .origin, time: t0, before: nil, after: "timeout", code: "timeout", reason: $0) }
    }

    static func queueContract(_ store: any AssociationStore, capped: any AssociationStore) async throws {
        _ = try await store.register(hosts: [HostRegistration(key: HostKey(host: "a.example"), tier: 0),
                                             HostRegistration(key: HostKey(host: "b.example"), tier: 0)], needs: [], now: t0)
        try await record(store, host: "a.example", events(["e1", "e2"]), at: t0)
        try await record(store, host: "b.example", events(["e3"]), at: t0)
        let queued = try await store.queuedNotifications()
        #expect(queued.map(\.event.reason) == ["e1", "e2", "e3"])
        #expect(queued.map(\.id) == queued.map(\.id).sorted())
        #expect(queued.first?.event == events(["e1"]).first.map { var e = $0; e.id = queued[0].event.id; return e })

        // One deliverer at a time: A holds the queue, B gets nothing and is told who holds it.
        let a = try await store.claimNotifications(now: t0, limit: 2, leaseSeconds: 60, owner: "A")
        #expect(a.notifications.map(\.event.reason) == ["e1", "e2"] && a.pending == 3 && a.heldBy == nil)
        let b = try await store.claimNotifications(now: t0, limit: 10, leaseSeconds: 60, owner: "B")
        #expect(b.notifications.isEmpty && b.heldBy == "A" && b.pending == 3)

        // Only the lease holder removes, once.
        #expect(try await store.acknowledgeNotification(id: a.notifications[0].id, owner: "B") == false)
        #expect(try await store.acknowledgeNotification(id: a.notifications[0].id, owner: "A") == true)
        #expect(try await store.acknowledgeNotification(id: a.notifications[0].id, owner: "A") == false)

        // A failure releases the queue and counts the attempt; the order is kept.
        try await store.releaseNotifications(owner: "A", failed: a.notifications[1].id, error: "notify-failed: HTTP 500")
        let next = try await store.claimNotifications(now: t0, limit: 10, leaseSeconds: 60, owner: "B")
        #expect(next.notifications.map(\.event.reason) == ["e2", "e3"] && next.notifications.map(\.attempts) == [1, 0])

        // B dies holding it: once its lease lapses, A takes the queue over.
        let blocked = try await store.claimNotifications(now: t0.addingTimeInterval(59), limit: 10, leaseSeconds: 60, owner: "A")
        #expect(blocked.heldBy == "B")
        let takeover = try await store.claimNotifications(now: t0.addingTimeInterval(61), limit: 10, leaseSeconds: 60, owner: "A")
        #expect(takeover.notifications.map(\.event.reason) == ["e2", "e3"] && takeover.heldBy == nil)
        try await store.releaseNotifications(owner: "A", failed: nil, error: nil)

        // The bound: past the capacity (2 here) the oldest go, and the next claim reports how many once.
        try await record(capped, host: "a.example", events(["e4", "e5", "e6"]), at: t0)
        #expect(try await store.queuedNotifications().map(\.event.reason) == ["e5", "e6"])
        let afterDrop = try await store.claimNotifications(now: t0.addingTimeInterval(200), limit: 10, leaseSeconds: 60, owner: "C")
        #expect(afterDrop.dropped == 3 && afterDrop.notifications.map(\.event.reason) == ["e5", "e6"])
        try await store.releaseNotifications(owner: "C", failed: nil, error: nil)
        #expect(try await store.claimNotifications(now: t0.addingTimeInterval(200), limit: 10, leaseSeconds: 60, owner: "C").dropped == 0)
    }

    @Test func theQueueOnSQLite() async throws {
        let temporary = StoreTests.TemporaryStore()
        let store = try temporary.open()
        var capped = store
        capped.notificationCapacity = 2
        try await Self.queueContract(store, capped: capped)
        #expect(try await store.appliedMigrations().last == "v4-claim-indexes")
        withExtendedLifetime(temporary) {}
    }

    /// A store of the schema before the queue (only `v1`): opening it adds the queue, hosts kept.
    static func upgradesFromV1(_ store: any AssociationStore, rewind: (String) async throws -> Void, reopen: () async throws -> any AssociationStore) async throws {
        _ = try await store.register(hosts: [HostRegistration(key: HostKey(host: "a.example"), tier: 0)], needs: [], now: t0)
        try await rewind("DROP TABLE notifications")
        try await rewind("DROP TABLE notification_drops")
        try await rewind("DELETE FROM \(store is SQLiteAssociationStore ? "grdb_migrations WHERE identifier" : "schema_migrations WHERE version") = 'v3-notify'")
        let upgraded = try await reopen()
        #expect(try await upgraded.allHosts().map(\.key.host) == ["a.example"])
        try await record(upgraded, host: "a.example", events(["after-upgrade"]), at: t0)
        #expect(try await upgraded.queuedNotifications().map(\.event.reason) == ["after-upgrade"])
    }

    @Test func aStoreFromBeforeTheQueueIsUpgraded() async throws {
        let temporary = StoreTests.TemporaryStore()
        let store = try temporary.open()
        try await Self.upgradesFromV1(store, rewind: { try await store.executeForTesting($0) }, reopen: { try temporary.open(create: false) })
        #expect(try await temporary.open(create: false).appliedMigrations().contains("v3-notify"))

        let server = try await PostgresServer.start()
        defer { server.stop() }
        let postgres = try await PostgresAssociationStore.connect(url: server.url)
        try await Self.upgradesFromV1(postgres, rewind: { try await postgres.executeForTesting($0) },
                                      reopen: { try await PostgresAssociationStore.connect(url: server.url) })
        await postgres.close()
    }

    @Test func theQueueOnPostgreSQL() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let store = try await PostgresAssociationStore.connect(url: server.url)
        var capped = store
        capped.notificationCapacity = 2
        try await Self.queueContract(store, capped: capped)
        #expect(try await store.appliedMigrations().contains("v3-notify"))
        await store.close()
    }
}
