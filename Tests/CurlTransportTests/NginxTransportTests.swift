import AASAFetchTestSupport
import CurlTransport
import Foundation
import Testing

/// A document root and an nginx serving it for several virtual hosts, one per TLS situation.
struct NginxFixture {
    static let association = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/*"}]}]}}"#

    let server: NginxServer
    let ca: TestCA
    let root: URL
    let gzippedBody: [UInt8]

    static func start() async throws -> NginxFixture {
        let ca = try TestCA.shared()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-docroot-\(UUID().uuidString)")
        let wellKnown = root.appendingPathComponent(".well-known")
        try FileManager.default.createDirectory(at: wellKnown, withIntermediateDirectories: true)
        try Data(association.utf8).write(to: wellKnown.appendingPathComponent("apple-app-site-association"))
        try Data(repeating: UInt8(ascii: "a"), count: 200 * 1024).write(to: root.appendingPathComponent("big.json"))
        let gzipped = Array(String(repeating: #"{"key":"value"},"#, count: 2000).utf8)
        try Data(gzipped).write(to: root.appendingPathComponent("gzipped.json"))
        try Data("{}".utf8).write(to: root.appendingPathComponent("bomb.json"))
        let bomb = try ChildProcess.run(
            "/bin/sh", ["-c", "head -c 20000000 /dev/zero | gzip -9 > '\(root.path)/bomb.json.gz'"],
            timeout: .seconds(30))
        guard bomb.status == 0 else { throw TestSupportError("cannot make the gzip bomb: \(bomb.standardError)") }

        let valid = try ca.leaf(for: ["aasa.test", "*.aasa.test"])
        let docroot = root.path
        let hosts = [
            NginxVirtualHost(
                certificate: valid, documentRoot: docroot,
                directives: [
                    "add_header X-AASA-Test present always;",
                    "location = /.well-known/apple-app-site-association { default_type application/json; }",
                    "location = /redirect { return 301 https://elsewhere.test/.well-known/apple-app-site-association; }",
                    "location = /gzipped.json { gzip on; gzip_types application/json; gzip_min_length 1; }",
                    "location = /bomb.json { gzip_static on; }",
                ]),
            NginxVirtualHost(certificate: try ca.leaf(for: ["expired.test"], kind: .expired), documentRoot: docroot),
            NginxVirtualHost(certificate: try ca.leaf(for: ["future.test"], kind: .notYetValid), documentRoot: docroot),
            NginxVirtualHost(
                certificate: try ca.leaf(for: ["other.example"]), serverNames: ["wrong.test"], documentRoot: docroot),
            NginxVirtualHost(certificate: try ca.leaf(for: ["selfsigned.test"], kind: .selfSigned), documentRoot: docroot),
            NginxVirtualHost(
                certificate: try ca.leaf(for: ["untrusted.test"], kind: .untrustedIssuer), documentRoot: docroot),
        ]
        do {
            let server = try await NginxServer.start(hosts: hosts)
            return NginxFixture(server: server, ca: ca, root: root, gzippedBody: gzipped)
        } catch {
            try? FileManager.default.removeItem(at: root)
            throw error
        }
    }

    func stop() {
        server.stop()
        try? FileManager.default.removeItem(at: root)
    }

    func request(_ host: String, _ path: String = "/.well-known/apple-app-site-association") -> TransferRequest {
        TransferRequest(
            url: "https://\(host)\(path)", caFile: ca.caCertPath, connectTo: [server.connectTo],
            allowPrivateAddresses: true)
    }
}

@Suite(.serialized, .timeLimit(.minutes(1)))
struct NginxTransportTests {
    @Test func okResponseWithBodyHeadersAndDetails() async throws {
        let fixture = try await NginxFixture.start()
        defer { fixture.stop() }
        let client = makeClient()
        var request = fixture.request("aasa.test")
        request.userAgent = "AASA-Bot/test"
        request.collectCertificates = true
        let response = try await client.perform(request)
        await client.shutdown()

        #expect(response.status == 200)
        #expect(response.body == Array(NginxFixture.association.utf8))
        #expect(response.header("content-type") == "application/json")
        #expect(response.header("X-AASA-Test") == "present")
        #expect(response.redirectURL == nil)
        #expect(response.remoteAddress == "127.0.0.1")
        #expect(response.remotePort == fixture.server.port)
        #expect(response.httpVersion == "1.1")
        #expect(response.timings.total > 0)
        #expect(response.timings.tlsHandshake >= response.timings.connect)
        let leaf = try #require(response.certificates.first)
        #expect(leaf.subjectAltNames == ["aasa.test", "*.aasa.test"])
        #expect(leaf.subject.contains("aasa.test"))
        #expect(leaf.issuer.contains("AASA Test Root CA"))
        #expect(!leaf.notBefore.isEmpty && !leaf.notAfter.isEmpty)
        // nginx logs a request after it sent the answer: the client may have it first.
        _ = await waitUntil(timeout: .seconds(5)) { !fixture.server.requests().isEmpty }
        let logged = try #require(fixture.server.requests().last)
        #expect(logged.userAgent == "AASA-Bot/test")
        #expect(logged.uri == "/.well-known/apple-app-site-association")
    }

    @Test func notFoundIsAResponse() async throws {
        let fixture = try await NginxFixture.start()
        defer { fixture.stop() }
        let client = makeClient()
        let response = try await client.perform(fixture.request("aasa.test", "/apple-app-site-association"))
        await client.shutdown()
        #expect(response.status == 404)
    }

    @Test func redirectIsReportedNotFollowed() async throws {
        let fixture = try await NginxFixture.start()
        defer { fixture.stop() }
        let client = makeClient()
        let response = try await client.perform(fixture.request("aasa.test", "/redirect"))
        await client.shutdown()
        #expect(response.status == 301)
        #expect(response.redirectURL == "https://elsewhere.test/.well-known/apple-app-site-association")
        #expect(response.header("Location") == "https://elsewhere.test/.well-known/apple-app-site-association")
        _ = await waitUntil(timeout: .seconds(5)) { !fixture.server.requests().isEmpty }
        #expect(fixture.server.requests().map(\.uri) == ["/redirect"])
    }

    @Test func gzipEncodedBodyIsDecoded() async throws {
        let fixture = try await NginxFixture.start()
        defer { fixture.stop() }
        let client = makeClient()
        let response = try await client.perform(fixture.request("aasa.test", "/gzipped.json"))
        await client.shutdown()
        #expect(response.status == 200)
        #expect(response.header("Content-Encoding") == "gzip")
        #expect(response.body == fixture.gzippedBody)
    }

    @Test(arguments: ["/big.json", "/bomb.json"])
    func tooLargeBodyIsAbortedEarly(path: String) async throws {
        let fixture = try await NginxFixture.start()
        defer { fixture.stop() }
        let client = makeClient()
        let (failure, seconds) = await measure {
            await expectFailure { () async throws(TransferFailure) in
                try await client.perform(fixture.request("aasa.test", path))
            }
        }
        await client.shutdown()
        #expect(failure?.kind == .tooLarge, "\(String(describing: failure))")
        #expect(seconds < 5)
    }

    @Test(arguments: [
        ("expired.test", TransferFailureKind.tlsExpired),
        ("future.test", .tlsNotYetValid),
        ("wrong.test", .tlsHostnameMismatch),
        ("selfsigned.test", .tlsUntrusted),
        ("untrusted.test", .tlsUntrusted),
    ])
    func certificateProblemsAreClassified(host: String, expected: TransferFailureKind) async throws {
        let fixture = try await NginxFixture.start()
        defer { fixture.stop() }
        let client = makeClient()
        let failure = await expectFailure { () async throws(TransferFailure) in
            try await client.perform(fixture.request(host))
        }
        await client.shutdown()
        #expect(failure?.kind == expected, "\(String(describing: failure))")
        #expect(fixture.server.requests().isEmpty)
    }

    @Test func systemTrustStoreDoesNotTrustTheTestCA() async throws {
        let fixture = try await NginxFixture.start()
        defer { fixture.stop() }
        let client = makeClient()
        var request = fixture.request("aasa.test")
        request.caFile = nil
        let failure = await expectFailure { () async throws(TransferFailure) in try await client.perform(request) }
        await client.shutdown()
        #expect(failure?.kind == .tlsUntrusted, "\(String(describing: failure))")
    }

    @Test func loopbackIsRefusedWithoutAllowPrivateAddresses() async throws {
        let fixture = try await NginxFixture.start()
        defer { fixture.stop() }
        let client = makeClient()
        var request = fixture.request("aasa.test")
        request.allowPrivateAddresses = false
        let failure = await expectFailure { () async throws(TransferFailure) in try await client.perform(request) }
        await client.shutdown()
        #expect(failure?.kind == .privateAddress, "\(String(describing: failure))")
        #expect(failure?.message.contains("127.0.0.1") == true)
        #expect(fixture.server.requests().isEmpty)
    }

    @Test func resolveEntriesWork() async throws {
        let fixture = try await NginxFixture.start()
        defer { fixture.stop() }
        let client = makeClient()
        let request = TransferRequest(
            url: "https://aasa.test:\(fixture.server.port)/.well-known/apple-app-site-association",
            caFile: fixture.ca.caCertPath, resolve: ["aasa.test:\(fixture.server.port):127.0.0.1"],
            allowPrivateAddresses: true)
        let response = try await client.perform(request)
        await client.shutdown()
        #expect(response.status == 200)
    }

    @Test func http2IsNegotiated() async throws {
        let fixture = try await NginxFixture.start()
        defer { fixture.stop() }
        let client = makeClient()
        var request = fixture.request("aasa.test")
        request.httpVersion = .http2
        let response = try await client.perform(request)
        await client.shutdown()
        #expect(response.status == 200)
        #expect(response.httpVersion == "2")
        // nginx may write the access log line a moment after the response reached the client.
        _ = await waitUntil(timeout: .seconds(5)) { !fixture.server.requests().isEmpty }
        #expect(fixture.server.requests().last?.serverProtocol == "HTTP/2.0")
    }

    @Test(arguments: [HTTPVersion.http1_1, .http2])
    func hundredConcurrentRequestsComplete(version: HTTPVersion) async throws {
        let fixture = try await NginxFixture.start()
        defer { fixture.stop() }
        let client = makeClient(maxConnectionsPerHost: 1)
        var request = fixture.request("aasa.test")
        request.httpVersion = version
        let statuses = await withTaskGroup(of: Int.self) { group in
            for index in 0..<100 {
                var item = request
                item.url += "?n=\(index)"
                group.addTask {
                    do {
                        return try await client.perform(item).status
                    } catch {
                        return -1
                    }
                }
            }
            var all: [Int] = []
            for await status in group {
                all.append(status)
            }
            return all
        }
        await client.shutdown()
        #expect(statuses.count == 100)
        #expect(statuses.allSatisfy { $0 == 200 })
        _ = await waitUntil(timeout: .seconds(5)) { fixture.server.requests().count >= 100 }
        let logged = fixture.server.requests()
        #expect(logged.count == 100)
        // One connection per host allowed: HTTP/2 multiplexes, HTTP/1.1 reuses the kept-alive connection.
        #expect(Set(logged.map(\.connection)).count == 1, "connections: \(Set(logged.map(\.connection)))")
    }

    /// A loop keeps idle connections for the request that follows at once, not for ever: asking
    /// 100 hosts again right away reuses some of their connections; 3.5 s later (past the 2 s
    /// `CURLOPT_MAXAGE_CONN` and libcurl's once-a-second check), none. (libcurl's default keeps
    /// four per transfer ever added, each with its TLS state, until the cache is full.)
    @Test func aLoopKeepsIdleConnectionsBrieflyForReuse() async throws {
        let fixture = try await NginxFixture.start()
        defer { fixture.stop() }
        let client = makeClient(maxConnections: 200, threads: 1)
        let hosts = (0..<100).map { "h\($0).aasa.test" }
        for round in 0..<3 {
            if round == 2 { try await Task.sleep(for: .milliseconds(3500)) }
            let statuses = await withTaskGroup(of: Int.self) { group in
                for host in round == 1 ? hosts.reversed() : hosts {
                    let request = fixture.request(host)
                    group.addTask { (try? await client.perform(request).status) ?? -1 }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 100), "round \(round)")
        }
        await client.shutdown()
        _ = await waitUntil(timeout: .seconds(5)) { fixture.server.requests().count >= 300 }
        let logged = fixture.server.requests()
        #expect(logged.count == 300)
        let rounds = (0..<3).map { Set(logged.dropFirst($0 * 100).prefix(100).map(\.connection)) }
        #expect(!rounds[1].intersection(rounds[0]).isEmpty, "no connection was reused right away")
        #expect(rounds[2].intersection(rounds[0].union(rounds[1])).isEmpty, "a connection idle for 3.5 s was reused")
    }

    /// A follow-up (`TransferRequest.after`: the legacy path after a 404) runs on the loop of the
    /// transfer it follows, ahead of that loop's queue, and reuses its connection; without it, the
    /// same request goes to the least-loaded loop and makes a new connection.
    @Test func aFollowUpRunsOnTheLoopItFollowsAndReusesItsConnection() async throws {
        let fixture = try await NginxFixture.start()
        defer { fixture.stop() }
        let client = makeClient(maxConnections: 8, threads: 4)
        // The first request on loop 2 (its affinity key), not the least-loaded loop 0.
        var first = fixture.request("follow.aasa.test", "/missing")
        guard let onLoop2 = (0..<64).map({ "key\($0)" }).first(where: { client.loopIndex(forAffinity: $0) == 2 }) else {
            Issue.record("no key of 64 maps to loop 2")
            return
        }
        first.affinity = onLoop2
        let missing = try await client.perform(first)
        #expect(missing.status == 404)
        let place = try #require(missing.place)

        var followUp = fixture.request("follow.aasa.test")
        followUp.after = place
        #expect(try await client.perform(followUp).status == 200)
        #expect(client.transfersStartedPerLoop == [0, 0, 2, 0], "\(client.transfersStartedPerLoop)")
        #expect(try await client.perform(fixture.request("follow.aasa.test")).status == 200)  // no `after`: loop 0
        await client.shutdown()
        _ = await waitUntil(timeout: .seconds(5)) { fixture.server.requests().count >= 3 }
        let logged = fixture.server.requests().map(\.connection)
        #expect(logged.count == 3)
        #expect(logged[0] == logged[1], "the follow-up made a new connection: \(logged)")
        #expect(logged[2] != logged[0], "\(logged)")
    }

    /// A request that collects certificates makes a new connection, so it always has a chain to
    /// report (a reused connection has none: `diagnose` said "the server did not complete a
    /// handshake" for the second entry of a host).
    @Test func aRequestForCertificatesGetsThemOnEveryRequest() async throws {
        let fixture = try await NginxFixture.start()
        defer { fixture.stop() }
        let client = makeClient(maxConnections: 8, threads: 1)
        for _ in 0..<2 {
            var request = fixture.request("chain.aasa.test", "/missing")  // a 404 keeps its connection
            request.collectCertificates = true
            request.keepConnectionAfter = [404]
            let response = try await client.perform(request)
            #expect(response.status == 404)
            #expect(response.certificates.first?.subjectAltNames == ["aasa.test", "*.aasa.test"])
        }
        await client.shutdown()
    }

    /// `keepConnectionAfter`: a connection is kept only after the statuses named (a 404, which
    /// the legacy request follows) and closed after any other (a 200 ends the host), so a crawl
    /// holds no idle TLS connection that no request will use. HTTP/2 connections are always kept.
    @Test func onlyTheStatusesNamedKeepTheirConnection() async throws {
        let fixture = try await NginxFixture.start()
        defer { fixture.stop() }
        let client = makeClient(maxConnections: 8, threads: 1)
        var connections: [Int] = []
        for (path, kept) in [("/missing", true), ("/.well-known/apple-app-site-association", false)] {
            var first = fixture.request("keep.aasa.test", path)
            first.keepConnectionAfter = [404]
            let answer = try await client.perform(first)
            #expect(answer.status == (kept ? 404 : 200))
            var followUp = fixture.request("keep.aasa.test")
            followUp.after = answer.place
            #expect(try await client.perform(followUp).status == 200)
            _ = await waitUntil(timeout: .seconds(5)) { fixture.server.requests().count >= connections.count + 2 }
            let logged = fixture.server.requests().map(\.connection)
            #expect(logged.count == connections.count + 2)
            connections = logged
            let (a, b) = (logged[logged.count - 2], logged[logged.count - 1])
            #expect(kept ? a == b : a != b, "\(path): \(logged)")
        }
        await client.shutdown()
    }

    /// The connection a 404 came over is kept for the follow-up even while more transfers run on
    /// the loop than it keeps idle connections (libcurl counts connections in use against
    /// `CURLMOPT_MAXCONNECTS` too: with a fixed 32 it closed that connection at once).
    @Test func aFollowUpReusesItsConnectionWhileManyTransfersRun() async throws {
        let fixture = try await NginxFixture.start()
        defer { fixture.stop() }
        let client = makeClient(maxConnections: 64, threads: 1)  // keeps 32 idle connections
        let run = try await SlowRun.start(count: 40, delay: 3, client: client)
        defer { run.server.stop() }
        let (faults, log) = (run.server, run.log)
        let busy = await waitUntil(timeout: .seconds(10)) {
            (faults.requests().compactMap(\.inFlight).max() ?? 0) >= 36
        }
        #expect(busy, "the 40 slow transfers did not all run")
        let missing = try await client.perform(fixture.request("kept.aasa.test", "/missing"))
        #expect(missing.status == 404)
        var followUp = fixture.request("kept.aasa.test")
        followUp.after = missing.place
        #expect(try await client.perform(followUp).status == 200)
        #expect(await log.wait(for: 40))
        await client.shutdown()
        _ = await waitUntil(timeout: .seconds(5)) { fixture.server.requests().count >= 2 }
        let connections = fixture.server.requests().map(\.connection)
        #expect(connections.count == 2 && Set(connections).count == 1, "the follow-up made a new connection: \(connections)")
    }

    /// The CDN route's pattern: one request, then many at once; with one connection allowed per
    /// host, every later request is multiplexed on the first HTTP/2 connection.
    @Test func http2ConnectionIsReusedAfterTheFirstRequest() async throws {
        let fixture = try await NginxFixture.start()
        defer { fixture.stop() }
        let client = makeClient(maxConnections: 64, maxConnectionsPerHost: 1)
        var request = fixture.request("aasa.test")
        request.httpVersion = .http2
        #expect(try await client.perform(request).status == 200)
        let statuses = await withTaskGroup(of: Int.self) { group in
            for index in 0..<50 {
                var item = request
                item.url += "?n=\(index)"
                group.addTask { (try? await client.perform(item).status) ?? -1 }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        await client.shutdown()
        #expect(statuses == Array(repeating: 200, count: 50))
        _ = await waitUntil(timeout: .seconds(5)) { fixture.server.requests().count >= 51 }
        let logged = fixture.server.requests()
        #expect(logged.count == 51)
        #expect(Set(logged.map(\.connection)).count == 1, "connections: \(logged.map(\.connection))")
    }

    /// The CDN route over several loops: every HTTP/2 request to one host goes to that host's loop,
    /// so all of them ride on one connection, whichever loop the first one took.
    @Test func http2RequestsToOneHostShareOneConnectionOverSeveralLoops() async throws {
        let fixture = try await NginxFixture.start()
        defer { fixture.stop() }
        let client = makeClient(maxConnections: 64, maxConnectionsPerHost: 1, threads: 4)
        var request = fixture.request("aasa.test")
        request.httpVersion = .http2
        #expect(try await client.perform(request).status == 200)
        let statuses = await withTaskGroup(of: Int.self) { group in
            for index in 0..<40 {
                var item = request
                item.url += "?n=\(index)"
                group.addTask { (try? await client.perform(item).status) ?? -1 }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let perLoop = client.transfersStartedPerLoop
        await client.shutdown()
        #expect(statuses == Array(repeating: 200, count: 40))
        #expect(perLoop.filter { $0 > 0 } == [41], "transfers per loop: \(perLoop)")
        _ = await waitUntil(timeout: .seconds(5)) { fixture.server.requests().count >= 41 }
        let logged = fixture.server.requests()
        #expect(logged.count == 41)
        #expect(Set(logged.map(\.connection)).count == 1, "connections: \(Set(logged.map(\.connection)))")
    }

    @Test func closedPortIsAConnectFailure() async throws {
        let ca = try TestCA.shared()
        let port = try Loopback.freePort()
        let client = makeClient()
        let request = TransferRequest(
            url: "https://aasa.test/", caFile: ca.caCertPath, connectTo: ["::127.0.0.1:\(port)"],
            allowPrivateAddresses: true)
        let failure = await expectFailure { () async throws(TransferFailure) in try await client.perform(request) }
        await client.shutdown()
        #expect(failure?.kind == .connectFailure, "\(String(describing: failure))")
    }
}

