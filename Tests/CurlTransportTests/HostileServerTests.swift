import AASAFetchTestSupport
import CurlTransport
import Foundation
import Testing

/// Servers that try to exhaust the client or smuggle requests: each ends in its own failure kind,
/// with memory bounded by the caps. Kinds are compared by their codes (what the store and the
/// JSON output carry).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct HostileServerTests {
    /// Chunked trailers without end: libcurl caps a response's headers but not trailers; the
    /// transport's own cap on header and trailer lines stops the transfer (before, memory grew by
    /// gigabytes until `maxTime`).
    @Test func endlessTrailersHitTheHeaderCap() async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: .endlessTrailers(body: "{}")))
        defer { server.stop() }
        let client = makeClient()
        var request = faultRequest(server, ca)
        request.maxTime = 60
        let failure = await expectFailure { () async throws(TransferFailure) in try await client.perform(request) }
        await client.shutdown()
        #expect(failure?.kind.rawValue == "headers-too-large", "\(String(describing: failure))")
        #expect(failure?.message.contains("\(TransferRequest.defaultMaxHeaderBytes) bytes") == true, "\(String(describing: failure))")
    }

    /// The cap counts every header line of a transfer: many ordinary headers add up to it.
    @Test func theHeaderCapIsConfigurable() async throws {
        let headers = (0..<40).map { ("X-Filler-\($0)", String(repeating: "f", count: 100)) }
        let (server, ca) = try await startFaultServer(FaultScript(default: .respond(headers: headers, body: "{}")))
        defer { server.stop() }
        let client = makeClient()
        var small = faultRequest(server, ca)
        small.maxHeaderBytes = 2048
        let failure = await expectFailure { () async throws(TransferFailure) in try await client.perform(small) }
        let response = try await client.perform(faultRequest(server, ca))
        await client.shutdown()
        #expect(failure?.kind.rawValue == "headers-too-large", "\(String(describing: failure))")
        #expect(response.status == 200)
        #expect(response.headers.count >= 40)
    }

    /// One header line of 1 MB: libcurl refuses it with "Out of memory"; it is the server's
    /// oversized header, not a memory problem of ours.
    @Test func aHugeHeaderLineIsHeadersTooLarge() async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: .bigHeader(headerBytes: 1024 * 1024)))
        defer { server.stop() }
        let client = makeClient()
        let failure = await expectFailure { () async throws(TransferFailure) in try await client.perform(faultRequest(server, ca)) }
        await client.shutdown()
        #expect(failure?.kind.rawValue == "headers-too-large", "\(String(describing: failure))")
    }

    /// An HTTP/0.9 answer (no status line) and plain garbage are not HTTP: `invalid-response`,
    /// never `invalid-request` (which means our own request was bad).
    @Test(arguments: ["{\"applinks\":{}}\n", "GARBAGE GARBAGE\r\n\r\n", "\u{0}\u{1}\u{2}binary"])
    func nonHTTPAnswersAreInvalidResponses(_ answer: String) async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: .raw(answer)))
        defer { server.stop() }
        let client = makeClient()
        let failure = await expectFailure { () async throws(TransferFailure) in try await client.perform(faultRequest(server, ca)) }
        await client.shutdown()
        #expect(failure?.kind.rawValue == "invalid-response", "\(String(describing: failure))")
    }

    /// A CR or LF in the user agent (or an extra header) would end its header line and add
    /// request headers of the caller's choosing (a second Host): the request is refused, unsent.
    @Test(arguments: ["AASA-Bot/1.0.0\r\nHost: evil.test", "AASA-Bot\nX-Injected: 1", "AASA\u{0}Bot"])
    func headerInjectionIsRefusedBeforeSending(_ agent: String) async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: .respond(body: "{}")))
        defer { server.stop() }
        let client = makeClient()
        var request = faultRequest(server, ca)
        request.userAgent = agent
        let failure = await expectFailure { () async throws(TransferFailure) in try await client.perform(request) }
        var extra = faultRequest(server, ca)
        extra.headers = ["X-Ok: 1\r\nHost: evil.test"]
        let extraFailure = await expectFailure { () async throws(TransferFailure) in try await client.perform(extra) }
        await client.shutdown()
        #expect(failure?.kind == .invalidRequest, "\(String(describing: failure))")
        #expect(extraFailure?.kind == .invalidRequest, "\(String(describing: extraFailure))")
        #expect(server.requests().filter { $0.event == "request" }.isEmpty, "a request reached the server")
    }
}

