import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

/// `show` presents the verdict `fetch` gave: a host whose file downloads fine but does not list
/// the app that needs it is `✘ app-not-listed`, not `✔ ok`; association is judged per app ID.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ShowVerdictTests {
    static let app = "ABCDE12345.com.example.app"
    static let other = "ZYXWV98765.com.example.other"
    static let listsApp = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/*"}]}]}}"#
    static let listsOther = #"{"applinks":{"details":[{"appIDs":["ZYXWV98765.com.example.other"],"components":[{"/":"/*"}]}]},"webcredentials":{"apps":["ABCDE12345.com.example.app"]}}"#

    /// nginx on 127.0.0.1 serving each host's file from `root/sites` under `*.show.test`, and the
    /// network options that reach it.
    static func serve(_ files: [(host: String, body: String)], in root: URL) async throws -> (NginxServer, [String]) {
        let ca = try TestCA.shared()
        for (host, body) in files {
            let file = root.appendingPathComponent("sites/\(host)/.well-known/apple-app-site-association")
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(body.utf8).write(to: file)
        }
        let nginx = try await NginxServer.start(hosts: [
            NginxVirtualHost(certificate: try ca.leaf(for: ["*.show.test"]), serverNames: ["*.show.test"],
                             documentRoot: root.appendingPathComponent("sites").path + "/$host",
                             directives: ["location ~ apple-app-site-association$ { default_type application/json; }"]),
        ], http2: false)
        return (nginx, ["--cacert", ca.caCertPath, "--connect-to", nginx.connectTo, "--allow-private", "--retry-delays", ""])
    }

    @Test func showGivesTheVerdictFetchGave() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-show-verdict-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let cache = root.appendingPathComponent("cache").path
        let (nginx, network) = try await Self.serve([("good.show.test", Self.listsApp), ("other.show.test", Self.listsOther)], in: root)
        defer { nginx.stop() }

        let fetch = try ToolRunner.run(network + ["--domain", "applinks:good.show.test", "--domain", "applinks:other.show.test",
                                                  "--app-id", Self.app, "--quiet", "--json"], cache: cache)
        #expect(fetch.status == 1)
        let fetched = try fetch.json()
        #expect(fetched.domain("good.show.test")?["code"] as? String == "ok")
        #expect(fetched.domain("other.show.test")?["code"] as? String == "app-not-listed")

        // The list: the same marks and codes as fetch.
        let list = try ToolRunner.run(["show"], cache: cache)
        #expect(list.status == 0, "\(list.stderr)")
        let lines = list.stdout.split(separator: "\n").map(String.init)
        let good = try #require(lines.first { $0.contains("good.show.test") })
        let other = try #require(lines.first { $0.contains("other.show.test") })
        #expect(good.hasPrefix("✔") && good.contains("ok 200"), "\(list.stdout)")
        #expect(other.hasPrefix("✘") && other.contains("app-not-listed 200"), "\(list.stdout)")

        // JSON: the verdict code and, per entry and app ID, the association.
        let json = try ToolRunner.run(["show", "--json"], cache: cache)
        let hosts = try #require(try json.json()["hosts"] as? [[String: Any]])
        let goodRecord = try #require(hosts.first { $0["host"] as? String == "good.show.test" })
        let otherRecord = try #require(hosts.first { $0["host"] as? String == "other.show.test" })
        #expect(goodRecord["code"] as? String == "ok")
        #expect(goodRecord["associated"] as? Bool == true)
        #expect(otherRecord["code"] as? String == "app-not-listed")
        #expect(otherRecord["associated"] as? Bool == false)
        #expect(otherRecord["approved"] as? Bool == true, "the download itself gave an approved file")
        let associations = try #require(otherRecord["associations"] as? [[String: Any]])
        #expect(associations.count == 1)
        #expect(associations.first?["entry"] as? String == "applinks:other.show.test")
        #expect(associations.first?["appID"] as? String == Self.app)
        #expect(associations.first?["associated"] as? Bool == false)
        #expect(associations.first?["code"] as? String == "app-not-listed")

        // One host in detail: the verdict, and which app is not listed.
        let detail = try ToolRunner.run(["show", "other.show.test"], cache: cache)
        #expect(detail.status == 0)
        #expect(detail.stdout.contains("verdict        ✘ app-not-listed"), "\(detail.stdout)")
        #expect(detail.stdout.contains("\(Self.app) is not listed for applinks"), "\(detail.stdout)")

        // A second app that needs the host and is listed: association per app ID.
        let second = try ToolRunner.run(network + ["--domain", "applinks:other.show.test", "--app-id", Self.other, "--quiet"], cache: cache)
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        let both = try #require((try ToolRunner.run(["show", "other.show.test", "--json"], cache: cache).json()["hosts"] as? [[String: Any]])?.first)
        let byApp = Dictionary(uniqueKeysWithValues: (both["associations"] as? [[String: Any]] ?? []).map {
            ($0["appID"] as? String ?? "", $0["associated"] as? Bool)
        })
        #expect(byApp == [Self.app: false, Self.other: true])
        #expect(both["associated"] as? Bool == false, "one app that needs the host is not listed")
        #expect(both["code"] as? String == "app-not-listed")
    }

    /// An entry in Unicode is fetched under its Punycode name and fails `entitlement-not-punycode`:
    /// the store records it as written, so `show`, `refresh` and the status page say what the run
    /// said (they called the host fine: the need was recorded under its Punycode form).
    @Test func anEntryThatFailsOnItsOwnFailsInTheStoreToo() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-show-idn-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let cache = root.appendingPathComponent("cache").path
        let (nginx, network) = try await Self.serve([("xn--bcher-kva.show.test", Self.listsApp)], in: root)
        defer { nginx.stop() }
        let fetch = try ToolRunner.run(network + ["--domain", "applinks:bücher.show.test", "--app-id", Self.app, "--quiet", "--json"], cache: cache)
        #expect(fetch.status == 1)
        #expect(try fetch.json().domain("xn--bcher-kva.show.test")?["code"] as? String == "entitlement-not-punycode")

        let show = try #require((try ToolRunner.run(["show", "--json"], cache: cache).json()["hosts"] as? [[String: Any]])?.first)
        #expect(show["code"] as? String == "entitlement-not-punycode" && show["associated"] as? Bool == false, "\(show)")
        let refresh = try ToolRunner.run(["refresh", "--all", "--json"] + network, cache: cache)
        let refreshed = try #require((try refresh.json()["hosts"] as? [[String: Any]])?.first)
        #expect(refreshed["associated"] as? Bool == false, "\(refreshed)")
        let report = try ToolRunner.run(["report", "--html", root.appendingPathComponent("r.html").path, "--json"], cache: cache)
        #expect((try report.json()["states"] as? [String: Any])?["fails"] as? Int == 1, "\(report.stdout)")

        // Recorded without an app ID, it fails all the same: it never matches on a device.
        let anonymous = root.appendingPathComponent("anonymous").path
        let recorded = try ToolRunner.run(network + ["--domain", "applinks:bücher.show.test", "--quiet"], cache: anonymous)
        #expect(recorded.status == 1, "\(recorded.stdout)\(recorded.stderr)")
        let listed = try #require((try ToolRunner.run(["show", "--json"], cache: anonymous).json()["hosts"] as? [[String: Any]])?.first)
        #expect(listed["code"] as? String == "entitlement-not-punycode" && listed["associated"] as? Bool == false, "\(listed)")
        let again = try ToolRunner.run(["refresh", "--all", "--json"] + network, cache: anonymous)
        #expect(again.status == 0, "no change: \(again.stderr)")
        #expect((try again.json()["hosts"] as? [[String: Any]])?.first?["associated"] as? Bool == false, "\(again.stdout)")
        let page = try ToolRunner.run(["report", "--html", root.appendingPathComponent("r2.html").path, "--json"], cache: anonymous)
        #expect((try page.json()["states"] as? [String: Any])?["fails"] as? Int == 1, "\(page.stdout)")
    }

    /// `show` without a host reads the store a page at a time and writes as it reads: a store of
    /// several pages lists every host once, in order of addition; the JSON is one valid document;
    /// the table's columns line up over every page, and a host name with a control character is
    /// escaped and counted as the terminal shows it.
    @Test func showListsAStoreOfSeveralPagesOnceEachInOrder() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-show-pages-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let cache = root.appendingPathComponent("cache")
        try FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
        let count = 1_203
        do {
            let store = try SQLiteAssociationStore(path: cache.appendingPathComponent(SQLiteAssociationStore.fileName).path, create: true)
            let now = Date(timeIntervalSince1970: 1_800_000_000)
            #expect(try await store.insertSyntheticHosts(count: count, nextCheck: now, now: now) == count)
            try await store.executeForTesting("UPDATE hosts SET host = 'h700' || char(27) || '[2J.bench.example' WHERE host = 'h700.bench.example'")
            try await store.executeForTesting("DELETE FROM hosts WHERE host = 'h3.bench.example'")
            let pages = try await store.hosts(after: 0, limit: 500)
            #expect(pages.states.count == 500)
            let rest = try await store.hosts(after: try #require(pages.cursor), limit: 10_000)
            #expect(rest.states.count == count - 1 - 500)
            #expect(try await store.hosts(after: try #require(rest.cursor), limit: 10).cursor == nil)
        }
        let expected = (0..<count).filter { $0 != 3 }.map { $0 == 700 ? "h700\u{1B}[2J.bench.example" : "h\($0).bench.example" }

        let json = try ToolRunner.run(["show", "--json", "--now", "2027-01-01T00:00:00Z"], cache: cache.path)
        #expect(json.status == 0, "\(json.stderr)")
        let hosts = try #require(try json.json()["hosts"] as? [[String: Any]])
        #expect(hosts.compactMap { $0["host"] as? String } == expected)

        let table = try ToolRunner.run(["show", "--now", "2027-01-01T00:00:00Z"], cache: cache.path)
        #expect(table.status == 0, "\(table.stderr)")
        let lines = table.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == expected.count + 2)
        #expect(lines.last == "\(expected.count) hosts; * due now")
        let rows = Array(lines.dropFirst().dropLast())
        #expect(rows.map { $0.dropFirst(2).split(separator: " ").first.map(String.init) ?? "" }
            == expected.map { $0.replacingOccurrences(of: "\u{1B}", with: "\\x1B") })
        // Every row's STATUS column starts where the header's does: the widths cover every page
        // and the escaped name (`\x1B[2J`) as shown.
        let column = try #require(lines.first?.range(of: "STATUS")).lowerBound.utf16Offset(in: lines[0])
        for row in rows {
            let status = try #require(row.range(of: "ok ---") ?? row.range(of: "ok "))
            #expect(status.lowerBound.utf16Offset(in: row) == column, "\(row)")
        }

        // Both wait in a temporary file in TMPDIR: none there is spool-error, nothing printed.
        for arguments in [["show"], ["show", "--json"]] {
            let run = try ToolRunner.run(arguments, cache: cache.path, environment: ["TMPDIR": root.appendingPathComponent("missing").path])
            #expect(run.status == 2 && run.stderr.contains("spool-error") && !run.stdout.contains("h0.bench.example"), "\(arguments): \(run.stderr)")
        }
        // A store that fails on a later page: the error document, not half a document.
        do {
            let store = try SQLiteAssociationStore(path: cache.appendingPathComponent(SQLiteAssociationStore.fileName).path, create: false)
            try await store.executeForTesting("UPDATE hosts SET next_check = 'soon' WHERE host = 'h1100.bench.example'")
        }
        let broken = try ToolRunner.run(["show", "--json"], cache: cache.path)
        #expect(broken.status == 2)
        let document = try broken.json()
        #expect((document["error"] as? [String: Any])?["code"] as? String == "store-corrupt", "\(broken.stdout)")
    }
}
