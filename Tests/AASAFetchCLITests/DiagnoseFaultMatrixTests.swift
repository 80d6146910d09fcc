import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

/// `aasa-fetch diagnose` (and `--route cdn|both`) end to end over a fault matrix: a real nginx as
/// the origins, a second nginx speaking HTTP/2 as a local fake Apple CDN (404s with `Apple-*`
/// headers per location), and the fault server for stalls, resets, never-answering hosts and
/// "500 then 200". Everything on 127.0.0.1; every server is stopped by the test that started it.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct DiagnoseFaultMatrixTests {
    static let appID = "ABCDE12345.com.example.app"
    static let good = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/*"}]}]},"webcredentials":{"apps":["ABCDE12345.com.example.app"]}}"#
    static let older = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/old/*"}]}]},"webcredentials":{"apps":["ABCDE12345.com.example.app"]}}"#
    static let otherApp = #"{"applinks":{"details":[{"appIDs":["ZYXWV98765.com.example.other"],"components":[{"/":"/*"}]}]}}"#
    static let syntaxError = "{\n  \"applinks\": {\n    \"details\": [\n      {\"appIDs\": [\"ABCDE12345.com.example.app\"],}\n    ]\n  }\n}\n"

    /// The three servers and the arguments that reach them.
    struct Fixture {
        let origin: NginxServer
        let cdn: NginxServer
        let fault: FaultServer
        let ca: TestCA
        let root: URL

        func stop() {
            origin.stop()
            cdn.stop()
            fault.stop()
            try? FileManager.default.removeItem(at: root)
        }

        static let faultHosts = ["never.test", "stall.test", "reset.test", "retry.test", "chunked.test"]

        /// Sends the CDN and the fault hosts to their servers, everything else to the origin nginx;
        /// short timeouts and retries so the suite stays fast.
        var network: [String] {
            // The CDN URL carries its own port: libcurl 7.88 keys its connection bundles by the
            // --connect-to target's host and the URL's port, so with a CDN URL on 443 sent to
            // 127.0.0.1 the CDN shared a bundle with the HTTP/1.1 origin connections
            // (developer-mode entries) and could not multiplex; real CDN and origin hosts never
            // share a name.
            var arguments = ["--cacert", ca.caCertPath, "--connect-to", "cdn.test:\(cdn.port):127.0.0.1:\(cdn.port)"]
            for host in Self.faultHosts { arguments += ["--connect-to", "\(host):443:127.0.0.1:\(fault.port)"] }
            arguments += ["--connect-to", origin.connectTo, "--allow-private", "--retry-delays", "0.05",
                          "--connect-timeout", "1", "--max-time", "2", "--cdn-base", "https://cdn.test:\(cdn.port)/a/v1/"]
            return arguments
        }

        static func start() async throws -> Fixture {
            let ca = try TestCA.shared()
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-diagnose-\(UUID().uuidString)")
            func site(_ host: String, wellKnown: String? = nil, legacy: String? = nil) throws -> String {
                let dir = root.appendingPathComponent(host)
                try FileManager.default.createDirectory(at: dir.appendingPathComponent(".well-known"), withIntermediateDirectories: true)
                if let wellKnown { try Data(wellKnown.utf8).write(to: dir.appendingPathComponent(".well-known/apple-app-site-association")) }
                if let legacy { try Data(legacy.utf8).write(to: dir.appendingPathComponent("apple-app-site-association")) }
                return dir.path
            }
            let json = "location ~ apple-app-site-association$ { default_type application/json; }"
            let plain: [(String, String?, [String])] = [
                ("approved.test", good, [json]),
                ("wild.test", good, [json]),
                ("botblock.test", good, ["if ($http_user_agent ~ AASA-Bot) { return 403; }", json]),
                ("e404.test", nil, []),
                ("e410.test", nil, ["return 410;"]),
                ("e429.test", nil, ["return 429;"]),
                ("e503.test", nil, ["return 503;"]),
                ("html.test", "<!DOCTYPE html><html><body>app</body></html>", ["default_type text/html;"]),
                ("bom.test", "\u{FEFF}" + good, [json]),
                ("syntax.test", syntaxError, [json]),
                ("noapplinks.test", #"{"hello":"world"}"#, [json]),
                ("missingapp.test", otherApp, [json]),
                ("webcredonly.test", #"{"webcredentials":{"apps":["ABCDE12345.com.example.app"]}}"#, [json]),
                ("big.test", "{\"applinks\":{\"details\":[]},\"pad\":\"" + String(repeating: "x", count: 200 * 1024) + "\"}", [json]),
                ("stale.test", good, [json]),
                ("stalemissing.test", good, [json]),
            ]
            let redirects = [301, 302, 307, 308]
            let names = plain.map(\.0) + redirects.map { "r\($0).test" } + ["legacy.test", "bomb.test"]
            let valid = try ca.leaf(for: names)
            var hosts: [NginxVirtualHost] = try plain.map { host, body, directives in
                NginxVirtualHost(certificate: valid, serverNames: [host], documentRoot: try site(host, wellKnown: body), directives: directives)
            }
            for status in redirects {
                hosts.append(NginxVirtualHost(certificate: valid, serverNames: ["r\(status).test"], documentRoot: try site("r\(status).test"),
                                              directives: ["return \(status) https://approved.test$request_uri;"]))
            }
            hosts.append(NginxVirtualHost(certificate: valid, serverNames: ["legacy.test"], documentRoot: try site("legacy.test", legacy: good), directives: [json]))
            let bombDir = try site("bomb.test")
            let bomb = try ChildProcess.run("/bin/sh", ["-c", "head -c 20000000 /dev/zero | gzip -9 > '\(bombDir)/.well-known/apple-app-site-association.gz'"],
                                            timeout: .seconds(30))
            #expect(bomb.status == 0)
            hosts.append(NginxVirtualHost(certificate: valid, serverNames: ["bomb.test"], documentRoot: bombDir, directives: ["gzip_static always;", json]))
            for (host, kind) in [("expired.test", TestCA.LeafKind.expired), ("future.test", .notYetValid),
                                 ("selfsigned.test", .selfSigned), ("untrusted.test", .untrustedIssuer),
                                 ("untrustedexpired.test", .untrustedExpired)] {
                hosts.append(NginxVirtualHost(certificate: try ca.leaf(for: [host], kind: kind), serverNames: [host],
                                              documentRoot: try site(host, wellKnown: good), directives: [json]))
            }
            hosts.append(NginxVirtualHost(certificate: try ca.leaf(for: ["someone-else.test"]), serverNames: ["wrongname.test"],
                                          documentRoot: try site("wrongname.test", wellKnown: good), directives: [json]))
            let origin = try await NginxServer.start(hosts: hosts, http2: false)

            // The fake CDN: copies under /a/v1/HOST, failures as 404s with Apple-* headers.
            let cdnRoot = root.appendingPathComponent("cdn")
            try FileManager.default.createDirectory(at: cdnRoot.appendingPathComponent("a/v1"), withIntermediateDirectories: true)
            for (host, body) in [("approved.test", good), ("wild.test", good), ("stale.test", older), ("stalemissing.test", otherApp)] {
                try Data(body.utf8).write(to: cdnRoot.appendingPathComponent("a/v1/\(host)"))
            }
            // A copy over the size limit: an answer, not a missing one.
            try Data(repeating: 0x20, count: 200_000).write(to: cdnRoot.appendingPathComponent("a/v1/huge.test"))
            func failure(_ host: String, reason: String, details: String, tryDirect: Bool, maxAge: Int, padding: Int = 0) -> String {
                """
                location = /a/v1/\(host) {
                \((0..<padding).map { "    add_header X-Pad-\($0) \"\(String(repeating: "p", count: 4000))\" always;\n" }.joined())
                    add_header Apple-Failure-Reason "\(reason)" always;
                    add_header Apple-Failure-Details '\(details)' always;
                    add_header Apple-From "https://\(host)/.well-known/apple-app-site-association" always;
                    add_header Apple-Try-Direct \(tryDirect) always;
                    add_header Cache-Control "max-age=\(maxAge),public" always;
                    return 404 "Not Found";
                }
                """
            }
            let cdnDirectives = [
                "default_type application/json;",
                "location /a/v1/ { add_header Apple-Origin-Format json; add_header Cache-Control \"max-age=21600,public\"; }",
                "location = /a/v1/stale.test { add_header Age 5000; add_header Cache-Control \"max-age=21600,public\"; }",
                "location = /a/v1/stalemissing.test { add_header Age 7000; add_header Cache-Control \"max-age=21600,public\"; }",
                failure("swc101.test", reason: "SWCERR00101 Bad HTTP Response: 404 Not Found", details: #"{"status":"404 Not Found"}"#, tryDirect: false, maxAge: 3600),
                failure("botblock.test", reason: "SWCERR00101 Bad HTTP Response: 403 Forbidden", details: #"{"status":"403 Forbidden"}"#, tryDirect: false, maxAge: 3600),
                failure("swc301.test", reason: "SWCERR00301 Timeout",
                        details: #"{"cause":"context deadline exceeded (Client.Timeout exceeded while awaiting headers)"}"#, tryDirect: true, maxAge: 1800),
                failure("swc202.test", reason: "SWCERR00202 Connections to private/reserved IP addresses are not allowed",
                        details: #"{"cause":"private address"}"#, tryDirect: false, maxAge: 3600),
                // Header blocks larger than libcurl's HTTP/2 receive buffer was (8 KiB), in lines
                // nginx accepts (4 KB a parameter).
                failure("longcause.test", reason: "SWCERR00301 Timeout", details: #"{"cause":"slow"}"#, tryDirect: true, maxAge: 1800,
                        padding: 3),
                failure("longercause.test", reason: "SWCERR00301 Timeout", details: #"{"cause":"slow"}"#, tryDirect: true, maxAge: 1800,
                        padding: 10),
                "location = /a/v1/unknown.test { return 405; }",
                "location = /a/v1/down.test { return 503; }",
                "location = /a/v1/nocopy.test { return 404 \"Not Found\"; }",
            ]
            let cdn: NginxServer
            do {
                cdn = try await NginxServer.start(
                    hosts: [NginxVirtualHost(certificate: try ca.leaf(for: ["cdn.test"]), serverNames: ["cdn.test"],
                                             documentRoot: cdnRoot.path, directives: cdnDirectives)],
                    http2: true)
            } catch {
                origin.stop()
                throw error
            }

            let faultCertificate = try ca.leaf(for: Self.faultHosts)
            let script = FaultScript(
                default: .respond(status: 404, body: "not found"),
                hosts: [
                    "never.test": .neverAnswer,
                    "stall.test": .stallAfterHeaders(contentLength: 1000),
                    "reset.test": .resetMidBody(contentLength: 1000, partialBytes: 100),
                    "retry.test": .sequence([.respond(status: 500, body: "busy"),
                                             .respond(headers: [("Content-Type", "application/json")], body: good)]),
                    "chunked.test": .respond(headers: [("Content-Type", "application/json")], body: String(repeating: "x", count: 1024),
                                             repeat: 200, chunked: true),
                ])
            let fault: FaultServer
            do {
                fault = try await FaultServer.start(script: script, certificate: faultCertificate)
            } catch {
                origin.stop()
                cdn.stop()
                throw error
            }
            return Fixture(origin: origin, cdn: cdn, fault: fault, ca: ca, root: root)
        }
    }

    /// What one scenario must give.
    struct Scenario: CustomStringConvertible {
        var arguments: [String]
        var exit: Int32
        var failedStep: String?
        var code: String
        /// A step expected to be warned (with its code), for scenarios that pass with a warning.
        var warned: (step: String, code: String)? = nil

        var description: String { arguments.joined(separator: " ") }
    }

    /// Runs `diagnose` for a scenario and checks step, code, exit status, no crash and no hang.
    @discardableResult
    static func check(_ scenario: Scenario, network: [String]) throws -> [String: Any] {
        let started = ContinuousClock.now
        let result = try ToolRunner.run(["diagnose"] + scenario.arguments + network + ["--json"], timeout: .seconds(60))
        let elapsed = ContinuousClock.now - started
        #expect(elapsed < .seconds(30), "\(scenario) took \(elapsed)")
        #expect(!result.stderr.contains("Fatal error"), "\(scenario): \(result.stderr)")
        #expect(result.status == scenario.exit, "\(scenario): exit \(result.status)\n\(result.stdout.prefix(3000))\n\(result.stderr)")
        let report = try result.json()
        let diagnosis = try #require((report["diagnoses"] as? [[String: Any]])?.first, "\(scenario)")
        #expect(diagnosis["failedStep"] as? String == scenario.failedStep, "\(scenario): \(diagnosis["failedStep"] ?? "nil") \(diagnosis["code"] ?? "")")
        #expect(diagnosis["code"] as? String == scenario.code, "\(scenario): \(diagnosis["code"] ?? "")")
        let steps = diagnosis["steps"] as? [[String: Any]] ?? []
        if let failedStep = scenario.failedStep {
            let step = try #require(steps.first { $0["step"] as? String == failedStep && $0["status"] as? String == "failed" }, "\(scenario)")
            #expect((step["fix"] as? String)?.isEmpty == false, "\(scenario): a failed step says what to change")
            // The walk stops at the first failure: nothing but the user-agent check after it.
            let index = steps.firstIndex { $0["step"] as? String == failedStep && $0["status"] as? String == "failed" } ?? 0
            #expect(steps[(index + 1)...].allSatisfy { $0["step"] as? String == "user-agent" }, "\(scenario)")
        }
        if let warned = scenario.warned {
            #expect(steps.contains { $0["step"] as? String == warned.step && $0["status"] as? String == "warned" && $0["code"] as? String == warned.code },
                    "\(scenario): \(steps.map { "\($0["step"] ?? ""):\($0["status"] ?? ""):\($0["code"] ?? "")" })")
        }
        return diagnosis
    }

    static func host(_ host: String, exit: Int32, step: String?, code: String, warned: (String, String)? = nil) -> Scenario {
        Scenario(arguments: [host, "--app-id", appID], exit: exit, failedStep: step, code: code,
                 warned: warned.map { (step: $0.0, code: $0.1) })
    }

    static func entry(_ entry: String, exit: Int32, step: String?, code: String, warned: (String, String)? = nil, route: String? = nil) -> Scenario {
        Scenario(arguments: ["--domain", entry, "--app-id", appID] + (route.map { ["--route", $0] } ?? []), exit: exit,
                 failedStep: step, code: code, warned: warned.map { (step: $0.0, code: $0.1) })
    }

    @Test func originFaults() async throws {
        let fixture = try await Fixture.start()
        defer { fixture.stop() }
        let scenarios: [Scenario] = [
            Self.host("approved.test", exit: 0, step: nil, code: "ok", warned: ("tls", "custom-root")),
            Self.entry("applinks:*.wild.test", exit: 0, step: nil, code: "ok"),
            Self.host("legacy.test", exit: 0, step: nil, code: "ok", warned: ("http", "legacy-root-path")),
            Self.host("r301.test", exit: 1, step: "http", code: "http-redirect"),
            Self.host("r302.test", exit: 1, step: "http", code: "http-redirect"),
            Self.host("r307.test", exit: 1, step: "http", code: "http-redirect"),
            Self.host("r308.test", exit: 1, step: "http", code: "http-redirect"),
            Self.host("botblock.test", exit: 1, step: "http", code: "user-agent-blocked"),
            Self.host("e404.test", exit: 1, step: "http", code: "http-client-error"),
            Self.host("e410.test", exit: 1, step: "http", code: "http-client-error"),
            Self.host("e429.test", exit: 1, step: "http", code: "http-client-error"),
            Self.host("e503.test", exit: 1, step: "http", code: "http-server-error"),
            Self.host("html.test", exit: 1, step: "json", code: "invalid-json"),
            Self.host("bom.test", exit: 0, step: nil, code: "ok", warned: ("json", "bom")),
            Self.host("syntax.test", exit: 1, step: "json", code: "invalid-json"),
            Self.host("noapplinks.test", exit: 1, step: "structure", code: "not-an-association-file"),
            Self.host("missingapp.test", exit: 1, step: "association", code: "app-not-listed"),
            Self.host("webcredonly.test", exit: 1, step: "association", code: "app-not-listed"),
            Self.host("big.test", exit: 1, step: "http", code: "too-large"),
            Self.host("bomb.test", exit: 1, step: "http", code: "too-large"),
            Self.entry("applinks:approved.test:8443", exit: 1, step: "entitlement", code: "entitlement-port"),
        ]
        var diagnoses: [String: [String: Any]] = [:]
        for scenario in scenarios {
            diagnoses[scenario.arguments[scenario.arguments[0] == "--domain" ? 1 : 0]] = try Self.check(scenario, network: fixture.network)
        }

        // The redirect names its target; the wildcard is fetched from its parent.
        let redirect = try #require(diagnoses["r307.test"]?["steps"] as? [[String: Any]])
        #expect(redirect.contains { ($0["details"] as? [String])?.contains("Location: https://approved.test/.well-known/apple-app-site-association") == true })
        #expect(diagnoses["applinks:*.wild.test"]?["host"] as? String == "wild.test")
        // The syntax error: line, column and the offending text.
        let syntax = try #require((diagnoses["syntax.test"]?["steps"] as? [[String: Any]])?.first { $0["step"] as? String == "json" })
        #expect((syntax["summary"] as? String)?.contains("line 4") == true, "\(syntax)")
        #expect((syntax["details"] as? [String])?.first?.contains("ABCDE12345.com.example.app\"],}") == true, "\(syntax)")
        // The bot filter: 403 for AASA-Bot only, 200 for the device and the browser.
        let agents = try #require(diagnoses["botblock.test"]?["userAgents"] as? [[String: Any]])
        #expect(agents.map { $0["httpStatus"] as? Int } == [403, 200, 200])
        // Only under webcredentials: said so.
        let webcred = try #require((diagnoses["webcredonly.test"]?["steps"] as? [[String: Any]])?.first { $0["step"] as? String == "association" })
        #expect((webcred["summary"] as? String)?.contains("only under webcredentials") == true)
        // DNS and TLS details: the address came from --connect-to, the chain ends at the test root.
        let approved = try #require(diagnoses["approved.test"]?["steps"] as? [[String: Any]])
        #expect(approved.map { $0["step"] as? String ?? "" }
            == ["entitlement", "host", "dns", "tcp", "tls", "http", "json", "structure", "association", "user-agent"])
        let dns = try #require(approved.first { $0["step"] as? String == "dns" })
        #expect((dns["details"] as? [String])?.contains { $0.contains("--connect-to") } == true)
        let tls = try #require(approved.first { $0["step"] as? String == "tls" })
        #expect((tls["details"] as? [String])?.contains { $0.contains("chain ends at") && $0.contains("AASA Test Root CA") } == true, "\(tls)")
    }

    @Test func certificatesAndDeveloperMode() async throws {
        let fixture = try await Fixture.start()
        defer { fixture.stop() }
        let scenarios: [Scenario] = [
            Self.host("expired.test", exit: 1, step: "tls", code: "tls-expired"),
            Self.host("future.test", exit: 1, step: "tls", code: "tls-not-yet-valid"),
            Self.host("wrongname.test", exit: 1, step: "tls", code: "tls-hostname-mismatch"),
            Self.host("selfsigned.test", exit: 1, step: "tls", code: "tls-untrusted"),
            Self.host("untrusted.test", exit: 1, step: "tls", code: "tls-untrusted"),
            // The chain first, as libcurl and fetch judge it (it said tls-expired from the
            // certificate fetched again unverified); in developer mode the dates decide.
            Self.host("untrustedexpired.test", exit: 1, step: "tls", code: "tls-untrusted"),
            Self.entry("applinks:untrustedexpired.test?mode=developer", exit: 1, step: "tls", code: "tls-expired"),
            // Developer mode: any valid certificate, but never an expired or wrongly named one.
            Self.entry("applinks:selfsigned.test?mode=developer", exit: 0, step: nil, code: "ok", warned: ("tls", "tls-untrusted")),
            Self.entry("applinks:untrusted.test?mode=developer", exit: 0, step: nil, code: "ok", warned: ("tls", "tls-untrusted")),
            Self.entry("applinks:expired.test?mode=developer", exit: 1, step: "tls", code: "tls-expired"),
            Self.entry("applinks:wrongname.test?mode=developer", exit: 1, step: "tls", code: "tls-hostname-mismatch"),
        ]
        var diagnoses: [String: [String: Any]] = [:]
        for scenario in scenarios {
            diagnoses[scenario.description] = try Self.check(scenario, network: fixture.network)
        }
        // What the failing certificate says, read without trusting it.
        let wrong = try #require((diagnoses[Self.host("wrongname.test", exit: 1, step: nil, code: "").description]?["steps"] as? [[String: Any]])?
            .first { $0["step"] as? String == "tls" })
        #expect((wrong["details"] as? [String])?.contains { $0.contains("someone-else.test") } == true, "\(wrong)")
        // Developer-mode entries: reported as such, fetched directly with the device's agent.
        let developer = try #require(diagnoses[Self.entry("applinks:selfsigned.test?mode=developer", exit: 0, step: nil, code: "").description])
        #expect(developer["developerMode"] as? Bool == true)
        #expect(developer["route"] as? String == "origin")
        #expect(await waitUntil(timeout: .seconds(5)) {
            fixture.origin.requests().contains { $0.host == "selfsigned.test" && $0.userAgent.hasPrefix("swcd ") }
        })

        // A host on a private address, without --allow-private: refused at the DNS step, no request sent.
        let before = fixture.origin.requests().count
        let privateNetwork = fixture.network.filter { $0 != "--allow-private" }
        let refused = try Self.check(Self.host("approved.test", exit: 1, step: "dns", code: "private-address"), network: privateNetwork)
        let dns = try #require((refused["steps"] as? [[String: Any]])?.first { $0["step"] as? String == "dns" })
        #expect((dns["details"] as? [String])?.contains { $0.contains("127.0.0.1 (private or reserved)") } == true)
        #expect(fixture.origin.requests().count == before)
    }

    @Test func brokenServers() async throws {
        let fixture = try await Fixture.start()
        defer { fixture.stop() }
        let scenarios: [Scenario] = [
            Self.host("never.test", exit: 1, step: "tls", code: "timeout"),
            Self.host("stall.test", exit: 1, step: "http", code: "timeout"),
            Self.host("reset.test", exit: 1, step: "http", code: "transfer-failure"),
            Self.host("chunked.test", exit: 1, step: "http", code: "too-large"),
            Self.host("retry.test", exit: 0, step: nil, code: "ok"),
        ]
        for scenario in scenarios {
            let diagnosis = try Self.check(scenario, network: fixture.network)
            if scenario.arguments[0] == "retry.test" {
                let http = try #require((diagnosis["steps"] as? [[String: Any]])?.first { $0["step"] as? String == "http" })
                #expect((http["details"] as? [String])?.contains { $0.contains("HTTP 500") && $0.contains("HTTP 200") } == true, "\(http)")
            }
        }
        // A port nobody listens on: the TCP step fails.
        let closed = try Loopback.freePort()
        try Self.check(Self.host("approved.test", exit: 1, step: "tcp", code: "connect-failure"),
                       network: ["--connect-to", "::127.0.0.1:\(closed)", "--allow-private", "--connect-timeout", "1", "--max-time", "2", "--retry-delays", ""])
    }

    @Test func appleCDN() async throws {
        let fixture = try await Fixture.start()
        defer { fixture.stop() }
        let cdnScenarios: [Scenario] = [
            Self.entry("applinks:approved.test", exit: 0, step: nil, code: "ok", route: "cdn"),
            Self.entry("applinks:swc101.test", exit: 1, step: "cdn", code: "cdn-origin-failure", route: "cdn"),
            Self.entry("applinks:swc301.test", exit: 1, step: "cdn", code: "cdn-origin-failure", route: "cdn"),
            Self.entry("applinks:swc202.test", exit: 1, step: "cdn", code: "cdn-origin-failure", route: "cdn"),
            Self.entry("applinks:longcause.test", exit: 1, step: "cdn", code: "cdn-origin-failure", route: "cdn"),
            Self.entry("applinks:longercause.test", exit: 1, step: "cdn", code: "cdn-origin-failure", route: "cdn"),
            Self.entry("applinks:unknown.test", exit: 1, step: "cdn", code: "cdn-unknown-domain", route: "cdn"),
            Self.entry("applinks:nocopy.test", exit: 1, step: "cdn", code: "cdn-not-found", route: "cdn"),
            Self.entry("applinks:botblock.test", exit: 1, step: "cdn", code: "cdn-origin-failure", route: "cdn"),
            Self.entry("applinks:stale.test", exit: 0, step: nil, code: "ok", warned: ("cdn", "cdn-stale"), route: "both"),
            Self.entry("applinks:stalemissing.test", exit: 1, step: "cdn", code: "cdn-stale", route: "both"),
            Self.entry("applinks:approved.test", exit: 0, step: nil, code: "ok", route: "both"),
            // ?mode=developer goes to the origin whatever the route.
            Self.entry("applinks:swc101.test?mode=developer", exit: 1, step: "tls", code: "tls-hostname-mismatch", route: "cdn"),
        ]
        var diagnoses: [String: [String: Any]] = [:]
        for scenario in cdnScenarios {
            diagnoses[scenario.arguments[1] + (scenario.arguments.last ?? "")] = try Self.check(scenario, network: fixture.network)
        }
        func headers(_ key: String) throws -> [String: Any] {
            try #require((diagnoses[key]?["cdn"] as? [String: Any])?["headers"] as? [String: Any], "\(key)")
        }
        let h101 = try headers("applinks:swc101.testcdn")
        #expect(h101["swcError"] as? String == "SWCERR00101")
        #expect(h101["originStatus"] as? Int == 404)
        #expect(h101["tryDirect"] as? Bool == false)
        #expect(h101["from"] as? String == "https://swc101.test/.well-known/apple-app-site-association")
        #expect((h101["failureDetails"] as? [String: String])?["status"] == "404 Not Found")
        #expect(h101["httpVersion"] as? String == "2")
        let h301 = try headers("applinks:swc301.testcdn")
        #expect(h301["swcError"] as? String == "SWCERR00301")
        #expect(h301["tryDirect"] as? Bool == true)
        #expect(h301["maxAge"] as? Int == 1800)
        #expect(try headers("applinks:swc202.testcdn")["swcError"] as? String == "SWCERR00202")
        // A header block of 12 KB and of 40 KB over HTTP/2 is decoded (it timed out, or read as HTTP/0.9).
        for host in ["longcause", "longercause"] {
            #expect(try headers("applinks:\(host).testcdn")["swcError"] as? String == "SWCERR00301", "\(host)")
        }
        // The CDN says 403: the user-agent check on the origin finds the bot filter.
        #expect(try headers("applinks:botblock.testcdn")["originStatus"] as? Int == 403)
        let botSteps = diagnoses["applinks:botblock.testcdn"]?["steps"] as? [[String: Any]] ?? []
        #expect(botSteps.contains { $0["step"] as? String == "user-agent" && $0["code"] as? String == "user-agent-blocked" })
        // Once: it was listed twice when no http step had failed before it.
        #expect(botSteps.filter { $0["step"] as? String == "user-agent" }.count == 1, "\(botSteps)")
        #expect(Set(botSteps.compactMap { $0["step"] as? String }).count == botSteps.count, "a step is listed twice: \(botSteps)")
        // Stale: compared by meaning, with the CDN's Age and Cache-Control.
        let stale = try #require(diagnoses["applinks:stale.testboth"]?["cdn"] as? [String: Any])
        #expect((stale["changes"] as? [[String: Any]])?.first?["kind"] as? String == "rules-changed")
        let staleStep = try #require((diagnoses["applinks:stale.testboth"]?["steps"] as? [[String: Any]])?.first { $0["step"] as? String == "cdn" })
        #expect((staleStep["summary"] as? String)?.contains("Age 5000") == true, "\(staleStep)")
        #expect(diagnoses["applinks:swc101.test?mode=developercdn"]?["route"] as? String == "origin")
    }

    /// A CDN that answers 503 is retried on the same HTTP/2 connection, seconds later (libcurl
    /// closed it after 2 s idle, so a retry opened another), and recorded as transient: next check
    /// in 3 h, not 24. A copy over the size limit is the CDN's answer (`cdn-http-error`), not "no
    /// answer"; a `--cdn-base` libcurl cannot use is a usage error, not every host's failure.
    @Test func cdnFailuresAreJudgedAsTheOrigin() async throws {
        let fixture = try await Fixture.start()
        defer { fixture.stop() }
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-cdn-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let run = try ToolRunner.run(fixture.network + ["--quiet", "--route", "cdn", "--app-id", Self.appID, "--json", "--retry-delays", "3.5",
                                                        "--domain", "applinks:down.test"],
                                     cache: cache, timeout: .seconds(90))
        #expect(run.status == 1, "\(run.stderr)")
        let down = try #require(try run.json().domain("down.test"), "\(run.stdout)")
        #expect(down["code"] as? String == "cdn-http-error", "\(down)")
        #expect((down["attempts"] as? [Any])?.count == 2, "\(down)")
        let downRequests = fixture.cdn.requests().filter { $0.uri.hasSuffix("/down.test") }
        #expect(downRequests.count == 2, "\(downRequests)")
        #expect(Set(downRequests.map(\.connection)).count == 1, "one connection, the retry included: \(downRequests.map { "\($0.connection) \($0.uri)" })")

        let huge = try #require(try ToolRunner.run(fixture.network + ["--quiet", "--route", "cdn", "--app-id", Self.appID, "--json",
                                                                      "--domain", "applinks:huge.test", "--no-store"]).json().domain("huge.test"))
        #expect(huge["code"] as? String == "cdn-http-error", "\(huge)")
        #expect((huge["reason"] as? String)?.contains("too-large") == true, "\(huge)")

        let shown = try ToolRunner.run(["show", "--json"], cache: cache)
        let hosts = (try shown.json()["hosts"] as? [[String: Any]]) ?? []
        let record = try #require(hosts.first { $0["host"] as? String == "down.test" }, "\(shown.stdout)")
        let fetched = try #require((record["fetchedAt"] as? String).flatMap(Timestamp.parse))
        let next = try #require((record["nextCheck"] as? String).flatMap(Timestamp.parse))
        #expect(abs(next.timeIntervalSince(fetched) - 3 * 3600) < 120, "a CDN 503 is transient: \(record)")

        for base in ["https://cdn.test:99999/a/v1/", "https://cdn.test/a v1/", "https://cdn.test/a/v1/ "] {
            let bad = try ToolRunner.run(fixture.network + ["--quiet", "--route", "cdn", "--app-id", Self.appID, "--cdn-base", base,
                                                            "--domain", "applinks:approved.test", "--no-store"])
            #expect(bad.status == 64, "\(base): \(bad.stderr)")
            #expect(bad.stderr.contains("--cdn-base"), "\(base): \(bad.stderr)")
        }
    }

    /// `fetch --route cdn|both`: one HTTP/2 connection to the CDN for every domain; `both`
    /// compares by meaning and a CDN that is behind is a warning, not a failure.
    @Test func fetchRoutes() async throws {
        let fixture = try await Fixture.start()
        defer { fixture.stop() }
        let entries = ["applinks:approved.test", "applinks:*.wild.test", "applinks:swc101.test", "applinks:stale.test",
                       "applinks:unknown.test", "applinks:approved.test?mode=developer"]
        let cdn = try ToolRunner.run(fixture.network + ["--quiet", "--route", "cdn", "--app-id", Self.appID, "--json"]
            + entries.flatMap { ["--domain", $0] })
        #expect(cdn.status == 1, "\(cdn.stderr)")
        let report = try cdn.json()
        let domains = report["domains"] as? [[String: Any]] ?? []
        func record(_ host: String, _ route: String) -> [String: Any]? {
            domains.first { $0["host"] as? String == host && $0["route"] as? String == route }
        }
        #expect(record("approved.test", "cdn")?["code"] as? String == "ok")
        #expect(record("approved.test", "origin")?["entries"] as? [String] == ["applinks:approved.test?mode=developer"])
        #expect(record("wild.test", "cdn")?["code"] as? String == "ok")
        #expect(record("swc101.test", "cdn")?["code"] as? String == "cdn-origin-failure")
        #expect(((record("swc101.test", "cdn")?["cdn"] as? [String: Any])?["headers"] as? [String: Any])?["swcError"] as? String == "SWCERR00101")
        #expect(record("unknown.test", "cdn")?["code"] as? String == "cdn-unknown-domain")
        _ = await waitUntil(timeout: .seconds(5)) { fixture.cdn.requests().count >= 5 }
        let cdnRequests = fixture.cdn.requests()
        #expect(cdnRequests.count == 5, "\(cdnRequests)")
        #expect(cdnRequests.allSatisfy { $0.serverProtocol == "HTTP/2.0" })
        #expect(Set(cdnRequests.map(\.connection)).count == 1, "one shared connection: \(cdnRequests.map { "\($0.connection) \($0.uri) \($0.status)" })")
        #expect(cdnRequests.allSatisfy { $0.userAgent == "AASA-Bot/1.0.0" })

        // both: the origin decides; the stale CDN copy is a warning with Age and Cache-Control.
        let both = try ToolRunner.run(fixture.network + ["--quiet", "--route", "both", "--app-id", Self.appID, "--json",
                                                         "--domain", "applinks:stale.test", "--domain", "applinks:approved.test"])
        #expect(both.status == 0, "\(both.stdout)\n\(both.stderr)")
        let bothReport = try both.json()
        let stale = try #require(bothReport.domain("stale.test"))
        #expect(stale["route"] as? String == "origin")
        #expect(stale["code"] as? String == "ok")
        #expect(stale.findingCodes.contains("cdn-stale"))
        let staleCDN = try #require(stale["cdn"] as? [String: Any])
        #expect(staleCDN["code"] as? String == "ok")
        #expect((staleCDN["headers"] as? [String: Any])?["age"] as? Int == 5000)
        #expect((staleCDN["changes"] as? [Any])?.isEmpty == false)
        let approved = try #require(bothReport.domain("approved.test"))
        #expect((approved["cdn"] as? [String: Any])?["changes"] as? [Any] != nil)
        #expect(!approved.findingCodes.contains("cdn-stale"))
        #expect(try ToolRunner.run(fixture.network + ["--domain", "applinks:approved.test"]).stdout.contains("approved.test"))
    }

    /// A real session for a broken domain, as the README shows it; and bad inputs.
    @Test func humanOutputAndBadInputs() async throws {
        let fixture = try await Fixture.start()
        defer { fixture.stop() }
        let session = try ToolRunner.run(["diagnose", "botblock.test", "--app-id", Self.appID] + fixture.network)
        #expect(session.status == 1)
        #expect(session.stdout.contains("✘ http"), "\(session.stdout)")
        #expect(session.stdout.contains("fix:"))
        #expect(session.stdout.contains("does not associate: step http failed (user-agent-blocked)"), "\(session.stdout)")

        #expect(try ToolRunner.run(["diagnose"]).status == 64)
        #expect(try ToolRunner.run(["diagnose", "a.test", "--entitlements", "a.entitlements", "--app", "a.ipa"]).status == 64)
        #expect(try ToolRunner.run(["diagnose", "a.test", "--route", "sideways"]).status == 64)
        #expect(try ToolRunner.run(["diagnose", "a.test", "--cdn-base", "http://cdn.test/"]).status == 64)
        #expect(try ToolRunner.run(["--domain", "applinks:a.test", "--route", "cdn", "--cdn-base", "not a url"]).status == 64)
        let missing = try ToolRunner.run(["diagnose", "--entitlements", "/nonexistent.entitlements"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("entitlements-unreadable"))
        // An entitlements file: one diagnosis per entry, the app ID from application-identifier.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("diag-\(UUID().uuidString).entitlements")
        defer { try? FileManager.default.removeItem(at: file) }
        let plist: [String: Any] = [
            "application-identifier": Self.appID,
            "com.apple.developer.associated-domains": ["applinks:approved.test", "webcredentials:webcredonly.test", "applinks:https://x.test/"],
        ]
        try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0).write(to: file)
        let run = try ToolRunner.run(["diagnose", "--entitlements", file.path, "--json"] + fixture.network)
        #expect(run.status == 1)
        let diagnoses = try run.json()["diagnoses"] as? [[String: Any]] ?? []
        #expect(diagnoses.map { $0["code"] as? String ?? "" } == ["ok", "ok", "entitlement-scheme"])
    }

    /// Entries of one host share what the network said: `webcredentials:` after `applinks:`
    /// makes no request of its own (each entry downloaded the host again, and checked its user
    /// agents again: four entries of a slow host took 17 s and 24 requests), and their network
    /// steps are the first entry's.
    @Test func entriesOfOneHostShareTheirRequests() async throws {
        let ca = try TestCA.shared()
        let server = try await FaultServer.start(
            script: FaultScript(
                default: .respond(headers: [("Content-Type", "application/json")], body: Self.good),
                hosts: ["cdn.memo.test": .respond(headers: [("Content-Type", "application/json"), ("Apple-Origin-Format", "json")], body: Self.good)]),
            certificate: try ca.leaf(for: ["*.memo.test"]))
        defer { server.stop() }
        func diagnose(_ entries: [String]) throws -> [[String: Any]] {
            let run = try ToolRunner.run(["diagnose", "--app-id", Self.appID, "--route", "both", "--json", "--cacert", ca.caCertPath,
                                          "--connect-to", server.connectTo, "--allow-private", "--retry-delays", "",
                                          "--cdn-base", "https://cdn.memo.test/a/v1/"] + entries.flatMap { ["--domain", $0] },
                                         timeout: .seconds(60))
            #expect(run.status == 0, "\(entries): \(run.stdout) \(run.stderr)")
            return try run.json()["diagnoses"] as? [[String: Any]] ?? []
        }
        func counts() -> (origin: Int, cdn: Int) {
            let requests = server.requests()
            return (requests.filter { $0.sni == "same.memo.test" }.count, requests.filter { $0.sni == "cdn.memo.test" }.count)
        }
        let one = try diagnose(["applinks:same.memo.test"])
        let alone = counts()
        #expect(one.count == 1 && alone.origin >= 4 && alone.cdn == 1, "\(alone)")

        let two = try diagnose(["applinks:same.memo.test", "webcredentials:same.memo.test"])
        let together = counts()
        #expect(together.origin - alone.origin == alone.origin && together.cdn - alone.cdn == alone.cdn, "\(alone) then \(together)")
        #expect(two.map { $0["code"] as? String } == ["ok", "ok"])
        func network(_ diagnosis: [String: Any]) -> [String] {
            (diagnosis["steps"] as? [[String: Any]] ?? []).filter { ["dns", "tcp", "tls", "http", "cdn", "user-agent"].contains($0["step"] as? String) }
                .map { "\($0["step"] ?? ""): \($0["status"] ?? "") \($0["summary"] ?? "") \($0["details"] ?? "")" }
        }
        #expect(network(two[0]).count == 6, "\(network(two[0]))")
        #expect(network(two[1]) == network(two[0]))

        // A `?mode=developer` entry of the host is fetched on its own (the device's user agent, its rules).
        _ = try diagnose(["applinks:same.memo.test", "applinks:same.memo.test?mode=developer"])
        let withMode = counts()
        #expect(withMode.origin - together.origin > alone.origin, "\(together) then \(withMode)")
    }

    /// The user-agent check sends its three requests to the origin at once, whether or not the
    /// CDN is in the run (`--route cdn` checks the CDN's copy of a plain entry instead): the
    /// server answers each after 1.5 s and logs how many it held at once. Before: with the CDN in
    /// the run, the one client's per-host limit (one connection, for the CDN) made the three wait
    /// for each other, and on a slow origin the last ran out of time.
    @Test(arguments: ["origin", "both"])
    func theUserAgentCheckRequestsAtOnce(route: String) async throws {
        let ca = try TestCA.shared()
        var slow = FaultBehavior.respond(headers: [("Content-Type", "application/json")], body: Self.good)
        slow.delay = 1.5
        let server = try await FaultServer.start(
            script: FaultScript(
                default: slow,
                hosts: ["cdn.ua.test": .respond(headers: [("Content-Type", "application/json"), ("Apple-Origin-Format", "json")], body: Self.good)]),
            certificate: try ca.leaf(for: ["*.ua.test"]))
        defer { server.stop() }
        let run = try ToolRunner.run(["diagnose", "slow.ua.test", "--app-id", Self.appID, "--route", route, "--json",
                                      "--cacert", ca.caCertPath, "--connect-to", server.connectTo, "--allow-private",
                                      "--retry-delays", "", "--max-time", "10", "--cdn-base", "https://cdn.ua.test/a/v1/"],
                                     timeout: .seconds(60))
        #expect(run.status == 0, "\(route): \(run.stdout) \(run.stderr)")
        let agents = Set([Diagnoser.deviceUserAgent, Diagnoser.browserUserAgent, "AASA-Bot/1.0.0"])
        let checks = server.requests().filter { $0.sni == "slow.ua.test" && agents.contains($0.userAgent ?? "") }
        #expect(checks.count >= 3, "\(route): \(checks.map { $0.userAgent ?? "" })")
        #expect(checks.compactMap(\.inFlight).max() == 3, "\(route): \(checks.map { ($0.userAgent ?? "", $0.inFlight ?? 0) })")
    }
}
