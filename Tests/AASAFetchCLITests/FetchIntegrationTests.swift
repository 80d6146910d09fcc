import AASAFetchCore
import AASAFetchTestSupport
import CurlTransport
import Foundation
import Testing

/// `aasa-fetch` end to end: the real binary, real nginx with certificates from a test CA made at
/// test time, and our fault server for what nginx cannot script. Everything on 127.0.0.1.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct FetchIntegrationTests {
    static let appID = "ABCDE12345.com.example.app"
    static let good = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/*"}]}]},"webcredentials":{"apps":["ABCDE12345.com.example.app"]}}"#
    static let otherApp = #"{"applinks":{"details":[{"appIDs":["ZYXWV98765.com.example.other"],"components":[{"/":"/*"}]}]},"webcredentials":{"apps":["ABCDE12345.com.example.app"]}}"#

    /// The sites, one folder per host, and an nginx serving them with per-host certificates.
    struct Fixture {
        let nginx: NginxServer
        let ca: TestCA
        let root: URL

        func stop() {
            nginx.stop()
            try? FileManager.default.removeItem(at: root)
        }

        /// Arguments that send every host to this nginx and trust the test CA.
        var network: [String] {
            ["--cacert", ca.caCertPath, "--connect-to", nginx.connectTo, "--allow-private",
             "--retry-delays", "0.05,0.05", "--connect-timeout", "2", "--max-time", "5", "--quiet"]
        }

        static func start() async throws -> Fixture {
            let ca = try TestCA.shared()
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-sites-\(UUID().uuidString)")
            func site(_ host: String, wellKnown: String? = nil, legacy: String? = nil, files: [String: [UInt8]] = [:]) throws -> String {
                let dir = root.appendingPathComponent(host)
                try FileManager.default.createDirectory(at: dir.appendingPathComponent(".well-known"), withIntermediateDirectories: true)
                if let wellKnown {
                    try Data(wellKnown.utf8).write(to: dir.appendingPathComponent(".well-known/apple-app-site-association"))
                }
                if let legacy {
                    try Data(legacy.utf8).write(to: dir.appendingPathComponent("apple-app-site-association"))
                }
                for (name, bytes) in files { try Data(bytes).write(to: dir.appendingPathComponent(name)) }
                return dir.path
            }
            let names = ["good.example.com", "example.net", "xn--bcher-kva.example", "legacy.example.org",
                         "redirect.example.com", "missing.example.com", "error.example.com", "html.example.com",
                         "big.example.com", "bomb.example.com", "other.example.com", "bom.example.com"]
            let valid = try ca.leaf(for: names)
            let json = "location ~ apple-app-site-association$ { default_type application/json; }"
            var hosts: [NginxVirtualHost] = [
                NginxVirtualHost(certificate: valid, serverNames: ["good.example.com"], documentRoot: try site("good.example.com", wellKnown: good), directives: [json]),
                NginxVirtualHost(certificate: valid, serverNames: ["example.net"], documentRoot: try site("example.net", wellKnown: good), directives: [json]),
                NginxVirtualHost(certificate: valid, serverNames: ["xn--bcher-kva.example"], documentRoot: try site("xn--bcher-kva.example", wellKnown: good), directives: [json]),
                NginxVirtualHost(certificate: valid, serverNames: ["legacy.example.org"], documentRoot: try site("legacy.example.org", legacy: good), directives: [json]),
                NginxVirtualHost(certificate: valid, serverNames: ["redirect.example.com"], documentRoot: try site("redirect.example.com"),
                                 directives: ["return 301 https://good.example.com$request_uri;"]),
                NginxVirtualHost(certificate: valid, serverNames: ["missing.example.com"], documentRoot: try site("missing.example.com")),
                NginxVirtualHost(certificate: valid, serverNames: ["error.example.com"], documentRoot: try site("error.example.com"),
                                 directives: ["return 500;"]),
                NginxVirtualHost(certificate: valid, serverNames: ["html.example.com"],
                                 documentRoot: try site("html.example.com", wellKnown: "<!DOCTYPE html><html><body>app</body></html>"),
                                 directives: ["default_type text/html;"]),
                NginxVirtualHost(certificate: valid, serverNames: ["big.example.com"],
                                 documentRoot: try site("big.example.com", wellKnown: "{\"applinks\":{\"details\":[]},\"pad\":\"" + String(repeating: "x", count: 200 * 1024) + "\"}"),
                                 directives: [json]),
                NginxVirtualHost(certificate: valid, serverNames: ["other.example.com"], documentRoot: try site("other.example.com", wellKnown: otherApp), directives: [json]),
                NginxVirtualHost(certificate: valid, serverNames: ["bom.example.com"], documentRoot: try site("bom.example.com", wellKnown: "\u{FEFF}" + good), directives: [json]),
            ]
            // A gzip bomb: 20 MB of zeros in a few kilobytes, served with Content-Encoding: gzip.
            let bombDir = try site("bomb.example.com")
            let bomb = try ChildProcess.run("/bin/sh", ["-c", "head -c 20000000 /dev/zero | gzip -9 > '\(bombDir)/.well-known/apple-app-site-association.gz'"],
                                            timeout: .seconds(30))
            #expect(bomb.status == 0)
            hosts.append(NginxVirtualHost(certificate: valid, serverNames: ["bomb.example.com"], documentRoot: bombDir,
                                          directives: ["gzip_static always;", json]))
            // Certificates that must fail.
            for (host, kind) in [("expired.example.com", TestCA.LeafKind.expired), ("future.example.com", .notYetValid),
                                 ("selfsigned.example.com", .selfSigned), ("untrusted.example.com", .untrustedIssuer)] {
                hosts.append(NginxVirtualHost(certificate: try ca.leaf(for: [host], kind: kind), serverNames: [host],
                                              documentRoot: try site(host, wellKnown: good), directives: [json]))
            }
            hosts.append(NginxVirtualHost(certificate: try ca.leaf(for: ["someone-else.example.com"]), serverNames: ["wrongname.example.com"],
                                          documentRoot: try site("wrongname.example.com", wellKnown: good), directives: [json]))
            let nginx = try await NginxServer.start(hosts: hosts, http2: false)
            return Fixture(nginx: nginx, ca: ca, root: root)
        }
    }

    /// Every scenario of the fetch issue in one run of the tool: the host fetched and its code.
    @Test func faultMatrix() async throws {
        let fixture = try await Fixture.start()
        defer { fixture.stop() }
        let entries = [
            "applinks:good.example.com", "webcredentials:good.example.com", "applinks:*.example.net",
            "applinks:xn--bcher-kva.example", "applinks:legacy.example.org", "applinks:redirect.example.com",
            "applinks:missing.example.com", "applinks:error.example.com", "applinks:html.example.com",
            "applinks:big.example.com", "applinks:bomb.example.com", "applinks:other.example.com",
            "applinks:bom.example.com", "applinks:expired.example.com", "applinks:future.example.com",
            "applinks:selfsigned.example.com", "applinks:untrusted.example.com", "applinks:wrongname.example.com",
        ]
        let result = try ToolRunner.run(fixture.network + entries.flatMap { ["--domain", $0] } + ["--app-id", Self.appID, "--json"])
        #expect(result.status == 1, "stderr: \(result.stderr)")
        let report = try result.json()

        let expected: [(host: String, code: String, associated: Bool, status: Int?)] = [
            ("good.example.com", "ok", true, 200),
            ("example.net", "ok", true, 200),
            ("xn--bcher-kva.example", "ok", true, 200),
            ("legacy.example.org", "ok", true, 200),
            ("redirect.example.com", "http-redirect", false, 301),
            ("missing.example.com", "http-client-error", false, 404),
            ("error.example.com", "http-server-error", false, 500),
            ("html.example.com", "invalid-json", false, 200),
            // The answer's status and headers came before the body broke the limit: said.
            ("big.example.com", "too-large", false, 200),
            ("bomb.example.com", "too-large", false, 200),
            ("other.example.com", "app-not-listed", false, 200),
            ("bom.example.com", "ok", true, 200),
            ("expired.example.com", "tls-expired", false, nil),
            ("future.example.com", "tls-not-yet-valid", false, nil),
            ("selfsigned.example.com", "tls-untrusted", false, nil),
            ("untrusted.example.com", "tls-untrusted", false, nil),
            ("wrongname.example.com", "tls-hostname-mismatch", false, nil),
        ]
        for item in expected {
            let domain = try #require(report.domain(item.host), "no record for \(item.host)")
            #expect(domain["code"] as? String == item.code, "\(item.host): \(domain["reason"] ?? "")")
            #expect(domain["associated"] as? Bool == item.associated, "\(item.host)")
            #expect(domain["httpStatus"] as? Int == item.status, "\(item.host)")
        }
        // A certificate whose dates do not fit this machine's clock: the message says what the clock says.
        let today = String(Timestamp.string(Date()).prefix(10))
        for host in ["expired.example.com", "future.example.com"] {
            let reason = report.domain(host)?["reason"] as? String ?? ""
            #expect(reason.contains("(this machine's clock says \(today)T"), "\(host): \(reason)")
        }
        // A clock three years ahead (libfaketime) fails a good certificate as expired, and says so.
        if FakeTime.usable {
            let ahead = try ToolRunner.run(fixture.network + ["--domain", "applinks:good.example.com", "--app-id", Self.appID, "--json"],
                                           environment: FakeTime.environment("+3y"))
            let domain = try ahead.json().domain("good.example.com")
            let year = Calendar(identifier: .gregorian).component(.year, from: Date()) + 3
            #expect(domain?["code"] as? String == "tls-expired", "\(ahead.stdout)")
            #expect((domain?["reason"] as? String)?.contains("(this machine's clock says \(year)-") == true, "\(ahead.stdout)")
        }

        // Each distinct host once, in the order downloads started.
        let hosts = (report["domains"] as? [[String: Any]])?.compactMap { $0["host"] as? String } ?? []
        #expect(hosts.count == Set(hosts).count)
        #expect(hosts.count == expected.count)

        // The wildcard is fetched from its parent and served by it.
        #expect((report.domain("example.net")?["entries"] as? [String]) == ["applinks:*.example.net"])
        // The redirect is reported with its target and never followed.
        #expect(report.domain("redirect.example.com")?["redirectLocation"] as? String
            == "https://good.example.com/.well-known/apple-app-site-association")
        #expect(!fixture.nginx.requests().contains { $0.host == "good.example.com" && $0.uri.contains("redirect") })
        // Legacy root path: fetched after the .well-known 404, with a warning.
        #expect(report.domain("legacy.example.org")?.findingCodes.contains("legacy-root-path") == true)
        #expect((report.domain("legacy.example.org")?["url"] as? String)?.hasSuffix("/apple-app-site-association") == true)
        // The legacy request rides the connection the 404 came over: no second TLS handshake.
        for host in ["legacy.example.org", "missing.example.com"] {
            let connections = fixture.nginx.requests().filter { $0.host == host }.map(\.connection)
            #expect(connections.count == 2 && Set(connections).count == 1, "\(host): connections \(connections)")
        }
        // 404: the legacy path was tried as well.
        let missingAttempts = report.domain("missing.example.com")?["attempts"] as? [[String: Any]] ?? []
        #expect(missingAttempts.compactMap { $0["url"] as? String }.map { URL(string: $0)?.path ?? "" }
            == ["/.well-known/apple-app-site-association", "/apple-app-site-association"])
        // 500 is retried twice (three requests), 404 and redirects are not.
        let errorAttempts = report.domain("error.example.com")?["attempts"] as? [[String: Any]] ?? []
        #expect(errorAttempts.count == 3)
        #expect(fixture.nginx.requests().filter { $0.host == "error.example.com" }.count == 3)
        #expect((report.domain("redirect.example.com")?["attempts"] as? [[String: Any]])?.count == 1)
        // HTML, BOM, app ID listed elsewhere.
        #expect(report.domain("html.example.com")?.findingCodes.contains("content-type") == true)
        #expect(report.domain("bom.example.com")?.findingCodes.contains("bom") == true)
        let other = try #require(report.domain("other.example.com"))
        #expect((other["appIDs"] as? [String: [String]])?["applinks"] == ["ZYXWV98765.com.example.other"])
        // The user agent Apple's CDN sends.
        #expect(fixture.nginx.requests().allSatisfy { $0.userAgent == "AASA-Bot/1.0.0" })
        // Every host relied on --cacert.
        #expect(report.domain("good.example.com")?.findingCodes.contains("custom-root") == true)
        let summary = try #require(report["summary"] as? [String: Any])
        #expect(summary["associated"] as? Int == 6)
        #expect(summary["failed"] as? Int == 12)
    }

    /// Without --allow-private, 127.0.0.1 is refused before any request is sent.
    @Test func privateAddressIsRefused() async throws {
        let fixture = try await Fixture.start()
        defer { fixture.stop() }
        let arguments = fixture.network.filter { $0 != "--allow-private" }
        let result = try ToolRunner.run(arguments + ["--domain", "applinks:good.example.com", "--app-id", Self.appID, "--json"])
        #expect(result.status == 1)
        let domain = try #require(try result.json().domain("good.example.com"))
        #expect(domain["code"] as? String == "private-address")
        #expect(fixture.nginx.requests().isEmpty)
    }

    /// Proxy variables are ignored: the tool connects to the host itself (the address policy checks
    /// the address connected to), as a device does; a proxy where nothing listens changes nothing.
    @Test func proxyVariablesAreNotUsed() async throws {
        let fixture = try await Fixture.start()
        defer { fixture.stop() }
        let proxy = "http://127.0.0.1:9"
        let result = try ToolRunner.run(fixture.network + ["--domain", "applinks:good.example.com", "--app-id", Self.appID, "--json"],
                                        environment: ["https_proxy": proxy, "HTTPS_PROXY": proxy, "all_proxy": proxy, "ALL_PROXY": proxy])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let domain = try #require(try result.json().domain("good.example.com"))
        #expect(domain["code"] as? String == "ok")
        #expect(domain["contentType"] as? String == "application/json")
        #expect(fixture.nginx.requests().contains { $0.host == "good.example.com" })
    }

    /// A Unicode entry is fetched under its Punycode name and still reported as an entitlement error.
    @Test func unicodeEntryIsFetchedAsPunycode() async throws {
        let fixture = try await Fixture.start()
        defer { fixture.stop() }
        let result = try ToolRunner.run(fixture.network + ["--domain", "applinks:bücher.example", "--app-id", Self.appID, "--json"])
        #expect(result.status == 1)
        let report = try result.json()
        let domain = try #require(report.domain("xn--bcher-kva.example"))
        #expect(domain["httpStatus"] as? Int == 200)
        #expect(domain["code"] as? String == "entitlement-not-punycode")
        #expect(fixture.nginx.requests().contains { $0.host == "xn--bcher-kva.example" })
    }

    /// All good: exit 0 and a concise human table; entitlements read from a file with its app ID.
    @Test func approvedEntitlementsExitZero() async throws {
        let fixture = try await Fixture.start()
        defer { fixture.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("app-\(UUID().uuidString).entitlements")
        defer { try? FileManager.default.removeItem(at: file) }
        let plist: [String: Any] = [
            "application-identifier": Self.appID,
            "com.apple.developer.associated-domains": ["applinks:good.example.com", "webcredentials:good.example.com", "applinks:*.example.net"],
        ]
        try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0).write(to: file)
        let result = try ToolRunner.run(fixture.network + ["--entitlements", file.path])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("✔ good.example.com"))
        #expect(result.stdout.contains("3 of 3 entries associate"))
        #expect(!result.stdout.contains("\u{1B}["), "no colour when not a terminal")

        // Without an app ID the answer is unjudged, listed, and not a failure.
        let unjudged = try ToolRunner.run(fixture.network + ["--domain", "applinks:good.example.com", "--json"])
        #expect(unjudged.status == 0)
        let domain = try #require(try unjudged.json().domain("good.example.com"))
        #expect(domain["associated"] is NSNull)
        #expect(domain.findingCodes.contains("app-id-unknown"))
    }

    /// A server that accepts and never answers: a timeout within the configured bound, no hang.
    @Test func neverAnsweringServerTimesOut() async throws {
        let ca = try TestCA.shared()
        let server = try await FaultServer.start(script: FaultScript(default: .neverAnswer), certificate: try ca.leaf(for: ["slow.example.com"]))
        defer { server.stop() }
        let started = ContinuousClock.now
        let result = try ToolRunner.run(["--cacert", ca.caCertPath, "--connect-to", server.connectTo, "--allow-private",
                                         "--connect-timeout", "1", "--max-time", "2", "--retry-delays", "",
                                         "--domain", "applinks:slow.example.com", "--app-id", Self.appID, "--json"])
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(result.status == 1)
        #expect(try result.json().domain("slow.example.com")?["code"] as? String == "timeout")
    }

    /// Hosts sent to one server with `--connect-to` (a staging deploy) are still fetched
    /// `--concurrency` at a time, on every route: the server holds every origin answer until all
    /// six origin requests are in (and answers the CDN's at once). With `--route cdn` the origin
    /// serves `?mode=developer` entries. Before: with the CDN in the run, the one client's
    /// per-host limit (one connection, for the CDN) counted every host sent to the server, so the
    /// origin requests went one at a time and the barrier was never reached.
    @Test(arguments: ["origin", "cdn", "both"])
    func connectToOneServerKeepsTheConcurrency(route: String) async throws {
        let ca = try TestCA.shared()
        let hosts = (1...6).map { "s\($0).staging.test" }
        let server = try await FaultServer.start(
            script: FaultScript(
                default: .respond(headers: [("Content-Type", "application/json"), ("Apple-Origin-Format", "json")], body: Self.good),
                paths: ["/.well-known/apple-app-site-association": .barrier(count: hosts.count, body: Self.good, wait: 8)]),
            certificate: try ca.leaf(for: ["*.staging.test"]))
        defer { server.stop() }
        let mode = route == "cdn" ? "?mode=developer" : ""
        let result = try ToolRunner.run(["--cacert", ca.caCertPath, "--connect-to", server.connectTo, "--allow-private",
                                         "--retry-delays", "", "--concurrency", "6", "--quiet", "--no-store", "--json",
                                         "--route", route, "--cdn-base", "https://cdn.staging.test/a/v1/",
                                         "--app-id", Self.appID] + hosts.flatMap { ["--domain", "applinks:\($0)\(mode)"] })
        let report = try result.json()
        for host in hosts {
            #expect(report.domain(host)?["code"] as? String == "ok", "\(route) \(host): \(report.domain(host) ?? [:])")
        }
        let origin = server.requests().filter { $0.path == "/.well-known/apple-app-site-association" }
        #expect(origin.count == hosts.count, "\(route): \(origin.count) origin requests")
        #expect(result.status == 0, "\(route): \(result.stderr)")
    }

    /// A process stopped while a download runs (SIGSTOP: a debugger, a job control stop, a paused
    /// machine) for longer than `--max-time`, then continued: the transfer starts again with fresh
    /// timeouts, and the host is not blamed for the time the process stood still. Before, curl's
    /// timeout (on the monotonic clock, which ran on) failed it as `timeout` at once. One transfer
    /// starts again after two pauses at most: the third lets its timeout stand.
    @Test(arguments: [(1, "ok", 2), (3, "timeout", 3)])
    func aPauseLongerThanTheTimeoutDoesNotBlameTheHost(pauses: Int, code: String, requests: Int) async throws {
        let ca = try TestCA.shared()
        var slow = FaultBehavior.respond(headers: [("Content-Type", "application/json")], body: Self.good)
        slow.delay = 2
        let server = try await FaultServer.start(script: FaultScript(default: slow), certificate: try ca.leaf(for: ["paused.example.com"]))
        defer { server.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-paused-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("out")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ToolRunner.binary)
        process.arguments = ["--domain", "applinks:paused.example.com", "--cacert", ca.caCertPath, "--connect-to", server.connectTo,
                             "--allow-private", "--retry-delays", "", "--max-time", "3", "--no-store", "--json", "--app-id", Self.appID]
        process.environment = ChildProcess.inheritedEnvironment.merging(["NO_COLOR": "1"]) { _, new in new }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            if process.isRunning {
                kill(process.processIdentifier, SIGCONT)
                kill(process.processIdentifier, SIGKILL)
            }
        }
        let wellKnown = { server.requests().filter { $0.path == "/.well-known/apple-app-site-association" }.count }
        for pause in 1...pauses {
            #expect(await waitUntil(timeout: .seconds(20)) { wellKnown() == pause }, "request \(pause) never came")
            // The server holds each answer 2 s: stop the process while it waits, past --max-time
            // and the loop's pause gap (3 s).
            kill(process.processIdentifier, SIGSTOP)
            try await Task.sleep(for: .seconds(4))
            kill(process.processIdentifier, SIGCONT)
        }
        #expect(ChildProcess.waitForExit(process, timeout: .seconds(30)))
        let stdout = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
        let report = try #require(try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any], "\(stdout)")
        #expect(report.domain("paused.example.com")?["code"] as? String == code, "\(report.domain("paused.example.com") ?? [:])")
        #expect(process.terminationStatus == (code == "ok" ? 0 : 1))
        // The requests cut short by pauses, and the last one.
        #expect(wellKnown() == requests)
    }

    /// Started with a CPU affinity of one core (`taskset`, a container's cpuset), a run starts one
    /// curl loop by default, not one per online CPU; without it, one per CPU of the test's own mask.
    @Test func theDefaultLoopsFollowTheAffinityMask() async throws {
        let taskset = try #require(ChildProcess.find("taskset", preferring: ["/usr/bin/taskset"]), "taskset (util-linux) is missing")
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let allowed = try #require(status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") })
        let ranges = allowed.split(separator: ":")[1].trimmingCharacters(in: .whitespaces).split(separator: ",")
        let cpus = ranges.reduce(0) { total, range in
            let bounds = range.split(separator: "-").compactMap { Int($0) }
            return total + (bounds.count == 2 ? bounds[1] - bounds[0] + 1 : 1)
        }
        let first = try #require(ranges.first?.split(separator: "-").first.map(String.init))
        let ca = try TestCA.shared()
        let server = try await FaultServer.start(script: FaultScript(default: .neverAnswer), certificate: try ca.leaf(for: ["slow.example.com"]))
        defer { server.stop() }
        var environment = ChildProcess.inheritedEnvironment.merging(["NO_COLOR": "1"]) { _, new in new }
        environment["AASA_FETCH_THREADS"] = nil  // the default is what is tested
        let tool = [ToolRunner.binary, "--domain", "applinks:slow.example.com", "--no-store", "--quiet", "--cacert", ca.caCertPath,
                    "--connect-to", server.connectTo, "--allow-private", "--retry-delays", "", "--connect-timeout", "60", "--max-time", "60",
                    "--app-id", Self.appID]
        // (A minute to connect, too: the server never finishes the handshake, and the run must
        // still be going when its threads are counted, however slowly this test runs.)
        for pinned in [true, false] {
            let before = server.requests().count
            let process = Process()
            process.executableURL = URL(fileURLWithPath: pinned ? taskset : tool[0])
            process.arguments = pinned ? ["-c", first] + tool : Array(tool.dropFirst())
            process.environment = environment
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
            // The download started, so the client and its loops are up.
            #expect(await waitUntil(timeout: .seconds(20)) { server.requests().count > before }, "no connection came")
            try await Task.sleep(for: .milliseconds(300))
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/task")) ?? []
            let loops = tasks.filter { task in
                let name = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/task/\(task)/comm", encoding: .utf8)) ?? ""
                return name.hasPrefix("aasa-curl-")
            }
            // Unpinned: what this process's own budget is (the same mask and cgroup), within the mask.
            #expect(loops.count == (pinned ? 1 : CurlClient.defaultThreads), "pinned \(pinned): \(loops.count) loops, \(cpus) CPUs allowed")
            #expect(loops.count <= cpus)
            kill(process.processIdentifier, SIGTERM)
            #expect(ChildProcess.waitForExit(process, timeout: .seconds(20)))
        }
    }

    /// Bad input: a clear message with a stable code and exit 2; usage errors exit 64.
    @Test func badInputs() throws {
        let missing = try ToolRunner.run(["--entitlements", "/nonexistent.entitlements"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("entitlements-unreadable"))
        let malformed = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).entitlements")
        defer { try? FileManager.default.removeItem(at: malformed) }
        try Data("<plist><dict><key>x".utf8).write(to: malformed)
        let bad = try ToolRunner.run(["--entitlements", malformed.path])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("entitlements-malformed"))
        #expect(try ToolRunner.run([]).status == 64)
        #expect(try ToolRunner.run(["--domain", "applinks:x.com", "--concurrency", "0"]).status == 64)
    }

    /// `--threads` (curl loops) takes 1 … 64, from the command line or `AASA_FETCH_THREADS`, on
    /// every command that downloads; anything else is a usage error that names the option.
    @Test(arguments: [["--threads", "0"], ["--threads", "65"], ["--threads", "many"]])
    func threadsOutOfRangeIsAUsageError(arguments: [String]) throws {
        for command in [["--domain", "applinks:x.com"], ["diagnose", "x.com"], ["refresh"], ["match", "https://x.com/", "--domain", "x.com"]] {
            let result = try ToolRunner.run(command + arguments)
            #expect(result.status == 64, "\(command + arguments): \(result.stderr)")
            #expect(result.stderr.contains("--threads"), "\(result.stderr)")
        }
        let fromEnvironment = try ToolRunner.run(["--domain", "applinks:x.com"], environment: ["AASA_FETCH_THREADS": arguments[1]])
        #expect(fromEnvironment.status == 64)
        #expect(fromEnvironment.stderr.contains("AASA_FETCH_THREADS"), "\(fromEnvironment.stderr)")
    }

    /// The same hosts give the same report with one curl loop and with several.
    @Test func oneLoopAndSeveralLoopsGiveTheSameReport() async throws {
        let ca = try TestCA.shared()
        let hosts = (1...12).map { "t\($0).loops.test" }
        let server = try await FaultServer.start(script: FaultScript(default: .respond(body: Self.good)),
                                                 certificate: try ca.leaf(for: ["*.loops.test"]))
        defer { server.stop() }
        var reports: [[String]] = []
        for threads in ["1", "3"] {
            let result = try ToolRunner.run(["--cacert", ca.caCertPath, "--connect-to", server.connectTo, "--allow-private",
                                             "--retry-delays", "", "--concurrency", "4", "--threads", threads, "--quiet",
                                             "--no-store", "--json", "--app-id", Self.appID] + hosts.flatMap { ["--domain", "applinks:\($0)"] })
            #expect(result.status == 0, "\(result.stderr)")
            let report = try result.json()
            reports.append(hosts.map { report.domain($0)?["code"] as? String ?? "missing" })
        }
        #expect(reports[0] == Array(repeating: "ok", count: hosts.count))
        #expect(reports[1] == reports[0])
    }
}
