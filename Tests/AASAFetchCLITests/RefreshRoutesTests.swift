import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

/// `refresh` refreshes every stored route through its own route: rows recorded by
/// `fetch --route cdn` through the CDN (same `--cdn-base` semantics as `fetch`), origin rows
/// through the origin, each with its own conditional-request validators. A real nginx as the
/// origins, a second nginx speaking HTTP/2 as the local CDN, a real SQLite store; all on 127.0.0.1.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct RefreshRoutesTests {
    static let appID = "ABCDE12345.com.example.app"
    static let good = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/*"}]}]}}"#
    /// The CDN's copy: a different file (so its ETag differs from the origin's), the same app.
    static let cdnFile = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/*"},{"/":"/cdn/*"}]}]}}"#
    static let narrowed = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/shop/*"}]}]}}"#

    struct Fixture {
        let origin: NginxServer
        let cdn: NginxServer
        let ca: TestCA
        let root: URL

        var cache: URL { root.appendingPathComponent("cache") }

        var network: [String] {
            ["--cacert", ca.caCertPath, "--connect-to", "cdn.test:\(cdn.port):127.0.0.1:\(cdn.port)", "--connect-to", origin.connectTo,
             "--allow-private", "--retry-delays", "", "--connect-timeout", "2", "--max-time", "5",
             "--cdn-base", "https://cdn.test:\(cdn.port)/a/v1/"]
        }

        func stop() {
            origin.stop()
            cdn.stop()
            try? FileManager.default.removeItem(at: root)
        }

        func cdnCopy(_ host: String, _ body: String) throws {
            let file = root.appendingPathComponent("cdn/a/v1/\(host)")
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(body.utf8).write(to: file)
        }

        func originFile(_ host: String, _ body: String) throws {
            let file = root.appendingPathComponent("origin/\(host)/.well-known/apple-app-site-association")
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(body.utf8).write(to: file)
        }

        func run(_ arguments: [String]) throws -> ToolRunner.Result {
            try ToolRunner.run(arguments, cache: cache.path, timeout: .seconds(90))
        }

        static func start() async throws -> Fixture {
            let ca = try TestCA.shared()
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-refresh-routes-\(UUID().uuidString)")
            let json = "location ~ apple-app-site-association$ { default_type application/json; }"
            let hosts = ["both.test", "cdnonly.test"]
            for host in hosts {
                try FileManager.default.createDirectory(at: root.appendingPathComponent("origin/\(host)/.well-known"), withIntermediateDirectories: true)
            }
            let origin = try await NginxServer.start(hosts: [
                NginxVirtualHost(certificate: try ca.leaf(for: hosts), serverNames: hosts,
                                 documentRoot: root.appendingPathComponent("origin").path + "/$host", directives: [json]),
            ], http2: false)
            let cdnRoot = root.appendingPathComponent("cdn")
            try FileManager.default.createDirectory(at: cdnRoot.appendingPathComponent("a/v1"), withIntermediateDirectories: true)
            let cdn: NginxServer
            do {
                cdn = try await NginxServer.start(hosts: [
                    NginxVirtualHost(certificate: try ca.leaf(for: ["cdn.test"]), serverNames: ["cdn.test"], documentRoot: cdnRoot.path,
                                     directives: ["default_type application/json;"]),
                ], http2: true)
            } catch {
                origin.stop()
                throw error
            }
            let fixture = Fixture(origin: origin, cdn: cdn, ca: ca, root: root)
            try fixture.originFile("both.test", good)
            try fixture.originFile("cdnonly.test", good)
            try fixture.cdnCopy("both.test", cdnFile)
            try fixture.cdnCopy("cdnonly.test", cdnFile)
            return fixture
        }
    }

    static func later(days: Double) -> String { String(Int(Date().timeIntervalSince1970 + days * 86400)) }

    @Test func cdnRowsAreRefreshedThroughTheCDNAndOriginRowsThroughTheOrigin() async throws {
        let fixture = try await Fixture.start()
        defer { fixture.stop() }
        // Three rows: both.test (cdn), both.test (origin, for the developer-mode entry), cdnonly.test (cdn).
        let record = try fixture.run(fixture.network + ["--route", "cdn", "--app-id", Self.appID, "--quiet", "--json",
                                                        "--domain", "applinks:both.test", "--domain", "applinks:both.test?mode=developer",
                                                        "--domain", "applinks:cdnonly.test"])
        #expect(record.status == 0, "\(record.stdout)\n\(record.stderr)")
        let recorded = try await fixture.store().allHosts()
        #expect(Set(recorded.map(\.key)) == [HostKey(host: "both.test", route: .cdn), HostKey(host: "both.test", route: .origin),
                                             HostKey(host: "cdnonly.test", route: .cdn)])
        // Validators per (host, route): the CDN's copy is another file, so another ETag.
        let etags = Dictionary(uniqueKeysWithValues: recorded.map { ($0.key, $0.validators.etag) })
        let cdnTag = try #require(etags[HostKey(host: "both.test", route: .cdn)] ?? nil)
        let originTag = try #require(etags[HostKey(host: "both.test", route: .origin)] ?? nil)
        #expect(cdnTag != originTag)
        let originLogged = fixture.origin.requests().count
        let cdnLogged = fixture.cdn.requests().count

        // Due two days later: every row is fetched through its own route, conditionally (304 each).
        let now = Self.later(days: 2)
        let refresh = try fixture.run(["refresh", "--now", now, "--json"] + fixture.network)
        #expect(refresh.status == 0, "\(refresh.stdout)\n\(refresh.stderr)")
        #expect(!refresh.stderr.contains("another process"), "\(refresh.stderr)")
        let report = try refresh.json()
        #expect(report["fetched"] as? Int == 3, "\(report)")
        #expect(report["notModified"] as? Int == 3, "\(report)")
        #expect(report["leasedElsewhere"] as? Int == 0)
        let hosts = try #require(report["hosts"] as? [[String: Any]])
        #expect(Set(hosts.map { "\($0["host"] as? String ?? "") \($0["route"] as? String ?? "")" })
                == ["both.test cdn", "both.test origin", "cdnonly.test cdn"])
        #expect(hosts.allSatisfy { $0["httpStatus"] as? Int == 304 && $0["code"] as? String == "ok" }, "\(hosts)")

        let cdnRequests = fixture.cdn.requests().dropFirst(cdnLogged)
        #expect(cdnRequests.map(\.uri).sorted() == ["/a/v1/both.test", "/a/v1/cdnonly.test"], "\(cdnRequests)")
        #expect(cdnRequests.allSatisfy { $0.status == 304 && $0.serverProtocol == "HTTP/2.0" && $0.userAgent == "AASA-Bot/1.0.0" })
        let originRequests = fixture.origin.requests().dropFirst(originLogged)
        #expect(originRequests.map { "\($0.host) \($0.uri) \($0.status)" }
                == ["both.test /.well-known/apple-app-site-association 304"], "only the developer-mode row goes to the origin")

        // The results landed on the rows: fetched_at moved, no lease left, nothing due any more.
        let after = try await fixture.store().allHosts()
        let refreshedAt = try #require(Timestamp.parse(now))
        #expect(after.allSatisfy { $0.lastResult?.fetchedAt == refreshedAt && $0.lastResult?.httpStatus == 304 }, "\(after.map { ($0.key, $0.lastResult?.fetchedAt) })")
        #expect(after.allSatisfy { $0.lease == nil || $0.lease!.expires <= refreshedAt })
        let again = try fixture.run(["refresh", "--now", now] + fixture.network)
        #expect(again.status == 0)
        #expect(again.stdout.isEmpty && again.stderr.isEmpty, "nothing is due and nothing is leased: \(again.stdout)\(again.stderr)")

        // A change on the CDN is found on the CDN row only.
        try fixture.cdnCopy("cdnonly.test", Self.narrowed)
        let changed = try fixture.run(["refresh", "--now", Self.later(days: 5), "--json"] + fixture.network)
        #expect(changed.status == 0, "\(changed.stderr)")
        let changedHosts = try #require(try changed.json()["hosts"] as? [[String: Any]])
        let cdnOnly = try #require(changedHosts.first { $0["host"] as? String == "cdnonly.test" })
        #expect(cdnOnly["route"] as? String == "cdn")
        #expect((cdnOnly["events"] as? [[String: Any]])?.compactMap { $0["kind"] as? String } == ["changed"])
        #expect(changedHosts.filter { $0["host"] as? String == "both.test" }.allSatisfy { $0["httpStatus"] as? Int == 304 })
    }

    /// Runs of one app on different routes share a store: each replaces only what its route
    /// records (`cdn`: the plain entries on the CDN, the `?mode=` ones on the origin; `origin` and
    /// `both`: every entry on the origin), so a `both` run does not retire a `cdn` run's CDN rows.
    @Test func eachRouteReplacesOnlyWhatItRecords() async throws {
        let fixture = try await Fixture.start()
        defer { fixture.stop() }
        let entries = ["--domain", "applinks:both.test", "--domain", "applinks:both.test?mode=developer", "--domain", "applinks:cdnonly.test"]
        func run(_ route: String, _ entries: [String]) throws -> ToolRunner.Result {
            let result = try fixture.run(fixture.network + ["--route", route, "--app-id", Self.appID, "--json"] + entries)
            #expect(result.status == 0, "\(route): \(result.stdout)\n\(result.stderr)")
            return result
        }
        func unneeded() async throws -> Set<HostKey> {
            Set(try await fixture.store().allHosts().filter { $0.unneededSince != nil }.map(\.key))
        }
        _ = try run("cdn", entries)
        let both = try run("both", entries)
        #expect(!both.stderr.contains("no longer needed"), "\(both.stderr)")
        _ = try run("origin", entries)
        #expect(try await unneeded().isEmpty)
        #expect(try await fixture.store().allHosts().count == 4, "both.test and cdnonly.test on each route")

        // A CDN run without cdnonly.test drops its CDN row only; the origin runs' rows stay.
        let dropped = try run("cdn", ["--domain", "applinks:both.test", "--domain", "applinks:both.test?mode=developer"])
        #expect(dropped.stderr.contains("1 host is no longer needed") && dropped.stderr.contains("cdnonly.test"), "\(dropped.stderr)")
        #expect(try await unneeded() == [HostKey(host: "cdnonly.test", route: .cdn)])
        let show = try fixture.run(["show", "--json"])
        let hosts = try #require(try show.json()["hosts"] as? [[String: Any]], "\(show.stdout)")
        #expect(hosts.filter { $0["unneededSince"] is String }.map { "\($0["host"] ?? "") \($0["route"] ?? "")" } == ["cdnonly.test cdn"], "\(hosts)")
    }

    @Test func refreshValidatesTheCDNBase() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-refresh-base-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try ToolRunner.run(["refresh", "--cdn-base", "http://cdn.test/"], cache: folder.path)
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("--cdn-base takes an https:// URL"), "\(result.stderr)")
    }
}

extension RefreshRoutesTests.Fixture {
    func store() throws -> SQLiteAssociationStore {
        try SQLiteAssociationStore(path: cache.appendingPathComponent(SQLiteAssociationStore.fileName).path, create: false)
    }
}
