import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Glibc
import PostgresClient
import Synchronization
import Testing

/// `refresh --notify URL` end to end with the real binary: sites served by nginx change, and a
/// receiving HTTPS server (our fault server, on 127.0.0.1 with the test CA) records every POST:
/// the events and their JSON, the Slack format, a receiver that fails first, and one that is down
/// for a whole run (the events are kept in the store and delivered by the next run, once), on
/// SQLite and PostgreSQL.
@Suite(.serialized, .timeLimit(.minutes(6)))
struct NotifyCommandTests {
    static let appID = "ABCDE12345.com.example.app"
    static let good = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/*"}]}]}}"#
    static let otherApp = #"{"applinks":{"details":[{"appIDs":["ZYXWV98765.com.example.other"],"components":[{"/":"/*"}]}]}}"#

    /// Hosts `hN.notify.example.com` served by nginx from `root/HOST/`, and a store (a SQLite
    /// folder, or `--store URL` for PostgreSQL).
    struct Sites {
        let nginx: NginxServer
        let ca: TestCA
        let root: URL
        let cache: URL
        let hosts: [String]
        let storeArguments: [String]

        static func start(count: Int, storeArguments: [String] = []) async throws -> Sites {
            let ca = try TestCA.shared()
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-notify-sites-\(UUID().uuidString)")
            let cache = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-notify-cache-\(UUID().uuidString)")
            let hosts = (0..<count).map { "h\($0).notify.example.com" }
            let sites = Sites(nginx: try await NginxServer.start(
                hosts: [NginxVirtualHost(
                    certificate: try ca.leaf(for: ["*.notify.example.com"]), serverNames: ["*.notify.example.com"],
                    documentRoot: root.path + "/$host",
                    directives: ["location ~ apple-app-site-association$ { default_type application/json; }"])],
                http2: false), ca: ca, root: root, cache: cache, hosts: hosts, storeArguments: storeArguments)
            for host in hosts { try sites.serve(NotifyCommandTests.good, for: host) }
            return sites
        }

        func serve(_ body: String?, for host: String) throws {
            let file = root.appendingPathComponent("\(host)/.well-known/apple-app-site-association")
            guard let body else {
                try? FileManager.default.removeItem(at: file)
                return
            }
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(body.utf8).write(to: file)
            // Each file served gets its own modification time, so a file served again has new
            // validators: nginx's ETag and Last-Modified count whole seconds, and a run fast enough
            // to serve it twice in one second got a 304 for the second.
            let second = Self.served.withLock { count -> Int in
                count += 1
                return count
            }
            try FileManager.default.setAttributes([.modificationDate: Self.servedEpoch.addingTimeInterval(TimeInterval(second))],
                                                  ofItemAtPath: file.path)
        }

        /// Files served so far by every `Sites` of the process (their modification times).
        static let served = Mutex(0)
        /// Before the first file served: whole seconds, in the past.
        static let servedEpoch = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 100_000).rounded(.down))

        func stop() {
            nginx.stop()
            try? FileManager.default.removeItem(at: root)
            try? FileManager.default.removeItem(at: cache)
        }

        var network: [String] {
            ["--cacert", ca.caCertPath, "--connect-to", nginx.connectTo, "--allow-private",
             "--retry-delays", "0.05", "--connect-timeout", "2", "--max-time", "5"] + storeArguments
        }

        func run(_ arguments: [String]) throws -> ToolRunner.Result {
            try ToolRunner.run(arguments, cache: cache.path, timeout: .seconds(120))
        }

        func record() throws {
            let domains = hosts.flatMap { ["--domain", "applinks:\($0)"] }
            let result = try run(network + domains + ["--app-id", NotifyCommandTests.appID, "--quiet", "--json"])
            #expect(result.status == 0, "stderr: \(result.stderr)")
        }

        func store() async throws -> any AssociationStore {
            if let index = storeArguments.firstIndex(of: "--store") {
                return try await PostgresAssociationStore.connect(url: storeArguments[index + 1])
            }
            return try SQLiteAssociationStore(path: cache.appendingPathComponent(SQLiteAssociationStore.fileName).path, create: false)
        }

        /// Three sites recorded, then changed (``change()``): the set-up of most tests here. The
        /// sites are stopped when a step fails; else the caller stops them.
        static func recordedThenChanged(storeArguments: [String] = []) async throws -> Sites {
            let sites = try await start(count: 3, storeArguments: storeArguments)
            do {
                try sites.record()
                try sites.change()
                return sites
            } catch {
                sites.stop()
                throw error
            }
        }

        /// Breaks h1 (404) and makes h2 drop the app (changed, association-lost).
        func change() throws {
            try serve(nil, for: "h1.notify.example.com")
            try serve(NotifyCommandTests.otherApp, for: "h2.notify.example.com")
        }
    }

    /// A receiving HTTPS server on 127.0.0.1 that answers every POST with `behavior`.
    static func receiver(_ behavior: FaultBehavior = .respond(status: 200, body: "ok")) async throws -> FaultServer {
        let ca = try TestCA.shared()
        return try await FaultServer.start(script: FaultScript(default: behavior), certificate: try ca.leaf(for: ["localhost"]), lifetime: 300)
    }

    static func notify(_ receiver: FaultServer, _ extra: [String] = []) throws -> [String] {
        ["--notify", "https://localhost:\(receiver.port)/hooks/aasa-secret", "--notify-cacert", try TestCA.shared().caCertPath,
         "--notify-allow-private"] + extra
    }

    static func later(days: Double) -> String { String(Int(Date().timeIntervalSince1970 + days * 86400)) }

    /// The POSTs a receiver got, their bodies parsed.
    static func posts(_ receiver: FaultServer) throws -> [[String: Any]] {
        try receiver.requests().filter { $0.event == "request" }.map { request in
            #expect(request.method == "POST")
            #expect(request.path == "/hooks/aasa-secret")
            #expect(request.headers["content-type"] == "application/json")
            #expect(request.userAgent?.hasPrefix("aasa-fetch/") == true)
            return try #require(try JSONSerialization.jsonObject(with: Data((request.body ?? "").utf8)) as? [String: Any])
        }
    }

    static func summary(_ events: [[String: Any]]) -> [String] {
        events.map { "\($0["host"] as? String ?? "?") \($0["kind"] as? String ?? "?")" }
    }

    static let expectedChanges = ["h1.notify.example.com broke", "h2.notify.example.com changed", "h2.notify.example.com association-lost"]

    // MARK: - Tests

    @Test func eachChangeIsPostedAsOneJSONEventThenAsSlackText() async throws {
        let sites = try await Sites.recordedThenChanged()
        defer { sites.stop() }
        let receiver = try await Self.receiver()
        defer { receiver.stop() }

        let refresh = try sites.run(["refresh", "--now", Self.later(days: 2)] + sites.network + Self.notify(receiver))
        #expect(refresh.status == 1, "a host broke: the exit status is the associations'; stderr: \(refresh.stderr)")
        #expect(!refresh.stderr.contains("notify-"), "stderr: \(refresh.stderr)")
        let events = try Self.posts(receiver)
        #expect(Self.summary(events) == Self.expectedChanges)
        let broke = try #require(events.first)
        #expect(broke["before"] as? String == "ok" && broke["after"] as? String == "http-client-error")
        #expect(broke["code"] as? String == "http-client-error" && broke["httpStatus"] as? Int == 404 && broke["breaking"] as? Bool == true)
        #expect((broke["fix"] as? String)?.isEmpty == false)
        #expect(broke["appIDs"] as? [String] == [Self.appID] && broke["route"] as? String == "origin")
        let lost = events[2]
        #expect(lost["appIDs"] as? [String] == [Self.appID] && lost["entry"] as? String == "applinks:h2.notify.example.com")
        #expect(lost["before"] as? String == "ok" && lost["after"] as? String == "app-not-listed")
        #expect(lost["fix"] as? String == "add \"\(Self.appID)\" to the appIDs of a detail under applinks.details")
        #expect((events[1]["changes"] as? [[String: Any]])?.isEmpty == false)
        #expect(Set(events.compactMap { $0["id"] as? String }).count == 3)
        let bodies = receiver.requests().filter { $0.event == "request" }.compactMap(\.body)
        let problems = try SchemaValidator.problems(in: bodies.enumerated().map { .init(schema: "notification", text: $1, origin: "POST \($0)") })
        #expect(problems.isEmpty, "\(problems)")
        #expect(try await sites.store().queuedNotifications().isEmpty, "delivered notifications leave the queue")

        // Slack: the host recovers; one {"text": …} line, and nothing sent twice.
        try sites.serve(Self.good, for: "h1.notify.example.com")
        let slack = try sites.run(["refresh", "--now", Self.later(days: 4), "--host", "h1.notify.example.com"] + sites.network
                                  + Self.notify(receiver, ["--notify-format", "slack"]))
        #expect(slack.status == 0, "stderr: \(slack.stderr)")
        let all = try Self.posts(receiver)
        #expect(all.count == 4)
        let message = try #require(all.last)
        #expect(Array(message.keys) == ["text"])
        #expect(message["text"] as? String == ":white_check_mark: *h1.notify.example.com* approved (was http-client-error) — HTTP 200, 94 bytes")
    }

    @Test func aReceiverThatFailsFirstGetsTheEventOnTheNextAttempt() async throws {
        let sites = try await Sites.start(count: 2)
        defer { sites.stop() }
        let receiver = try await Self.receiver(.sequence([.respond(status: 500, body: "busy"), .respond(status: 200, body: "ok")]))
        defer { receiver.stop() }
        try sites.record()
        try sites.serve(nil, for: "h1.notify.example.com")

        let refresh = try sites.run(["refresh", "--now", Self.later(days: 2), "--json"] + sites.network + Self.notify(receiver))
        #expect(refresh.status == 1, "stderr: \(refresh.stderr)")
        #expect(!refresh.stderr.contains("notify-"), "delivered on the second attempt; stderr: \(refresh.stderr)")
        let delivery = try #require(try refresh.json()["notifications"] as? [String: Any], "\(refresh.stdout)")
        #expect(delivery["delivered"] as? Int == 1 && delivery["pending"] as? Int == 0 && delivery["failure"] is NSNull, "\(delivery)")
        #expect(try SchemaValidator.problems(in: [.init(schema: "refresh", text: refresh.stdout, origin: "refresh")]).isEmpty)
        let events = try Self.posts(receiver)
        #expect(Self.summary(events) == ["h1.notify.example.com broke", "h1.notify.example.com broke"])
        #expect(events[0]["id"] as? String == events[1]["id"] as? String, "the same event, tried again")
        #expect(try await sites.store().queuedNotifications().isEmpty)
    }

    /// A receiver that answers 2xx with a long body took the event, and the run says so (over
    /// 1 MiB it was `notify-failed`: the event was sent again by every run and held the queue). A
    /// redirect is named without its path, which holds the same secret as the webhook's.
    @Test func theAnswersStatusDecidesAndARedirectKeepsTheSecret() async throws {
        let sites = try await Sites.start(count: 2)
        defer { sites.stop() }
        let long = try await Self.receiver(.respond(status: 200, body: String(repeating: "x", count: 1024), repeat: 2048))
        defer { long.stop() }
        try sites.record()
        try sites.serve(nil, for: "h1.notify.example.com")
        let refresh = try sites.run(["refresh", "--now", Self.later(days: 2), "--json"] + sites.network + Self.notify(long))
        #expect(refresh.status == 1, "stderr: \(refresh.stderr)")
        #expect(!refresh.stderr.contains("notify-"), "\(refresh.stderr)")
        let delivery = try #require(try refresh.json()["notifications"] as? [String: Any], "\(refresh.stdout)")
        #expect(delivery["delivered"] as? Int == 1 && delivery["pending"] as? Int == 0, "\(delivery)")
        #expect(try Self.posts(long).count == 1)

        let moved = try await Self.receiver(.respond(status: 301, headers: [("Location", "https://localhost:1/hooks/aasa-secret")]))
        defer { moved.stop() }
        try sites.serve(nil, for: "h0.notify.example.com")
        let redirected = try sites.run(["refresh", "--now", Self.later(days: 4), "--json"] + sites.network + Self.notify(moved))
        #expect(redirected.stderr.contains("notify-rejected"), "\(redirected.stderr) \(redirected.stdout)")
        #expect(redirected.stderr.contains("redirect to https://localhost:1/…"), "\(redirected.stderr)")
        #expect(!redirected.stderr.contains("aasa-secret") && !redirected.stdout.contains("aasa-secret"), "\(redirected.stderr)")
    }

    @Test func aReceiverDownForAWholeRunGetsTheEventsFromTheNextRunOnceOnSQLite() async throws {
        try await Self.downThenUp(storeArguments: [])
    }

    @Test func aReceiverDownForAWholeRunGetsTheEventsFromTheNextRunOnceOnPostgreSQL() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        try await Self.downThenUp(storeArguments: ["--store", server.url])
    }

    static func downThenUp(storeArguments: [String]) async throws {
        let sites = try await Sites.recordedThenChanged(storeArguments: storeArguments)
        defer { sites.stop() }

        // Nothing listens on this port: every attempt fails; the run's exit status stays the associations'.
        // The JSON report tells how the delivery went (it waits for it).
        let closed = try Loopback.freePort()
        let down = try sites.run(["refresh", "--now", later(days: 2), "--quiet", "--json", "--notify", "http://127.0.0.1:\(closed)/hooks/aasa-secret",
                                  "--notify-allow-private"] + sites.network)
        #expect(down.status == 1, "stderr: \(down.stderr)")
        let failed = try #require(try down.json()["notifications"] as? [String: Any], "\(down.stdout)")
        #expect(failed["delivered"] as? Int == 0 && failed["pending"] as? Int == 3 && failed["dropped"] as? Int == 0, "\(failed)")
        let failure = try #require(failed["failure"] as? [String: Any])
        #expect(failure["code"] as? String == "notify-failed" && failure["attempts"] as? Int == 3, "\(failure)")
        #expect((failure["event"] as? [String: Any])?["host"] as? String == "h1.notify.example.com")
        #expect(!down.stdout.contains("aasa-secret"), "the webhook's URL is not in the report")
        #expect(try SchemaValidator.problems(in: [.init(schema: "refresh", text: down.stdout, origin: "refresh down")]).isEmpty)
        #expect(down.stderr.contains("aasa-fetch: notify-failed: could not deliver the broke notification of h1.notify.example.com to http://127.0.0.1:\(closed)/… (3 attempts)"),
                "stderr: \(down.stderr)")
        #expect(down.stderr.contains("it and 2 later ones are kept in the store"), "stderr: \(down.stderr)")
        #expect(!down.stderr.contains("aasa-secret"), "the webhook's path is not shown")
        let store = try await sites.store()
        let queued = try await store.queuedNotifications()
        #expect(queued.map { "\($0.event.host) \($0.event.kind.rawValue)" } == expectedChanges)
        #expect(queued.map(\.attempts) == [1, 0, 0])

        // The next run has nothing due: it delivers the kept events first, in order, once.
        let receiver = try await Self.receiver()
        defer { receiver.stop() }
        let next = try sites.run(["refresh", "--now", later(days: 2)] + sites.network + notify(receiver))
        #expect(next.status == 0, "stderr: \(next.stderr)")
        #expect(next.stdout.isEmpty && next.stderr.isEmpty, "stdout: \(next.stdout) stderr: \(next.stderr)")
        let events = try posts(receiver)
        #expect(summary(events) == expectedChanges)
        #expect(events.compactMap { $0["id"] as? String } == queued.map(\.event.id))
        #expect(try await store.queuedNotifications().isEmpty)

        let again = try sites.run(["refresh", "--now", later(days: 2), "--json"] + sites.network + notify(receiver))
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(try posts(receiver).count == 3, "nothing is delivered twice once acknowledged")
        let idle = try #require(try again.json()["notifications"] as? [String: Any], "\(again.stdout)")
        #expect(idle["delivered"] as? Int == 0 && idle["pending"] as? Int == 0 && idle["failure"] is NSNull, "\(idle)")
        if let postgres = store as? PostgresAssociationStore { await postgres.close() }
    }

    /// The store fails while the queue is delivered (a trigger refuses to remove a delivered
    /// event): with `--json` the pass's report is still written (its `notifications` null), then
    /// the failure is said on standard error and the run exits 2; the changes stay recorded.
    @Test func aStoreFailureWhileDeliveringStillWritesTheReport() async throws {
        let sites = try await Sites.recordedThenChanged()
        defer { sites.stop() }
        let receiver = try await Self.receiver()
        defer { receiver.stop() }
        let store = try #require(try await sites.store() as? SQLiteAssociationStore)
        try await store.executeForTesting("""
            CREATE TRIGGER keep_notifications BEFORE DELETE ON notifications BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;
            """)

        let refresh = try sites.run(["refresh", "--now", Self.later(days: 2), "--json"] + sites.network + Self.notify(receiver))
        #expect(refresh.status == 2, "stderr: \(refresh.stderr)")
        #expect(refresh.stderr.contains("refused by the test"), "stderr: \(refresh.stderr)")
        let report = try refresh.json()
        #expect(report["changes"] as? Int == 3 && report["notifications"] is NSNull, "\(refresh.stdout)")
        #expect(report["error"] == nil, "one document on standard output: the report")
        #expect(try await store.queuedNotifications().count == 3, "nothing is lost: the events stay queued")
    }

    @Test func twoRefreshesDeliveringAtOnceSendEachEventOnce() async throws {
        let sites = try await Sites.recordedThenChanged()
        defer { sites.stop() }
        let closed = try Loopback.freePort()
        let down = try sites.run(["refresh", "--now", Self.later(days: 2), "--notify", "http://127.0.0.1:\(closed)/x",
                                  "--notify-allow-private"] + sites.network)
        #expect(down.status == 1 && down.stderr.contains("notify-failed"), "stderr: \(down.stderr)")
        let queued = try await sites.store().queuedNotifications()
        #expect(queued.count == 3)

        // A slow receiver (about a second an answer), and two refreshes started together: one
        // delivers the queue, the other finds it held and leaves it.
        let receiver = try await Self.receiver(.slow(body: "ok", dripBytes: 1, dripInterval: 0.5))
        defer { receiver.stop() }
        let arguments = ["refresh", "--now", Self.later(days: 2)] + sites.network + (try Self.notify(receiver))
        async let first = Task.detached { try sites.run(arguments) }.value
        async let second = Task.detached { try sites.run(arguments) }.value
        let results = try await [first, second]
        for result in results { #expect(result.status == 0, "stderr: \(result.stderr)") }
        let ids = try Self.posts(receiver).compactMap { $0["id"] as? String }
        #expect(ids == queued.map(\.event.id), "each event once, in order")
        #expect(try await sites.store().queuedNotifications().isEmpty)
    }

    /// Three recorded hosts, two of them changed and due, and a worker (`--interval 1s`) that
    /// notifies a receiver answering with `behavior`. The caller stops the sites and the receiver.
    static func changedSitesAndWorker(
        receiving behavior: FaultBehavior
    ) async throws -> (sites: Sites, store: any AssociationStore, receiver: FaultServer, worker: StoreIntegrationTests.Running) {
        let sites = try await Sites.recordedThenChanged()
        do {
            let store = try await sites.store()
            try await (store as? SQLiteAssociationStore)?.setNextCheck(Date().addingTimeInterval(-1))
            let receiver = try await Self.receiver(behavior)
            do {
                let worker = try StoreIntegrationTests.Running(["refresh", "--worker", "--interval", "1s", "--quiet", "--json"] + sites.network
                                                               + (try Self.notify(receiver)), cache: sites.cache)
                return (sites, store, receiver, worker)
            } catch {
                receiver.stop()
                throw error
            }
        } catch {
            sites.stop()
            throw error
        }
    }

    @Test func aWorkerDeliversAfterItsBatchAndTriesAgainOnItsNextWake() async throws {
        // The receiver fails the worker's first delivery (three 500s), then accepts everything.
        let failing = FaultBehavior.respond(status: 500, body: "down")
        let (sites, store, receiver, worker) = try await Self.changedSitesAndWorker(
            receiving: .sequence([failing, failing, failing, .respond(status: 200, body: "ok")]))
        defer { sites.stop() }
        defer { receiver.stop() }
        let delivered = await waitUntil(timeout: .seconds(60), interval: .milliseconds(200)) {
            let ids = Set(((try? Self.posts(receiver)) ?? []).compactMap { $0["id"] as? String })
            let queued = (try? await store.queuedNotifications().count) ?? -1
            return ids.count == 3 && queued == 0
        }
        #expect(delivered, "the worker delivered every change")
        let result = worker.terminate(timeout: .seconds(30))
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("notify-failed: could not deliver the broke notification of h1.notify.example.com"), "stderr: \(result.stderr)")
        #expect(result.stderr.contains("takes notifications again: 3 notifications delivered after 1 failed delivery run"), "stderr: \(result.stderr)")
        let events = try Self.posts(receiver)
        #expect(Self.summary(events) == [Self.expectedChanges[0], Self.expectedChanges[0], Self.expectedChanges[0]] + Self.expectedChanges)
        // The batch's JSON line carries the delivery run after it: the one that failed.
        let batch = try #require(result.stdout.split(separator: "\n").first, "stdout: \(result.stdout)")
        let line = try #require(try JSONSerialization.jsonObject(with: Data(batch.utf8)) as? [String: Any])
        let delivery = try #require(line["notifications"] as? [String: Any], "\(batch)")
        #expect((delivery["failure"] as? [String: Any])?["code"] as? String == "notify-failed" && delivery["pending"] as? Int == 3, "\(delivery)")
        #expect(try SchemaValidator.problems(in: [.init(schema: "refresh", text: String(batch), origin: "worker batch")]).isEmpty)
    }

    /// A worker whose webhook stays down tries again at every wake, and says so once, not at every wake.
    @Test func aWebhookThatStaysDownIsReportedOnceByALongRunningRefresh() async throws {
        let (sites, store, receiver, worker) = try await Self.changedSitesAndWorker(receiving: .respond(status: 500, body: "down"))
        defer { sites.stop() }
        defer { receiver.stop() }
        // Three delivery runs of three attempts each.
        let tried = await waitUntil(timeout: .seconds(90), interval: .milliseconds(200)) { ((try? Self.posts(receiver)) ?? []).count >= 9 }
        #expect(tried, "the worker tried again at its wakes")
        let result = worker.terminate(timeout: .seconds(30))
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let warnings = result.stderr.components(separatedBy: "notify-failed: could not deliver").count - 1
        #expect(warnings == 1, "stderr: \(result.stderr)")
        #expect(try await store.queuedNotifications().count == 3, "the changes are still queued")
    }

    @Test func theWebhookIsRefusedOnLoopbackUnlessAllowedAndBadOptionsAreUsageErrors() async throws {
        let sites = try await Sites.start(count: 2)
        defer { sites.stop() }
        let receiver = try await Self.receiver()
        defer { receiver.stop() }
        try sites.record()
        try sites.serve(nil, for: "h0.notify.example.com")
        let url = "https://localhost:\(receiver.port)/hook"
        let refused = try sites.run(["refresh", "--now", Self.later(days: 2), "--notify", url, "--notify-cacert", sites.ca.caCertPath] + sites.network)
        #expect(refused.status == 1, "stderr: \(refused.stderr)")
        #expect(refused.stderr.contains("notify-failed") && refused.stderr.contains("private-address"), "stderr: \(refused.stderr)")
        #expect(receiver.requests().isEmpty, "nothing reached the receiver")
        #expect(try await sites.store().queuedNotifications().count == 1)

        for (arguments, message) in [
            (["--notify", "ftp://example.com/x"], "only https:// and http://"),
            (["--notify", "https://example.com/", "--notify-format", "xml"], "json or slack"),
            (["--notify-format", "slack"], "go with --notify URL"),
        ] {
            let usage = try sites.run(["refresh"] + arguments)
            #expect(usage.status == 64, "\(arguments): \(usage.stderr)")
            #expect(usage.stderr.contains(message), "\(arguments): \(usage.stderr)")
        }
    }
}

extension JSONSchemaTests {
    /// The body a webhook receives (`refresh --notify`) for every kind of change, built from the
    /// refresh policy's own events, against `docs/schema/notification.schema.json` (the bodies the
    /// real binary posts are validated by ``NotifyCommandTests``). No process runs here: this suite
    /// is not serialized, and a blocking run would hold a thread of the shared pool.
    @Test func notificationEventsMatchTheirSchema() throws {
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        let appID = NotifyCommandTests.appID
        let needs = [EntryNeed(entry: "applinks:example.com", service: .applinks, host: "example.com", appID: appID)]
        let policy = RefreshPolicy()
        func result(_ body: String?, status: Int = 200, code: String = "ok") -> HostFetchResult {
            let document = body.flatMap { try? AASADecoder.decodeDocument(Array($0.utf8)) }
            return HostFetchResult(host: "example.com", route: .origin, url: "https://example.com/.well-known/apple-app-site-association",
                                   code: code, reason: "HTTP \(status)", httpStatus: status, document: document,
                                   body: body.map { Array($0.utf8) }, headers: [HTTPHeader(name: "Content-Type", value: "application/json")],
                                   findings: code == "ok" ? [] : [.error(code, "HTTP \(status)", fix: "serve the file")])
        }
        var state: HostState?
        var events: [NotificationEvent] = []
        for (step, download) in [result(NotifyCommandTests.good), result(NotifyCommandTests.otherApp), result(nil, status: 404, code: "http-client-error"),
                                 result(NotifyCommandTests.good)].enumerated() {
            let now = t0.addingTimeInterval(Double(step) * 3600)
            let update = try #require(policy.update(for: download, previous: state, needs: needs, now: now))
            events += NotificationEvent.events(for: update.events, result: download, previousCode: state?.lastResult?.code, needs: needs)
            var next = state ?? HostState(key: update.key, tier: 0, nextCheck: update.nextCheck, addedAt: t0)
            next.lastResult = update.result
            if let body = update.approvedBody { next.approvedBody = body; next.approvedSize = body.count }
            state = next
        }
        #expect(Set(events.map(\.kind)) == [.approved, .changed, .associationLost, .broke, .associationGained])
        let problems = try SchemaValidator.problems(in: events.map {
            .init(schema: "notification", text: String(decoding: $0.json, as: UTF8.self), origin: $0.kind.rawValue)
        })
        #expect(problems.isEmpty, "\(problems)")
    }
}
