import AASAFetchTestSupport
import CurlTransport
import Foundation
import Synchronization
import Testing

/// Collects the results of ``CurlClient/start(_:completion:)`` calls and counts every completion.
/// `count` transfers started on `client` to a fault server that answers each after `delay`
/// seconds (hosts `slow0.fault.test` …), with the log of their completions.
struct SlowRun {
    let server: FaultServer
    let ca: TestCA
    let client: CurlClient
    let log: CompletionLog

    static func start(count: Int, delay: Double, client: CurlClient) async throws -> SlowRun {
        var slow = FaultBehavior.respond(body: "{}")
        slow.delay = delay
        let (server, ca) = try await startFaultServer(FaultScript(default: slow))
        let log = CompletionLog()
        for index in 0..<count {
            client.start(faultRequest(server, ca, host: "slow\(index).fault.test"), completion: log.completion(index))
        }
        return SlowRun(server: server, ca: ca, client: client, log: log)
    }
}

final class CompletionLog: Sendable {
    private let state = Mutex<[Int: [Result<TransferResponse, TransferFailure>]]>([:])

    func completion(_ key: Int) -> TransferCompletion {
        { result in self.state.withLock { $0[key, default: []].append(result) } }
    }

    /// Completions received so far.
    var count: Int { state.withLock { $0.values.reduce(0) { $0 + $1.count } } }

    /// Every result, by key.
    var results: [Int: [Result<TransferResponse, TransferFailure>]] { state.withLock { $0 } }

    /// Waits (bounded) until `count` completions arrived.
    func wait(for expected: Int) async -> Bool {
        await waitUntil(timeout: .seconds(20)) { self.count >= expected }
    }
}

