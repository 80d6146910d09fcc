import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Glibc
import Testing

/// The operations features end to end with the real binary, against the example sites
/// (`examples/site`, served by nginx on 127.0.0.1 as `scripts/demo` serves them: a redirect and an
/// app that is not listed fail on purpose): forced checks (`refresh --host`, `--all`), metrics
/// (`refresh --metrics`) read back with a strict exposition parser, and the status page
/// (`report --html`) loaded in headless Chromium. SQLite, and PostgreSQL in one test.
@Suite(.serialized, .timeLimit(.minutes(6)))
struct OperationsCommandTests {
    static let appID = "ABCDE12345.com.example.app"
    static let hosts = ["example.com", "www.example.com", "shop.example.net", "legacy.example.org", "xn--bcher-kva.example", "old.example.com"]
    /// What the example is built to show: these two fail (a redirect, an app not listed).
    static let failing: Set<String> = ["www.example.com", "old.example.com"]

    /// The example sites behind nginx, and a store folder for the runs.
    struct ExampleSites {
        let nginx: NginxServer
        let ca: TestCA
        let cache: URL

        static func start() async throws -> ExampleSites {
            let ca = try TestCA.shared()
            let leaf = try ca.leaf(for: OperationsCommandTests.hosts)
            let root = TestPaths.repository.appendingPathComponent("examples/site").path
            let nginx = try await NginxServer.start(hosts: [
                NginxVirtualHost(certificate: leaf, serverNames: OperationsCommandTests.hosts.filter { $0 != "www.example.com" },
                                 documentRoot: root + "/$host",
                                 directives: ["location ~ apple-app-site-association$ { default_type application/json; }"]),
                NginxVirtualHost(certificate: leaf, serverNames: ["www.example.com"], documentRoot: root,
                                 directives: ["return 301 https://example.com$request_uri;"]),
            ], http2: false)
            let cache = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-ops-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
            return ExampleSites(nginx: nginx, ca: ca, cache: cache)
        }

        func stop() {
            nginx.stop()
            try? FileManager.default.removeItem(at: cache)
        }

        var network: [String] {
            ["--cacert", ca.caCertPath, "--connect-to", nginx.connectTo, "--allow-private",
             "--retry-delays", "0.05", "--connect-timeout", "2", "--max-time", "5"]
        }

        func run(_ arguments: [String]) throws -> ToolRunner.Result {
            try ToolRunner.run(arguments, cache: cache.path, timeout: .seconds(120))
        }

        /// Records the example entitlements (exit 1: two hosts fail on purpose).
        func record(_ extra: [String] = []) throws {
            let entitlements = TestPaths.repository.appendingPathComponent("examples/Example.entitlements").path
            let result = try run(["--entitlements", entitlements, "--quiet", "--json"] + network + extra)
            #expect(result.status == 1, "stderr: \(result.stderr)")
        }

        func store() throws -> SQLiteAssociationStore {
            try SQLiteAssociationStore(path: cache.appendingPathComponent(SQLiteAssociationStore.fileName).path, create: false)
        }

        /// Requests nginx answered per host (every path).
        func requestCounts() -> [String: Int] {
            var counts: [String: Int] = [:]
            for request in nginx.requests() { counts[request.host, default: 0] += 1 }
            return counts
        }

        func file(_ name: String) -> String { cache.appendingPathComponent(name).path }
    }

    static func later(days: Double) -> String { String(Int(Date().timeIntervalSince1970 + days * 86400)) }

    static func difference(_ after: [String: Int], _ before: [String: Int]) -> [String: Int] {
        var changed: [String: Int] = [:]
        for (host, count) in after where count != before[host, default: 0] { changed[host] = count - before[host, default: 0] }
        return changed
    }

    // MARK: - Forced checks

