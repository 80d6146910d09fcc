import AASAFetchTestSupport
import Foundation
import Testing

/// `fetch` against a server that refuses only Apple's crawler: the code stays what Apple sees
/// (`http-client-error`, 403), and one extra request with another user agent adds the
/// `user-agent-blocked` warning that `diagnose` gives. Only after a 403, one request.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct UserAgentBlockedFetchTests {
    static let appID = "ABCDE12345.com.example.app"
    static let good = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/*"}]}]}}"#

    @Test func aServerThatRefusesOnlyAASABotGetsTheWarning() async throws {
        let ca = try TestCA.shared()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-ua-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let hosts = ["botblock.ua.test", "forbidden.ua.test", "missing.ua.test"]
        for host in hosts where host != "missing.ua.test" {
            let file = root.appendingPathComponent("\(host)/.well-known/apple-app-site-association")
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(Self.good.utf8).write(to: file)
        }
        try FileManager.default.createDirectory(at: root.appendingPathComponent("missing.ua.test"), withIntermediateDirectories: true)
        let json = "location ~ apple-app-site-association$ { default_type application/json; }"
        let leaf = try ca.leaf(for: hosts)
        let nginx = try await NginxServer.start(hosts: [
            NginxVirtualHost(certificate: leaf, serverNames: ["botblock.ua.test"], documentRoot: root.appendingPathComponent("botblock.ua.test").path,
                             directives: ["if ($http_user_agent ~ AASA-Bot) { return 403; }", json]),
            NginxVirtualHost(certificate: leaf, serverNames: ["forbidden.ua.test"], documentRoot: root.appendingPathComponent("forbidden.ua.test").path,
                             directives: ["return 403;"]),
            NginxVirtualHost(certificate: leaf, serverNames: ["missing.ua.test"], documentRoot: root.appendingPathComponent("missing.ua.test").path,
                             directives: [json]),
        ], http2: false)
        defer { nginx.stop() }
        let network = ["--cacert", ca.caCertPath, "--connect-to", nginx.connectTo, "--allow-private", "--retry-delays", ""]

        let run = try ToolRunner.run(network + hosts.flatMap { ["--domain", "applinks:\($0)"] } + ["--app-id", Self.appID, "--quiet", "--json"])
        #expect(run.status == 1)
        let report = try run.json()
        let blocked = try #require(report.domain("botblock.ua.test"))
        #expect(blocked["code"] as? String == "http-client-error", "the code Apple would see")
        #expect(blocked["httpStatus"] as? Int == 403)
        let findings = blocked["findings"] as? [[String: Any]] ?? []
        let warning = try #require(findings.first { $0["code"] as? String == "user-agent-blocked" }, "\(findings)")
        #expect(warning["severity"] as? String == "warning")
        #expect((warning["message"] as? String)?.contains("AASA-Bot/1.0.0 gets HTTP 403") == true, "\(warning)")
        #expect((warning["fix"] as? String)?.isEmpty == false)

        // A server that refuses everyone: no such warning; a 404: no extra request at all.
        #expect(!(try #require(report.domain("forbidden.ua.test"))).findingCodes.contains("user-agent-blocked"))
        #expect(!(try #require(report.domain("missing.ua.test"))).findingCodes.contains("user-agent-blocked"))

        let requests = nginx.requests()
        func agents(_ host: String) -> [String] { requests.filter { $0.host == host }.map { "\($0.userAgent) \($0.status)" } }
        let botblock = agents("botblock.ua.test")
        #expect(botblock.count == 2, "one extra request: \(botblock)")
        #expect(botblock.first == "AASA-Bot/1.0.0 403")
        #expect(botblock.last?.hasSuffix(" 200") == true && botblock.last?.hasPrefix("AASA-Bot") == false)
        #expect(agents("forbidden.ua.test").count == 2)
        #expect(agents("missing.ua.test").allSatisfy { $0.hasPrefix("AASA-Bot/1.0.0 404") }, "no extra request after a 404")

        // Human output: the warning under the host, the code unchanged.
        let human = try ToolRunner.run(network + ["--domain", "applinks:botblock.ua.test", "--app-id", Self.appID, "--quiet"])
        #expect(human.status == 1)
        #expect(human.stdout.contains("http-client-error"))
        #expect(human.stdout.contains("warning user-agent-blocked:"), "\(human.stdout)")
    }
}
