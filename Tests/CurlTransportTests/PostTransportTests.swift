import AASAFetchTestSupport
import CurlTransport
import Foundation
import Testing

/// POST with a body (the `refresh --notify` webhook): method, body bytes and content type reach
/// the server as given, redirects stay unfollowed, and plain HTTP is allowed only when asked.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct PostTransportTests {
    @Test func aBodyIsPostedAsGivenWithItsContentType() async throws {
        let (server, ca) = try await startFaultServer(FaultScript(default: .respond(status: 202, body: "accepted")))
        defer { server.stop() }
        let client = CurlClient()
        var request = faultRequest(server, ca, path: "/hook")
        let text = "{\"text\":\"a\\u0000b é ✔\"}" + String(repeating: "x", count: 5000)
        request.body = TransferBody(bytes: Array(text.utf8), contentType: "application/json")
        let response = try await client.perform(request)
        // The same client sends a GET next: the body does not stick.
        let plain = try await client.perform(faultRequest(server, ca, path: "/after"))
        await client.shutdown()
        #expect(response.status == 202 && response.body == Array("accepted".utf8))
        #expect(plain.status == 202)
        let logged = server.requests().filter { $0.event == "request" }
        #expect(logged.map { $0.method ?? "?" } == ["POST", "GET"])
        #expect(logged.first?.body == text)
        #expect(logged.first?.headers["content-type"] == "application/json")
        #expect(logged.first?.headers["content-length"] == String(text.utf8.count))
        #expect(logged.first?.headers["expect"] == nil, "no 100-continue wait")
        #expect(logged.last?.body == "")
    }

    @Test func aContentTypeWithALineBreakIsRefused() async throws {
        let client = CurlClient()
        var request = TransferRequest(url: "https://127.0.0.1:9/hook", allowPrivateAddresses: true)
        request.body = TransferBody(bytes: [], contentType: "application/json\r\nX-Injected: 1")
        let failure = await expectFailure { () async throws(TransferFailure) in try await client.perform(request) }
        #expect(failure?.kind == .invalidRequest)
        await client.shutdown()
    }

    @Test func plainHTTPIsAllowedOnlyWhenAsked() async throws {
        let port = try Loopback.freePort()
        let client = CurlClient()
        var request = TransferRequest(url: "http://127.0.0.1:\(port)/hook", connectTimeout: 2, allowPrivateAddresses: true)
        request.body = TransferBody(bytes: Array("{}".utf8), contentType: "application/json")
        let refused = await expectFailure { () async throws(TransferFailure) in try await client.perform(request) }
        #expect(refused?.kind == .invalidRequest, "\(String(describing: refused))")
        request.allowPlainHTTP = true
        let tried = await expectFailure { () async throws(TransferFailure) in try await client.perform(request) }
        #expect(tried?.kind == .connectFailure, "nothing listens there, but the request was made: \(String(describing: tried))")
        await client.shutdown()
    }
}