    @Test func forcedChecksFetchNamedOrEveryHostWhateverIsDue() async throws {
        let sites = try await ExampleSites.start()
        defer { sites.stop() }
        try sites.record()
        var before = sites.requestCounts()
        #expect(Set(before.keys) == Set(Self.hosts))

        // Nothing is due: a plain refresh fetches nothing and says nothing.
        let idle = try sites.run(["refresh"] + sites.network)
        #expect(idle.status == 0 && idle.stdout.isEmpty, "\(idle.stdout) \(idle.stderr)")
        #expect(sites.requestCounts() == before)

        // One host, now.
        let one = try sites.run(["refresh", "--host", "shop.example.net", "--json"] + sites.network)
        #expect(one.status == 0, "stderr: \(one.stderr)")
        let report = try one.json()
        #expect(report["fetched"] as? Int == 1)
        #expect((report["hosts"] as? [[String: Any]])?.compactMap { $0["host"] as? String } == ["shop.example.net"])
        #expect(Self.difference(sites.requestCounts(), before) == ["shop.example.net": 1])
        before = sites.requestCounts()

        // Names are normalised as entries are (case, Unicode), and a human run always says what it fetched.
        let human = try sites.run(["refresh", "--host", "EXAMPLE.com", "--host", "bücher.example"] + sites.network)
        #expect(human.status == 0, "stderr: \(human.stderr)")
        #expect(human.stdout.contains("2 hosts fetched now, 0 changes"), "stdout: \(human.stdout)")
        #expect(human.stdout.contains("✔ example.com") && human.stdout.contains("✔ xn--bcher-kva.example"), "stdout: \(human.stdout)")
        #expect(Self.difference(sites.requestCounts(), before) == ["example.com": 1, "xn--bcher-kva.example": 1])
        before = sites.requestCounts()

        // Every host, now (legacy.example.org: the 404 of .well-known, then the root path).
        let all = try sites.run(["refresh", "--all", "--json"] + sites.network)
        #expect(all.status == 0, "stderr: \(all.stderr)")
        #expect(try all.json()["fetched"] as? Int == Self.hosts.count)
        var expected = Dictionary(uniqueKeysWithValues: Self.hosts.map { ($0, 1) })
        expected["legacy.example.org"] = 2
        #expect(Self.difference(sites.requestCounts(), before) == expected)
        let states = try await sites.store().allHosts()
        #expect(states.allSatisfy { $0.lease == nil && $0.nextCheck > Date() })
        // Whether each host associates, beside the download's own code: old.example.com's file
        // downloads fine but does not list the app.
        let associated = Dictionary(uniqueKeysWithValues: ((try all.json()["hosts"] as? [[String: Any]]) ?? []).map {
            ($0["host"] as? String ?? "", "\($0["code"] ?? "") \($0["associated"].map { "\($0)" } ?? "absent")")
        })
        #expect(associated["old.example.com"] == "ok 0", "\(associated)")
        #expect(associated["www.example.com"] == "http-redirect 0", "\(associated)")
        #expect(associated["example.com"] == "ok 1", "\(associated)")
        // The human line says what `show` says: ✘ and app-not-listed (it was ✔ ok).
        let notListed = try sites.run(["refresh", "--host", "old.example.com"] + sites.network)
        #expect(notListed.status == 0, "nothing changed: \(notListed.stderr)")
        let line = notListed.stdout.split(separator: "\n").first { $0.contains("old.example.com") }.map(String.init) ?? ""
        #expect(line.hasPrefix("✘ old.example.com") && line.contains("  app-not-listed  ABCDE12345.com.example.app is not listed"), "stdout: \(notListed.stdout)")
        before = sites.requestCounts()

        // A host another process holds is left to it, and said so.
        let elsewhere = try await sites.store().claimForced(hosts: ["old.example.com"], after: 0, now: Date(), limit: 1,
                                                            leaseSeconds: 3600, owner: "cron-elsewhere")
        #expect(elsewhere.claim.hosts.count == 1)
        let shared = try sites.run(["refresh", "--all", "--json"] + sites.network)
        #expect(shared.status == 0, "stderr: \(shared.stderr)")
        let sharedReport = try shared.json()
        #expect(sharedReport["fetched"] as? Int == Self.hosts.count - 1)
        #expect(sharedReport["leasedElsewhere"] as? Int == 1)
        #expect(sharedReport["otherOwners"] as? [String] == ["cron-elsewhere"])
        #expect(shared.stderr.contains("being refreshed by another process"), "stderr: \(shared.stderr)")
        #expect(Self.difference(sites.requestCounts(), before)["old.example.com"] == nil)
        before = sites.requestCounts()

        // A host the store does not hold: exit 2 before anything is fetched.
        let unknown = try sites.run(["refresh", "--host", "example.com", "--host", "nothere.example"] + sites.network)
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("aasa-fetch: host-unknown: nothere.example is not in the store"), "stderr: \(unknown.stderr)")
        #expect(sites.requestCounts() == before)