/// How the classifier tells the run's own failures and the new server failures apart (pure).
struct HostileFailureClassifierTests {
    /// A TLS alert read after the handshake (TLS 1.3's "certificate required") is the server
    /// refusing TLS with this client: `tls-failure`, not a broken connection that a retry may
    /// mend. Regression: `transfer-failure` under TLS 1.3, `tls-failure` under TLS 1.2.
    /// Lookups left to finish on their own threads are bounded: past the limit within the window,
    /// transfers join their resolver thread again. Regression: one thread per silent host, 3,007
    /// threads for 3,000 hosts. (Times far from the clock's: the real transfers of other tests,
    /// whose entries are older by wrap-around, do not count here, nor these there.)
    @Test func abandonedLookupsAreBounded() {
        let start = UInt64(1) << 62
        #expect(AbandonedLookups.mayAbandon(now: start))
        for index in 0..<AbandonedLookups.limit {
            AbandonedLookups.noteAbandoned(now: start + UInt64(index))
        }
        #expect(!AbandonedLookups.mayAbandon(now: start + 1_000_000_000))
        #expect(AbandonedLookups.mayAbandon(now: start + AbandonedLookups.window + UInt64(AbandonedLookups.limit) + 1))
    }

    @Test func aTLSAlertAfterTheHandshakeIsATLSFailure() {
        let alert = "OpenSSL SSL_read: error:0A00045C:SSL routines::tlsv13 alert certificate required, errno 0"
        #expect(FailureClassifier.classify(curlCode: CurlCode.recvError, tlsVerifyResult: 0, errorText: alert) == .tlsFailure)
        #expect(FailureClassifier.classify(curlCode: CurlCode.sendError, tlsVerifyResult: 0, errorText: alert) == .tlsFailure)
        #expect(FailureClassifier.classify(curlCode: CurlCode.recvError, tlsVerifyResult: 0, errorText: "Connection reset by peer") == .transferFailure)
    }

    @Test func aDescriptorShortageIsNeverTheHosts() {
        for code in [CurlCode.couldntConnect, CurlCode.couldntResolveHost, CurlCode.sslCACertBadFile, CurlCode.outOfMemory] {
            #expect(FailureClassifier.classify(curlCode: code, tlsVerifyResult: 0, errorText: "", descriptorShortage: true) == .descriptorsExhausted)
        }
        #expect(FailureClassifier.classify(curlCode: CurlCode.couldntConnect, tlsVerifyResult: 0, errorText: "") == .connectFailure)
        // A refusal of our own (a private address, a cap) stays what it is.
        #expect(FailureClassifier.classify(curlCode: CurlCode.couldntConnect, tlsVerifyResult: 0, errorText: "",
                                           refusedPrivateAddress: true, descriptorShortage: true) == .privateAddress)
    }

    /// libcurl's threaded resolver that cannot start its thread asked nothing of DNS: the run's
    /// failure (`threads-exhausted`), not the host's `dns-failure`.
    @Test func aResolverThreadThatCannotStartIsNeverTheHosts() {
        let text = "getaddrinfo() thread failed to start"
        #expect(FailureClassifier.resolverThreadFailure == text)
        #expect(FailureClassifier.classify(curlCode: CurlCode.couldntResolveHost, tlsVerifyResult: 0, errorText: text) == .threadsExhausted)
        #expect(TransferFailureKind.threadsExhausted.isProcessShortage && TransferFailureKind.descriptorsExhausted.isProcessShortage)
        #expect(FailureClassifier.classify(curlCode: CurlCode.couldntResolveHost, tlsVerifyResult: 0,
                                           errorText: "Could not resolve host: a.example") == .dnsFailure)
        #expect(!TransferFailureKind.dnsFailure.isProcessShortage)
    }

    @Test func serverAnswersThatAreNotHTTP() {
        #expect(FailureClassifier.classify(curlCode: CurlCode.unsupportedProtocol, tlsVerifyResult: 0,
                                           errorText: "Received HTTP/0.9 when not allowed") == .invalidResponse)
        #expect(FailureClassifier.classify(curlCode: CurlCode.weirdServerReply, tlsVerifyResult: 0, errorText: "") == .invalidResponse)
        #expect(FailureClassifier.classify(curlCode: CurlCode.unsupportedProtocol, tlsVerifyResult: 0,
                                           errorText: "Protocol \"ftp\" not supported") == .invalidRequest)
    }

    @Test func oversizedHeaders() {
        #expect(FailureClassifier.classify(curlCode: CurlCode.writeError, tlsVerifyResult: 0, errorText: "", headerLimitExceeded: true) == .headersTooLarge)
        #expect(FailureClassifier.classify(curlCode: CurlCode.outOfMemory, tlsVerifyResult: 0, errorText: "Out of memory") == .headersTooLarge)
        #expect(FailureClassifier.classify(curlCode: CurlCode.recvError, tlsVerifyResult: 0,
                                           errorText: "Too large response headers: 307300 > 307200") == .headersTooLarge)
    }
}
