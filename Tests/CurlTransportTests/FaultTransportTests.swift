import AASAFetchTestSupport
import CurlTransport
import Foundation
import Testing

/// Starts a fault server with a certificate for `fault.test` and its subdomains.
func startFaultServer(_ script: FaultScript) async throws -> (FaultServer, TestCA) {
    let ca = try TestCA.shared()
    let leaf = try ca.leaf(for: ["fault.test", "*.fault.test"])
    return (try await FaultServer.start(script: script, certificate: leaf, lifetime: 90), ca)
}

func faultRequest(_ server: FaultServer, _ ca: TestCA, host: String = "fault.test", path: String = "/") -> TransferRequest {
    TransferRequest(
        url: "https://\(host)\(path)", caFile: ca.caCertPath, connectTo: [server.connectTo], allowPrivateAddresses: true)
}

@Suite(.serialized, .timeLimit(.minutes(1)))
struct FaultTransportTests {
    @Test func userAgentAndExtraHeadersReachTheServer() async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: .respond(body: "{}")))
        defer { server.stop() }
        let client = makeClient()
        var request = faultRequest(server, ca, path: "/.well-known/apple-app-site-association")
        request.userAgent = "AASA-Bot/1.0.0"
        request.headers = ["If-None-Match: \"abc\"", "X-Extra: 1"]
        let response = try await client.perform(request)
        await client.shutdown()
        #expect(response.status == 200)
        #expect(response.body == Array("{}".utf8))
        let logged = try #require(server.requests().first { $0.event == "request" })
        #expect(logged.path == "/.well-known/apple-app-site-association")
        #expect(logged.userAgent == "AASA-Bot/1.0.0")
        #expect(logged.host == "fault.test")
        #expect(logged.sni == "fault.test")
        #expect(logged.headers["if-none-match"] == "\"abc\"")
        #expect(logged.headers["x-extra"] == "1")
        #expect(logged.headers["accept-encoding"]?.contains("gzip") == true)
    }

    /// Distinct hosts sent to one server by `connectTo` run in parallel (libcurl counts them
    /// against the target, so a per-host limit would serialise them); the total limit still holds.
    @Test func distinctHostsToOneTargetRunInParallel() async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: .barrier(count: 6, body: "{}", wait: 8)))
        defer { server.stop() }
        func statuses(_ client: CurlClient, _ hosts: ClosedRange<Int>) async -> [Int] {
            await withTaskGroup(of: Int.self) { group in
                for index in hosts {
                    let request = faultRequest(server, ca, host: "h\(index).fault.test")
                    group.addTask { (try? await client.perform(request).status) ?? -1 }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        let parallel = makeClient(maxConnections: 8)
        #expect(await statuses(parallel, 1...6) == Array(repeating: 200, count: 6))
        await parallel.shutdown()
    }

    @Test func chunkedAndGzippedBodiesAreDecoded() async throws {
        let body = String(repeating: "association ", count: 500)
        let script = FaultScript(paths: [
            "/chunked": .respond(body: body, chunked: true),
            "/gzip": .respond(body: body, gzip: true),
            "/both": .respond(body: body, gzip: true, chunked: true),
        ])
        let (server, ca) = try await startFaultServer(script)
        defer { server.stop() }
        let client = makeClient()
        for path in ["/chunked", "/gzip", "/both"] {
            let response = try await client.perform(faultRequest(server, ca, path: path))
            #expect(response.status == 200)
            #expect(response.body == Array(body.utf8), "\(path)")
        }
        await client.shutdown()
    }

    @Test(arguments: [
        FaultBehavior.respond(body: "0123456789abcdef", repeat: 20_000, chunked: true),
        .respond(body: "0123456789abcdef", repeat: 20_000),
        .respond(body: "0000000000000000", repeat: 1_000_000, gzip: true, chunked: true),
    ])
    func tooLargeBodiesAreAbortedEarly(behavior: FaultBehavior) async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: behavior))
        defer { server.stop() }
        let client = makeClient()
        var request = faultRequest(server, ca)
        // The limit holds on decoded bytes as they stream (the gzip bomb expands to 16 MB): the
        // transfer ends too-large, well within a total time a loaded machine cannot reach.
        request.maxTime = 30
        let (failure, seconds) = await measure {
            await expectFailure { () async throws(TransferFailure) in try await client.perform(request) }
        }
        await client.shutdown()
        #expect(failure?.kind == .tooLarge, "\(String(describing: failure))")
        #expect(seconds < 25, "a loaded machine (a whole suite on two cores) took 8 s here once")
    }

    @Test func neverAnsweringHandshakeTimesOutOnConnectTimeout() async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: .neverAnswer))
        defer { server.stop() }
        let client = makeClient()
        var request = faultRequest(server, ca)
        request.connectTimeout = 1
        // The connect timeout, not the total one, ends it: far apart, so a loaded machine (a
        // whole test suite on two cores) cannot blur them.
        request.maxTime = 60
        let (failure, seconds) = await measure {
            await expectFailure { () async throws(TransferFailure) in try await client.perform(request) }
        }
        await client.shutdown()
        #expect(failure?.kind == .timeout, "\(String(describing: failure))")
        #expect(seconds < 30)
        #expect(server.requests().contains { $0.event == "connection" })
    }

    @Test func handshakeHeldForOneServerNameTimesOut() async throws {
        let (server, ca) = try await startFaultServer(
            FaultScript(default: .respond(body: "{}"), hosts: ["held.fault.test": .neverAnswer]))
        defer { server.stop() }
        let client = makeClient()
        var request = faultRequest(server, ca, host: "held.fault.test")
        request.connectTimeout = 1
        let failure = await expectFailure { () async throws(TransferFailure) in try await client.perform(request) }
        let other = try await client.perform(faultRequest(server, ca, host: "ok.fault.test"))
        await client.shutdown()
        #expect(failure?.kind == .timeout, "\(String(describing: failure))")
        #expect(other.status == 200)
    }

    @Test func stallAfterHeadersTimesOutOnMaxTime() async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: .stallAfterHeaders()))
        defer { server.stop() }
        let client = makeClient()
        var request = faultRequest(server, ca)
        request.maxTime = 2
        let (failure, seconds) = await measure {
            await expectFailure { () async throws(TransferFailure) in try await client.perform(request) }
        }
        await client.shutdown()
        #expect(failure?.kind == .timeout, "\(String(describing: failure))")
        // A hang bound: under a whole suite's load the 2 s deadline was met in 6.6 s.
        #expect(seconds < 30)
    }

    @Test func slowDripTimesOutOnMaxTime() async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: .slow(body: "{\"applinks\":{}}")))
        defer { server.stop() }
        let client = makeClient()
        var request = faultRequest(server, ca)
        request.maxTime = 1.5
        let failure = await expectFailure { () async throws(TransferFailure) in try await client.perform(request) }
        await client.shutdown()
        #expect(failure?.kind == .timeout, "\(String(describing: failure))")
    }

    @Test func resetMidBodyIsATransferFailure() async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: .resetMidBody()))
        defer { server.stop() }
        let client = makeClient()
        let failure = await expectFailure { () async throws(TransferFailure) in
            try await client.perform(faultRequest(server, ca))
        }
        await client.shutdown()
        #expect(failure?.kind == .transferFailure, "\(String(describing: failure))")
    }

    @Test func cancellingTheTaskCancelsTheTransfer() async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: .stallAfterHeaders()))
        defer { server.stop() }
        let client = makeClient()
        var request = faultRequest(server, ca)
        request.maxTime = 30
        let task = performTask(client, request)
        let seen = await waitUntil(timeout: .seconds(10)) { server.requests().contains { $0.event == "request" } }
        #expect(seen)
        let (failure, seconds) = await measure {
            task.cancel()
            return await expectFailure { () async throws(TransferFailure) in try await task.value.get() }
        }
        #expect(failure?.kind == .cancelled, "\(String(describing: failure))")
        #expect(seconds < 3)

        // The client still works afterwards.
        let (other, otherCA) = try await startFaultServer(FaultScript(default: .respond(body: "{}")))
        defer { other.stop() }
        let response = try await client.perform(faultRequest(other, otherCA))
        #expect(response.status == 200)
        await client.shutdown()
    }

    /// Transfers beyond `maxConnections` wait in the client's queue: they start in order as others
    /// finish, and their timeouts start only then (a queued one is not failed for the time it waited).
    @Test func queuedTransfersStartWhenASlotFreesWithTheirOwnTimeout() async throws {
        let script = FaultScript(paths: [
            "/slow": .slow(body: "0123456789", dripBytes: 1, dripInterval: 0.15),  // about 1.5 s
            "/fast": .respond(body: "{}"),
        ])
        let (server, ca) = try await startFaultServer(script)
        defer { server.stop() }
        let client = makeClient(maxConnections: 1)
        var slow = faultRequest(server, ca, host: "a.fault.test", path: "/slow")
        slow.maxTime = 20
        var fast = faultRequest(server, ca, host: "b.fault.test", path: "/fast")
        fast.maxTime = 1  // shorter than the slow transfer it waits behind
        let first = performTask(client, slow)
        _ = await waitUntil(timeout: .seconds(10)) { server.requests().contains { $0.path == "/slow" } }
        let second = try await client.perform(fast)
        #expect(second.status == 200)
        #expect(try await first.value.get().body == Array("0123456789".utf8))
        // The queued request reached the server only after the slow one was answered.
        let paths = server.requests().filter { $0.event == "request" }.map(\.path)
        #expect(paths == ["/slow", "/fast"], "\(paths)")
        await client.shutdown()
    }

    /// A queued transfer can be cancelled before it starts, and shutdown fails the queued ones.
    @Test func queuedTransfersCanBeCancelledAndAreFailedByShutdown() async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: .stallAfterHeaders()))
        defer { server.stop() }
        let client = makeClient(maxConnections: 1)
        var request = faultRequest(server, ca)
        request.maxTime = 30
        let running = performTask(client, request)
        _ = await waitUntil(timeout: .seconds(10)) { server.requests().contains { $0.event == "request" } }
        let cancelled = performTask(client, faultRequest(server, ca, host: "c.fault.test"))
        let queued = performTask(client, faultRequest(server, ca, host: "d.fault.test"))
        try await Task.sleep(for: .milliseconds(300))  // both are in the loop's queue by now
        cancelled.cancel()
        let cancelFailure = await expectFailure { () async throws(TransferFailure) in try await cancelled.value.get() }
        #expect(cancelFailure?.kind == .cancelled, "\(String(describing: cancelFailure))")
        await client.shutdown()
        for task in [running, queued] {
            let failure = await expectFailure { () async throws(TransferFailure) in try await task.value.get() }
            #expect(failure?.kind == .cancelled, "\(String(describing: failure))")
        }
        // Only the first request ever reached the server.
        #expect(server.requests().filter { $0.event == "request" }.count == 1)
    }

    @Test func alreadyCancelledTaskFailsAtOnce() async throws {
        let client = makeClient()
        let task = Task { () async -> Result<TransferResponse, TransferFailure> in
            withUnsafeCurrentTask { $0?.cancel() }
            do throws(TransferFailure) {
                return .success(try await client.perform(TransferRequest(url: "https://fault.test/", connectTo: ["::127.0.0.1:9"])))
            } catch {
                return .failure(error)
            }
        }
        let failure = await expectFailure { () async throws(TransferFailure) in try await task.value.get() }
        #expect(failure?.kind == .cancelled, "\(String(describing: failure))")
        await client.shutdown()
    }

    @Test func shutdownFailsPendingTransfersAndIsIdempotent() async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: .stallAfterHeaders()))
        defer { server.stop() }
        let client = makeClient()
        var request = faultRequest(server, ca)
        request.maxTime = 30
        let tasks = (0..<3).map { index in
            var item = request
            item.url += "?n=\(index)"
            return performTask(client, item)
        }
        let seen = await waitUntil(timeout: .seconds(10)) { server.requests().count >= 1 }
        #expect(seen)
        let (_, seconds) = await measure { await client.shutdown() }
        #expect(seconds < 3)
        for task in tasks {
            let failure = await expectFailure { () async throws(TransferFailure) in try await task.value.get() }
            #expect(failure?.kind == .cancelled, "\(String(describing: failure))")
        }
        await client.shutdown()
        let late = await expectFailure { () async throws(TransferFailure) in try await client.perform(request) }
        #expect(late?.kind == .cancelled)
    }
}