        // Usage errors.
        for arguments in [["--host", "example.com", "--all"], ["--all", "--watch"], ["--host", "example.com", "--worker"],
                          ["--host", "bad host!"], ["--metrics", sites.file("m.prom"), "--worker"], ["--metrics", ""]] {
            let usage = try sites.run(["refresh"] + arguments)
            #expect(usage.status == 64, "\(arguments): \(usage.stderr)")
            #expect(usage.stderr.contains("aasa-fetch: usage:"), "\(arguments): \(usage.stderr)")
        }
        #expect(sites.requestCounts() == before)
    }

    // MARK: - Metrics

    @Test func metricsDescribeEveryHostAndTheRunAndReadBack() async throws {
        let sites = try await ExampleSites.start()
        defer { sites.stop() }
        try sites.record()
        let folder = sites.cache.appendingPathComponent("textfile")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("aasa_fetch.prom").path
        let now = Self.later(days: 2)
        let run = try sites.run(["refresh", "--now", now, "--metrics", path, "--json"] + sites.network)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let report = try run.json()

        let text = try String(contentsOfFile: path, encoding: .utf8)
        let families = Dictionary(uniqueKeysWithValues: try PrometheusTextParser.parse(text).map { ($0.name, $0) })
        for name in ["aasa_fetch_host_associates", "aasa_fetch_host_last_code_info", "aasa_fetch_host_last_success_timestamp_seconds",
                     "aasa_fetch_host_last_check_timestamp_seconds", "aasa_fetch_host_consecutive_failures", "aasa_fetch_store_hosts",
                     "aasa_fetch_refresh_hosts_checked", "aasa_fetch_refresh_hosts_changed", "aasa_fetch_refresh_hosts_failed",
                     "aasa_fetch_refresh_duration_seconds", "aasa_fetch_refresh_last_run_timestamp_seconds"] {
            #expect(families[name]?.type == "gauge" && families[name]?.help.isEmpty == false, "\(name)")
        }
        // Per host: the values are the store's.
        let states = try await sites.store().allHosts()
        #expect(states.count == Self.hosts.count)
        for state in states {
            let labels = ["host": state.key.host, "route": state.key.route.rawValue]
            let last = try #require(state.lastResult)
            #expect(families["aasa_fetch_host_last_check_timestamp_seconds"]?.value(labels) == last.fetchedAt.timeIntervalSince1970)
            #expect(families["aasa_fetch_host_last_success_timestamp_seconds"]?.value(labels) == (state.approvedAt?.timeIntervalSince1970 ?? 0))
            #expect(families["aasa_fetch_host_consecutive_failures"]?.value(labels) == Double(state.consecutiveFailures))
            let codes = families["aasa_fetch_host_last_code_info"]?.samples.filter { $0.labels["host"] == state.key.host } ?? []
            #expect(codes.map { $0.labels["code"] } == [last.code] && codes.first?.value == 1)
            let associates = families["aasa_fetch_host_associates"]?.value(labels)
            #expect(associates == (Self.failing.contains(state.key.host) ? 0 : 1), "\(state.key.host)")
        }
        #expect(families["aasa_fetch_host_last_check_timestamp_seconds"]?.samples.allSatisfy { $0.value == Double(now) } == true)
        #expect(families["aasa_fetch_store_hosts"]?.value(["status": "fails"]) == 2)
        #expect(families["aasa_fetch_store_hosts"]?.value(["status": "associates"]) == 4)
        // The run: its totals are the report's.
        let hosts = try #require(report["hosts"] as? [[String: Any]])
        #expect(families["aasa_fetch_refresh_hosts_checked"]?.samples.first?.value == Double(try #require(report["fetched"] as? Int)))
        #expect(families["aasa_fetch_refresh_hosts_failed"]?.samples.first?.value == Double(try #require(report["failed"] as? Int)))
        #expect(families["aasa_fetch_refresh_hosts_changed"]?.samples.first?.value
                == Double(hosts.filter { ($0["events"] as? [Any])?.isEmpty == false }.count))
        #expect(families["aasa_fetch_refresh_last_run_timestamp_seconds"]?.samples.first?.value == Double(now))
        #expect((families["aasa_fetch_refresh_duration_seconds"]?.samples.first?.value ?? -1) >= 0)
        // Written atomically for a collector of another user: no temporary file left, mode 0644.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["aasa_fetch.prom"])
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o644)

        // A pass with nothing due replaces the file: the hosts stay, the run's totals are zero.
        let idle = try sites.run(["refresh", "--now", now, "--metrics", path] + sites.network)
        #expect(idle.status == 0 && idle.stdout.isEmpty, "\(idle.stderr)")
        let again = Dictionary(uniqueKeysWithValues: try PrometheusTextParser.parse(try String(contentsOfFile: path, encoding: .utf8)).map { ($0.name, $0) })
        #expect(again["aasa_fetch_refresh_hosts_checked"]?.samples.first?.value == 0)
        #expect(again["aasa_fetch_host_associates"]?.samples.count == Self.hosts.count)
    }

    @Test func metricsEscapeHostileStoreValuesAndUnwritablePathsFailFirst() async throws {
        let sites = try await ExampleSites.start()
        defer { sites.stop() }
        try sites.record()
        // A row no run would write, as a damaged or hostile store could hold it.
        let host = "evil\"host\\x\n}{code=\"ok\"} 1"
        let code = "c\"o\\de\nx"
        func literal(_ text: String) -> String {
            "'" + text.replacingOccurrences(of: "'", with: "''").replacingOccurrences(of: "\n", with: "' || char(10) || '") + "'"
        }
        try await sites.store().executeForTesting("""
            INSERT INTO hosts (host, route, tier, added_at, last_code, last_reason, last_url, last_headers, fetched_at, consecutive_failures, next_check)
            VALUES (\(literal(host)), 'origin', 0, 1, \(literal(code)), 'x', 'https://x/', '[]', 1800000000, 3, \(Self.later(days: 30)))
            """)
        let path = sites.file("hostile.prom")
        let run = try sites.run(["refresh", "--metrics", path] + sites.network)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let families = Dictionary(uniqueKeysWithValues: try PrometheusTextParser.parse(text).map { ($0.name, $0) })
        #expect(families["aasa_fetch_host_last_code_info"]?.value(["host": host, "route": "origin", "code": code]) == 1)
        #expect(families["aasa_fetch_host_consecutive_failures"]?.value(["host": host]) == 3)
        #expect(families["aasa_fetch_host_associates"]?.value(["host": host]) == 0)
        #expect(families["aasa_fetch_host_associates"]?.samples.count == Self.hosts.count + 1)

        // A folder that does not exist: exit 2 at once, nothing fetched.
        let before = sites.requestCounts()
        let missing = try sites.run(["refresh", "--all", "--metrics", sites.file("no/such/folder/m.prom")] + sites.network)
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("aasa-fetch: metrics-unwritable: --metrics"), "stderr: \(missing.stderr)")
        #expect(sites.requestCounts() == before)
    }

    // MARK: - Status page

    @Test func statusPageOfTheExampleSitesLoadsCleanlyAndFilters() async throws {
        let sites = try await ExampleSites.start()
        defer { sites.stop() }
        try sites.record()
        let page = sites.file("status.html")
        let written = try sites.run(["report", "--html", page])
        #expect(written.status == 0, "stderr: \(written.stderr)")
        #expect(written.stdout.hasPrefix("wrote \(page): 6 hosts, 2 failing"), "stdout: \(written.stdout)")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.contains("<details data-i=\"0\" class=\"h s-fails\""))

        // Loaded in a real browser: no console message at all (errors, refused loads), every host a row.
        let plain = try HeadlessChromium.load(page)
        #expect(plain.console.isEmpty, "console: \(plain.console)")
        #expect(plain.dom.contains("data-ready=\"1\""), "the page's script ran to its end")
        let rows = HeadlessChromium.hostRows(plain.dom)
        #expect(Set(rows.map(\.host)) == Set(Self.hosts) && rows.allSatisfy { !$0.hidden })
        #expect(Set(rows.filter { $0.state == "fails" }.map(\.host)) == Self.failing)
        #expect(Array(rows.prefix(2)).allSatisfy { $0.state == "fails" }, "failing hosts come first")
        #expect(!plain.dom.contains(" open=\"\""), "no row is expanded")

        // The filter, preset by the URL fragment.
        func visible(_ fragment: String) throws -> [String] {
            let load = try HeadlessChromium.load(page, fragment: fragment)
            #expect(load.console.isEmpty, "\(fragment): \(load.console)")
            return HeadlessChromium.hostRows(load.dom).filter { !$0.hidden }.map(\.host)
        }
        #expect(try visible("q=example.net") == ["shop.example.net"])
        #expect(Set(try visible("state=fails")) == Self.failing)
        #expect(try visible("q=.example.com&state=associates") == ["example.com"])
        #expect(try visible("q=abcde12345.com.example.app").count == Self.hosts.count, "app IDs are searchable")
        #expect(try visible("q=no-such-host").isEmpty)
        #expect(try visible("sort=host") == Self.hosts.sorted())
        // A link to one host opens its row (and only its row).
        let opened = try HeadlessChromium.load(page, fragment: "open=www.example.com")
        #expect(opened.console.isEmpty, "\(opened.console)")
        let openTags = opened.dom.components(separatedBy: "<details ").filter { $0.prefix { $0 != ">" }.contains(" open=\"\"") }
        #expect(openTags.count == 1 && openTags.first?.contains("data-host=\"www.example.com\"") == true, "\(openTags)")
        // An opened row shows its failure with its fix, its history and, when there is one, its approved file.
        #expect(opened.dom.contains("<b>fix</b> serve the file itself at https://www.example.com/.well-known/apple-app-site-association with status 200"))
        let both = try HeadlessChromium.load(page, fragment: "open=old.example.com&open=example.com")
        #expect(both.console.isEmpty, "\(both.console)")
        #expect(both.dom.contains("<b>fix</b> add \"ABCDE12345.com.example.app\" to the appIDs of a detail under applinks.details"))
        #expect(both.dom.components(separatedBy: "<ol class=\"timeline\">").count == 3)
        #expect(both.dom.components(separatedBy: "<details class=\"file\">").count == 3)
        #expect(both.dom.contains("\"appIDs\": [\"ABCDE12345.com.example.app\", \"ABCDE12345.com.example.app2\"]"))
        #expect(!plain.dom.contains("<ol class=\"timeline\">"), "closed rows are not rendered")

        // What was written, as JSON: the hosts per state, as on the page.
        let described = try sites.run(["report", "--html", page, "--json", "--now", "2026-11-23T18:00:00Z"])
        #expect(described.status == 0, "stderr: \(described.stderr)")
        let document = try described.json()
        #expect(document["out"] as? String == page && document["generatedAt"] as? String == "2026-11-23T18:00:00Z")
        #expect(document["hosts"] as? Int == Self.hosts.count && document["unneededLeftOut"] as? Int == 0, "\(document)")
        let states = try #require(document["states"] as? [String: Int], "\(document)")
        #expect(states["fails"] == Self.failing.count && states.values.reduce(0, +) == Self.hosts.count, "\(states)")
        #expect(document["bytes"] as? Int == (try FileManager.default.attributesOfItem(atPath: page)[.size] as? Int))

        // Standard output too; an unwritable place is a clear error.
        let stdout = try sites.run(["report", "--html", "-"])
        #expect(stdout.status == 0 && stdout.stdout.hasPrefix("<!DOCTYPE html>") && stdout.stdout.contains("shop.example.net"))
        let bad = try sites.run(["report", "--html", sites.file("no/such/folder/page.html")])
        #expect(bad.status == 2 && bad.stderr.contains("aasa-fetch: report-unwritable:"), "stderr: \(bad.stderr)")
        // A pipe, as /dev/stdout would be: refused, never replaced (- is standard output).
        let pipe = sites.file("page.pipe")
        #expect(mkfifo(pipe, 0o644) == 0)
        let special = try sites.run(["report", "--html", pipe])
        #expect(special.status == 2 && special.stderr.contains("report-unwritable") && special.stderr.contains("not a regular file"),
                "stderr: \(special.stderr)")
        var info = stat()
        #expect(lstat(pipe, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO)
        let usage = try sites.run(["report"])
        #expect(usage.status == 64)
        let missingStore = try ToolRunner.run(["report", "--html", sites.file("x.html")])
        #expect(missingStore.status == 2 && missingStore.stderr.contains("store-missing"), "stderr: \(missingStore.stderr)")
        let help = try sites.run(["report", "--help"])
        #expect(help.stdout.contains("EXAMPLES:\n  $ aasa-fetch report --html status.html") && help.stdout.contains("EXIT CODES:"), "\(help.stdout)")
    }

    @Test func hostileStoreTextStaysTextInTheBrowser() async throws {
        let sites = try await ExampleSites.start()
        defer { sites.stop() }
        try sites.record()
        let host = "<img src=x onerror=alert(1)>.example"
        let appID = "\"><script>alert(2)</script>"
        let body = #"{"applinks":{"details":[{"appIDs":["</pre><script>alert(3)</script>"],"components":[{"/":"/*"}]}]}}"#
        func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
        try await sites.store().executeForTesting("""
            INSERT INTO hosts (host, route, tier, added_at, last_code, last_reason, last_http_status, last_url, last_headers, last_body,
                               fetched_at, approved_body, approved_at, consecutive_failures, next_check)
            VALUES (\(literal(host)), 'origin', 0, 1, 'ok', '<b>reason</b>', 200, 'https://x/', '[]', CAST(\(literal(body)) AS BLOB),
                    1800000000, CAST(\(literal(body)) AS BLOB), 1800000000, 0, 1900000000);
            INSERT INTO entries (entry, app_id, route, service, host, added_at)
            VALUES (\(literal("applinks:" + host)), \(literal(appID)), 'origin', 'applinks', \(literal(host)), 1);
            INSERT INTO history (host, route, at, kind, detail)
            VALUES (\(literal(host)), 'origin', 1800000000, 'failed', \(literal(#"{"code":"<i>x</i>","reason":"<svg onload=alert(4)>"}"#)));
            """)
        let page = sites.file("hostile.html")
        let written = try sites.run(["report", "--html", page])
        #expect(written.status == 0, "stderr: \(written.stderr)")
        let encoded = try #require(host.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        let load = try HeadlessChromium.load(page, fragment: "q=onerror&open=\(encoded)")
        #expect(load.console.isEmpty, "console: \(load.console)")
        // The DOM has exactly the page's own elements: one script, no img/svg/b/i from the store
        // (attribute values, which the browser writes back without escaping < and >, set aside).
        let markup = load.dom.replacingOccurrences(of: #"="[^"]*""#, with: "=\"\"", options: .regularExpression)
        #expect(markup.components(separatedBy: "<script").count == 3, "the island and the page's script")
        for element in ["<img", "<svg", "<b>reason", "<i>x"] {
            #expect(!markup.contains(element), "\(element) became markup")
        }
        #expect(load.dom.contains("&lt;img src=x onerror=alert(1)&gt;.example"))
        // The opened row's body is there, as text: its history and its approved file.
        #expect(load.dom.contains("&lt;svg onload=alert(4)&gt;"))
        #expect(load.dom.contains("&lt;/pre&gt;&lt;script&gt;alert(3)&lt;/script&gt;"))
        #expect(HeadlessChromium.hostRows(load.dom).filter { !$0.hidden }.count == 1)
    }

    // MARK: - PostgreSQL

    @Test func forcedChecksMetricsAndTheStatusPageOnPostgreSQL() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let sites = try await ExampleSites.start()
        defer { sites.stop() }
        let store = ["--store", server.url]
        try sites.record(store)
        let before = sites.requestCounts()
        let one = try sites.run(["refresh", "--host", "old.example.com", "--json"] + store + sites.network)
        #expect(one.status == 0, "stderr: \(one.stderr)")
        #expect(try one.json()["fetched"] as? Int == 1)
        #expect(Self.difference(sites.requestCounts(), before) == ["old.example.com": 1])

        let metrics = sites.file("pg.prom")
        let all = try sites.run(["refresh", "--all", "--metrics", metrics, "--json"] + store + sites.network)
        #expect(all.status == 0, "stderr: \(all.stderr)")
        #expect(try all.json()["fetched"] as? Int == Self.hosts.count)
        let families = Dictionary(uniqueKeysWithValues: try PrometheusTextParser.parse(try String(contentsOfFile: metrics, encoding: .utf8)).map { ($0.name, $0) })
        #expect(families["aasa_fetch_refresh_hosts_checked"]?.samples.first?.value == Double(Self.hosts.count))
        for host in Self.hosts {
            #expect(families["aasa_fetch_host_associates"]?.value(["host": host]) == (Self.failing.contains(host) ? 0 : 1), "\(host)")
        }
        let unknown = try sites.run(["refresh", "--host", "nothere.example"] + store + sites.network)
        #expect(unknown.status == 2 && unknown.stderr.contains("host-unknown"))

        let page = sites.file("pg.html")
        let written = try sites.run(["report", "--html", page] + store)
        #expect(written.status == 0, "stderr: \(written.stderr)")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        let rows = HeadlessChromium.hostRows(html)
        #expect(Set(rows.map(\.host)) == Set(Self.hosts))
        #expect(Set(rows.filter { $0.state == "fails" }.map(\.host)) == Self.failing)
        // Each host's history made it.
        #expect(html.components(separatedBy: "\\u003col class=\\\"timeline\\\">").count - 1 == Self.hosts.count)

        // A role that may only read (a status page's) runs show and report: every command made a
        // CREATE TABLE under the migration lock, and failed with permission denied.
        let grant = try ChildProcess.run("/usr/bin/psql", [server.url.replacingOccurrences(of: "?connect_timeout=5", with: ""), "-v", "ON_ERROR_STOP=1", "-c",
            "CREATE ROLE reader LOGIN; GRANT USAGE ON SCHEMA public TO reader; GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader;"])
        #expect(grant.status == 0, "\(grant.standardError)")
        let reader = ["--store", server.url.replacingOccurrences(of: "postgres@", with: "reader@")]
        let shown = try sites.run(["show", "--json"] + reader)
        #expect(shown.status == 0 || shown.status == 1, "stderr: \(shown.stderr)")
        #expect(try shown.json()["hosts"] as? [Any] != nil, "\(shown.stdout.prefix(300))")
        let readerPage = try sites.run(["report", "--html", sites.file("reader.html")] + reader)
        #expect(readerPage.status == 0, "stderr: \(readerPage.stderr)")
    }
}
