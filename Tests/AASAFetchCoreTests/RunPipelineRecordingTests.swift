import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

/// `fetch` and `refresh` share the fetch stage (``RouteFetcher``) and the store sink
/// (``StoreRecorder``): the same response lands as the same row whichever run fetched it.
struct RunPipelineRecordingTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    static let appID = "ABCDE12345.com.example.app"
    static let keys = [HostKey(host: "a.example", route: .origin), HostKey(host: "b.example", route: .cdn)]
    static let cdnBase = "https://cdn.test/a/v1/"

    static func transport() -> ScriptedTransport {
        let transport = ScriptedTransport()
        let headers = [("ETag", "\"v1\""), ("Cache-Control", "max-age=7200"), ("X-Note", "slash / and \u{e9}")]
        transport.on("https://a.example/.well-known/apple-app-site-association", .json(RefreshPolicyTests.good, headers: headers))
        transport.on(cdnBase + "b.example", .json(RefreshPolicyTests.good, headers: headers))
        return transport
    }

    /// A new temporary folder for a test's stores.
    static func folder(_ name: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pipeline-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    static func store(_ folder: URL, _ name: String) async throws -> SQLiteAssociationStore {
        let store = try SQLiteAssociationStore(path: folder.appendingPathComponent(name).path, create: true)
        _ = try await store.register(
            hosts: keys.map { HostRegistration(key: $0, tier: 0) },
            needs: keys.map { EntryNeed(entry: "applinks:\($0.host)", service: .applinks, host: $0.host, route: $0.route, appID: appID) },
            now: t0)
        return store
    }

    @Test func fetchAndRefreshRecordTheSameRow() async throws {
        let folder = try Self.folder("rows")
        defer { try? FileManager.default.removeItem(at: folder) }
        var options = FetchOptions()
        options.retryDelays = []

        // What `fetch` does: the plan through the fetch stage, then the recorder without an owner.
        let byFetch = try await Self.store(folder, "fetch.sqlite")
        let transport = Self.transport()
        let fetcher = RouteFetcher(origin: AASAFetcher(transport: transport, options: options),
                                   cdn: CDNFetcher(transport: transport, options: options, base: Self.cdnBase))
        let planned = Self.keys.map { PlannedFetch(host: $0.host, route: $0.route, tier: 0, entryIndexes: []) }
        let results = await fetcher.fetchAll(planned)
        let previous = try await byFetch.states(of: Self.keys)
        _ = try await StoreRecorder(store: byFetch).record(results, previous: previous, owner: nil, now: Self.t0)

        // What `refresh --all` does: lease, the same fetch stage, the same recorder with an owner.
        let byRefresh = try await Self.store(folder, "refresh.sqlite")
        let other = Self.transport()
        let job = RefreshJob(store: byRefresh, fetcher: AASAFetcher(transport: other, options: options),
                             cdn: CDNFetcher(transport: other, options: options, base: Self.cdnBase),
                             prioritizer: DomainPrioritizer(region: nil), owner: "job", batchSize: 10, leaseSeconds: 600)
        let report = try await job.runForced(hosts: nil, now: { Self.t0 })
        #expect(Set(report.hosts.map(\.key)) == Set(Self.keys))

        let fetched = try await byFetch.states(of: Self.keys)
        let refreshed = try await byRefresh.states(of: Self.keys)
        for key in Self.keys {
            let a = try #require(fetched[key]?.lastResult, "\(key)")
            let b = try #require(refreshed[key]?.lastResult, "\(key)")
            #expect(a.code == "ok" && a.code == b.code, "\(key)")
            #expect(a.reason == b.reason && a.httpStatus == b.httpStatus && a.url == b.url, "\(key)")
            #expect(!a.headers.isEmpty && a.headers == b.headers, "\(key)")
            #expect(a.body == b.body, "\(key)")
            #expect(fetched[key]?.approvedBody == refreshed[key]?.approvedBody && fetched[key]?.approvedBody != nil, "\(key)")
            #expect(fetched[key]?.validators == refreshed[key]?.validators, "\(key)")
            #expect(fetched[key]?.nextCheck == refreshed[key]?.nextCheck, "\(key)")
            #expect(fetched[key]?.consecutiveFailures == refreshed[key]?.consecutiveFailures, "\(key)")
            #expect(refreshed[key]?.lease == nil && fetched[key]?.lease == nil, "\(key)")
        }
        #expect(fetched[Self.keys[0]]?.lastResult?.headers.contains(HTTPHeader(name: "X-Note", value: "slash / and \u{e9}")) == true)
    }

    /// A refresh asks conditionally only while the last result is the approved response: after a
    /// failure, which URL served the file and with which headers is not known, so a 304 would be
    /// judged without them. The request after the failure goes without validators; the one after
    /// that approved response carries them again.
    @Test func afterAFailedRefreshTheNextRequestIsUnconditional() async throws {
        let folder = try Self.folder("unconditional")
        defer { try? FileManager.default.removeItem(at: folder) }
        var options = FetchOptions()
        options.retryDelays = []
        let store = try await Self.store(folder, "store.sqlite")
        let url = "https://a.example/.well-known/apple-app-site-association"
        let transport = ScriptedTransport()
        transport.on(url, .json(RefreshPolicyTests.good, headers: [("ETag", "\"v1\"")]),
                     .status(500),
                     .json(RefreshPolicyTests.good, headers: [("ETag", "\"v1\"")]),
                     .status(304, headers: [("ETag", "\"v1\"")]))
        let job = RefreshJob(store: store, fetcher: AASAFetcher(transport: transport, options: options),
                             cdn: CDNFetcher(transport: transport, options: options, base: Self.cdnBase),
                             prioritizer: DomainPrioritizer(region: nil), owner: "job", batchSize: 10, leaseSeconds: 600)
        var outcomes: [RefreshOutcome] = []
        for _ in 0..<4 {
            let report = try await job.runForced(hosts: [Self.keys[0].host], now: { Self.t0 })
            outcomes += report.hosts.filter { $0.key == Self.keys[0] }.map(\.outcome)
        }
        #expect(transport.requests(to: url).map { $0.header("If-None-Match") } == [nil, "\"v1\"", nil, "\"v1\""])
        #expect(outcomes.count == 4 && outcomes.last == .notModified, "\(outcomes)")
    }

    /// Runs record without a lease, batch by batch, each judged against the state read just
    /// before: two runs at once recorded one change twice (and counted one failure where there
    /// were two), and a run that downloaded before a refresh recorded a newer file wrote its older
    /// download over it, with a reversed change. Now the first result stands in both cases.
    @Test func aRunNeverRecordsOverAResultRecordedSinceItsStateWasRead() async throws {
        let folder = try Self.folder("race")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await Self.store(folder, "store.sqlite")
        let key = Self.keys[0]
        let recorder = StoreRecorder(store: store)
        func result(_ json: String, finished: Date) -> HostFetchResult {
            var result = RefreshPolicyTests.approved(json)
            result.host = key.host
            result.finishedAt = finished
            return result
        }
        let first = result(RefreshPolicyTests.good, finished: Self.t0)
        _ = try await recorder.record([first], previous: try await store.states(of: [key]), owner: nil, now: Self.t0)

        // Two runs judged against the same state: the second finds it changed.
        let before = try await store.states(of: [key])
        let a = result(RefreshPolicyTests.other, finished: Self.t0.addingTimeInterval(10))
        let b = result(RefreshPolicyTests.other, finished: Self.t0.addingTimeInterval(11))
        let byA = try await recorder.record([a], previous: before, owner: nil, now: Self.t0.addingTimeInterval(12))
        let byB = try await recorder.record([b], previous: before, owner: nil, now: Self.t0.addingTimeInterval(13))
        #expect(byA.recorded.map(\.key) == [key] && byB.recorded.isEmpty && byB.leaseLost == [key])
        #expect(try await store.history(of: key, limit: 10).filter { $0.kind == .changed }.count == 1)

        // A newer download recorded (a refresh), then an older one judged against it: not recorded.
        let newer = result(RefreshPolicyTests.good, finished: Self.t0.addingTimeInterval(30))
        _ = try await recorder.record([newer], previous: try await store.states(of: [key]), owner: nil, now: Self.t0.addingTimeInterval(30))
        let older = result(RefreshPolicyTests.other, finished: Self.t0.addingTimeInterval(20))
        let late = try await recorder.record([older], previous: try await store.states(of: [key]), owner: nil, now: Self.t0.addingTimeInterval(40))
        #expect(late.recorded.isEmpty && late.leaseLost == [key])
        let state = try #require(try await store.states(of: [key])[key])
        #expect(state.approvedBody == Array(RefreshPolicyTests.good.utf8), "the newer download stands")
        #expect(state.lastResult?.fetchedAt == Self.t0.addingTimeInterval(30))
        #expect(try await store.history(of: key, limit: 10).filter { $0.kind == .changed }.count == 2)
    }
}