/// A client with several curl loops: where transfers go, the limit over every loop, the shared
/// DNS cache, cancellation and shutdown. Each test asks for its own loop count, so the suite runs
/// them with several loops whatever `AASA_TEST_THREADS` says.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct MultiLoopTests {
    /// Transfers that are all in flight at once (the server holds each until the last arrives) are
    /// spread over every loop, and the callback API delivers each result exactly once.
    @Test func transfersSpreadOverTheLoops() async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: .barrier(count: 8, body: "{}", wait: 15)))
        defer { server.stop() }
        let client = CurlClient(maxConnections: 8, threads: 4)
        #expect(client.threads == 4)
        let log = CompletionLog()
        for index in 0..<8 {
            client.start(faultRequest(server, ca, host: "h\(index).fault.test"), completion: log.completion(index))
        }
        #expect(await log.wait(for: 8))
        let perLoop = client.transfersStartedPerLoop
        await client.shutdown()
        #expect(log.count == 8)
        for (key, results) in log.results {
            #expect(results.count == 1, "transfer \(key) completed \(results.count) times")
            #expect((try? results.first?.get().status) == 200, "transfer \(key): \(String(describing: results.first))")
        }
        #expect(perLoop.count == 4)
        #expect(perLoop.reduce(0, +) == 8)
        #expect(perLoop.allSatisfy { $0 > 0 }, "transfers per loop: \(perLoop)")
    }

    /// Requests with one affinity key all run on that key's loop; so do the HTTP/2 requests to one
    /// host, and the requests of a client with a per-host limit.
    @Test func affinityKeepsRequestsOnOneLoop() async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: .respond(body: "{}")))
        defer { server.stop() }
        let keyed = CurlClient(maxConnections: 16, threads: 4)
        let statuses = await withTaskGroup(of: Int.self) { group in
            for index in 0..<12 {
                var request = faultRequest(server, ca, host: "k\(index).fault.test")
                request.affinity = "cdn"
                group.addTask { (try? await keyed.perform(request).status) ?? -1 }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: 12))
        var expected = [0, 0, 0, 0]
        expected[keyed.loopIndex(forAffinity: "cdn")] = 12
        #expect(keyed.transfersStartedPerLoop == expected)
        await keyed.shutdown()

        let perHost = CurlClient(maxConnections: 16, maxConnectionsPerHost: 1, threads: 4)
        for index in 0..<6 {
            #expect(try await perHost.perform(faultRequest(server, ca, host: "same.fault.test", path: "/?n=\(index)")).status == 200)
        }
        #expect(perHost.transfersStartedPerLoop.filter { $0 > 0 } == [6], "\(perHost.transfersStartedPerLoop)")
        await perHost.shutdown()
    }

    /// `maxConnections` holds over every loop: with 4 loops and a limit of 3, the server never has
    /// more than 3 requests waiting on it at once, though each waits 0.3 s and 16 were started.
    @Test func concurrencyLimitHoldsOverEveryLoop() async throws {
        let run = try await SlowRun.start(count: 16, delay: 0.3, client: CurlClient(maxConnections: 3, threads: 4))
        defer { run.server.stop() }
        let (server, client, log) = (run.server, run.client, run.log)
        #expect(await log.wait(for: 16))
        #expect(client.slotsInUse == 0)
        let perLoop = client.transfersStartedPerLoop
        await client.shutdown()
        #expect(log.results.values.allSatisfy { $0.count == 1 && (try? $0[0].get().status) == 200 })
        let arrivals = server.requests().filter { $0.event == "request" }
        #expect(arrivals.count == 16)
        let most = arrivals.compactMap(\.inFlight).max() ?? 0
        #expect(most <= 3, "the server had \(most) requests waiting at once")
        #expect(perLoop.filter { $0 > 0 }.count > 1, "transfers per loop: \(perLoop)")
    }

    /// A loop that waits on the network runs every transfer its slots allow: the pacer starts a
    /// few and grows while the thread is idle, so 64 answers that each take 2 s are all awaited at
    /// once (stuck at the pacer's floor, the server would never see more than 8).
    @Test func aLoopWaitingOnTheNetworkRunsEveryTransferItsSlotsAllow() async throws {
        let run = try await SlowRun.start(count: 64, delay: 2, client: CurlClient(maxConnections: 64, threads: 1))
        defer { run.server.stop() }
        let (server, client, log) = (run.server, run.client, run.log)
        #expect(await log.wait(for: 64))
        await client.shutdown()
        #expect(log.results.values.allSatisfy { $0.count == 1 && (try? $0[0].get().status) == 200 })
        let most = server.requests().filter { $0.event == "request" }.compactMap(\.inFlight).max() ?? 0
        #expect(most >= 48, "the server had at most \(most) requests waiting at once")
    }

    /// A follow-up (`TransferRequest.after`) goes ahead of the transfers already queued on its loop.
    @Test func aFollowUpGoesAheadOfTheQueue() async throws {
        var slow = FaultBehavior.respond(body: "{}")
        slow.delay = 0.5
        let (server, ca) = try await startFaultServer(FaultScript(default: .respond(body: "{}"), hosts: ["slow.fault.test": slow]))
        defer { server.stop() }
        let client = CurlClient(maxConnections: 1, threads: 1)
        let place = try #require(try await client.perform(faultRequest(server, ca, host: "first.fault.test")).place)
        let log = CompletionLog()
        client.start(faultRequest(server, ca, host: "slow.fault.test"), completion: log.completion(0))  // holds the one slot
        #expect(await waitUntil(timeout: .seconds(10)) { server.requests().contains { $0.host?.hasPrefix("slow.") == true } })
        client.start(faultRequest(server, ca, host: "q1.fault.test"), completion: log.completion(1))
        client.start(faultRequest(server, ca, host: "q2.fault.test"), completion: log.completion(2))
        var followUp = faultRequest(server, ca, host: "first.fault.test", path: "/again")
        followUp.after = place
        client.start(followUp, completion: log.completion(3))
        #expect(await log.wait(for: 4))
        await client.shutdown()
        let order = server.requests().filter { $0.event == "request" }.map { "\($0.host ?? "")\($0.path ?? "")" }
        #expect(order == ["first.fault.test/", "slow.fault.test/", "first.fault.test/again", "q1.fault.test/", "q2.fault.test/"], "\(order)")
    }

    /// A transfer that a loop has started lets go of its completion (and what that captured: in a
    /// run, the host's plan) while later ones still wait in the queue: a long queue drained one
    /// slot at a time kept every started entry until the queue was empty.
    @Test func aStartedTransferIsNotKeptByTheQueue() async throws {
        var slow = FaultBehavior.respond(body: "{}")
        slow.delay = 0.05
        let (server, ca) = try await startFaultServer(FaultScript(default: slow))
        defer { server.stop() }
        let client = CurlClient(maxConnections: 1, threads: 1)
        let log = CompletionLog()
        let released = Mutex<Set<Int>>([])
        // The 60th completion holds the loop (a test may block it) until this has looked, so
        // 40 transfers are still queued then, however slowly this test runs.
        let gate = DispatchSemaphore(value: 0)
        for index in 0..<100 {
            let token = ReleaseToken { released.withLock { _ = $0.insert(index) } }
            let record = log.completion(index)
            client.start(faultRequest(server, ca, host: "q\(index).fault.test")) { result in
                withExtendedLifetime(token) { record(result) }
                if index == 59 { _ = gate.wait(timeout: .now() + 60) }
            }
        }
        #expect(await log.wait(for: 60))
        let early = released.withLock { $0.filter { $0 < 40 } }
        #expect(log.count == 60, "the queue went on before the check")
        #expect(early.count == 40, "kept by the loop after they ran: \(Set(0..<40).subtracting(early).sorted())")
        gate.signal()
        #expect(await log.wait(for: 100))
        await client.shutdown()
        #expect(log.results.values.allSatisfy { $0.count == 1 && (try? $0[0].get().status) == 200 })
    }

    /// The loops share one DNS cache: a `resolve` entry given to a transfer on one loop lets a
    /// transfer on another loop reach a name that does not resolve otherwise.
    @Test func dnsCacheIsSharedByTheLoops() async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: .respond(body: "{}")))
        defer { server.stop() }
        let client = CurlClient(threads: 2)
        let keys = (0..<64).map { "key\($0)" }
        let first = try #require(keys.first { client.loopIndex(forAffinity: $0) == 0 })
        let second = try #require(keys.first { client.loopIndex(forAffinity: $0) == 1 })
        let url = "https://shared.fault.test:\(server.port)/"
        var seeding = TransferRequest(url: url, caFile: ca.caCertPath, resolve: ["shared.fault.test:\(server.port):127.0.0.1"],
                                      allowPrivateAddresses: true)
        seeding.affinity = first
        #expect(try await client.perform(seeding).status == 200)
        var other = TransferRequest(url: url, connectTimeout: 3, maxTime: 5, caFile: ca.caCertPath, allowPrivateAddresses: true)
        other.affinity = second
        let response = try await client.perform(other)
        #expect(response.status == 200)
        #expect(response.remoteAddress == "127.0.0.1")
        #expect(client.transfersStartedPerLoop == [1, 1])
        await client.shutdown()
    }

    /// Cancelling a queued or a running transfer started with `start(_:completion:)`, then shutting
    /// down a client whose loops all hold transfers: every completion runs exactly once, with
    /// `cancelled`, every loop thread ends, and later starts fail at once.
    @Test func cancelAndShutdownWithSeveralLoops() async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: .stallAfterHeaders()))
        defer { server.stop() }
        let client = CurlClient(maxConnections: 4, threads: 4)
        let log = CompletionLog()
        var tickets: [TransferTicket] = []
        for index in 0..<10 {
            var request = faultRequest(server, ca, host: "c\(index).fault.test")
            request.maxTime = 30
            tickets.append(client.start(request, completion: log.completion(index)))
        }
        let running = await waitUntil(timeout: .seconds(10)) { server.requests().filter { $0.event == "request" }.count >= 4 }
        #expect(running)
        #expect(client.slotsInUse == 4)
        // Four run (the limit); cancel one that runs and one that waits.
        let startedHosts = Set(server.requests().compactMap(\.host))
        let runningIndex = try #require((0..<10).first { startedHosts.contains("c\($0).fault.test") })
        let queuedIndex = try #require((0..<10).first { !startedHosts.contains("c\($0).fault.test") })
        client.cancel(tickets[queuedIndex])
        client.cancel(tickets[runningIndex])
        #expect(await log.wait(for: 2))
        for index in [runningIndex, queuedIndex] {
            let result = try #require(log.results[index]?.first)
            #expect(result.failureKind == .cancelled, "\(index): \(result)")
        }
        await client.shutdown()
        #expect(await waitUntil(timeout: .seconds(5), interval: .milliseconds(5)) { client.loopThreadExited })
        #expect(log.count == 10)
        for (key, results) in log.results {
            #expect(results.count == 1, "transfer \(key) completed \(results.count) times")
            #expect(results.first?.failureKind == .cancelled, "\(key): \(String(describing: results.first))")
        }
        client.cancel(tickets[0])  // after the end: nothing happens
        let late = CompletionLog()
        client.start(faultRequest(server, ca), completion: late.completion(0))
        #expect(late.results[0]?.first?.failureKind == .cancelled)
        await client.shutdown()
    }
}

extension Result where Success == TransferResponse, Failure == TransferFailure {
    /// The failure's kind, `nil` for a response.
    var failureKind: TransferFailureKind? {
        if case .failure(let failure) = self { return failure.kind }
        return nil
    }
}

/// The callback API of a transport without a queue of its own runs `perform` in a task.
@Suite struct DefaultStartTests {
    @Test func defaultStartDeliversPerformsResult() async throws {
        let transport = ScriptedTransport()
        transport.on("https://a.test/", .status(200, body: "{}"))
        let log = CompletionLog()
        transport.start(TransferRequest(url: "https://a.test/"), completion: log.completion(0))
        #expect(await log.wait(for: 1))
        #expect((try? log.results[0]?.first?.get().status) == 200)
    }
}

/// Calls `onRelease` when the last reference to it goes: what a completion captured is released.
final class ReleaseToken: Sendable {
    private let onRelease: @Sendable () -> Void

    init(_ onRelease: @escaping @Sendable () -> Void) {
        self.onRelease = onRelease
    }

    deinit {
        onRelease()
    }
}
