@testable import AASAFetchCLI
import AASAFetchCore
import AASAFetchTestSupport
import ArgumentParser
import Foundation
import Testing

/// The example sites of `scripts/demo` (`examples/site/HOST/`, `www.example.com` redirecting to
/// `example.com`) on nginx with the shared test CA.
struct DemoSites {
    static let hosts = ["example.com", "www.example.com", "shop.example.net", "legacy.example.org", "xn--bcher-kva.example", "old.example.com"]
    static let examples = TestPaths.repository.appendingPathComponent("examples")
    static let entitlements = examples.appendingPathComponent("Example.entitlements").path
    static let appID = "ABCDE12345.com.example.app"

    let nginx: NginxServer
    let ca: TestCA

    static func start() async throws -> DemoSites {
        let ca = try TestCA.shared()
        let leaf = try ca.leaf(for: hosts)
        let site = examples.appendingPathComponent("site").path
        let nginx = try await NginxServer.start(hosts: [
            NginxVirtualHost(certificate: leaf, serverNames: ["_"], documentRoot: site + "/$host", directives: ["default_type application/json;"]),
            NginxVirtualHost(certificate: leaf, serverNames: ["www.example.com"], documentRoot: site,
                             directives: ["return 301 https://example.com$request_uri;"]),
        ], http2: false)
        return DemoSites(nginx: nginx, ca: ca)
    }

    func stop() { nginx.stop() }

    var network: [String] {
        ["--cacert", ca.caCertPath, "--connect-to", nginx.connectTo, "--allow-private", "--retry-delays", ""]
    }
}

/// One input grammar on `fetch`, `plan`, `match` and `diagnose`, and one store grammar on every
/// command that uses the store: each option is accepted by each command and means the same there.
@Suite(.timeLimit(.minutes(5)))
struct InputGrammarTests {
    /// The four commands that read inputs, with what each needs besides the inputs.
    static let inputCommands: [(name: String, prefix: [String])] = [
        ("fetch", ["fetch"]), ("plan", ["plan"]), ("match", ["match", "https://example.com/"]), ("diagnose", ["diagnose"]),
    ]

    /// The parsed input options of a command line of one of the four commands.
    static func input(_ arguments: [String]) throws -> InputOptions {
        let command = try AASAFetchCommand.parseAsRoot(arguments)
        switch command {
        case let fetch as AASAFetchCommand.Fetch: return fetch.input
        case let plan as AASAFetchCommand.Plan: return plan.input
        case let match as AASAFetchCommand.Match: return match.input
        case let diagnose as AASAFetchCommand.Diagnose: return diagnose.input
        default: throw TestSupportError("\(arguments) parsed as \(type(of: command))")
        }
    }

    @Test(arguments: inputCommands.map(\.name))
    func everyInputOptionParsesTheSameOnEveryCommand(_ name: String) throws {
        let prefix = try #require(Self.inputCommands.first { $0.name == name }?.prefix)
        let given = try Self.input(prefix + [
            "--entitlements", "E.entitlements", "--domain", "applinks:a.example", "--domain", "b.example",
            "--domains", "list.txt", "--app-id", "ABCDE12345.a", "--app-id", "ABCDE12345.b",
            "--define", "N=V", "--region", "de", "-q",
        ])
        #expect(given.entitlementsPath == "E.entitlements")
        #expect(given.domains == ["applinks:a.example", "b.example"])
        #expect(given.domainsFile == "list.txt")
        #expect(given.appIDs == ["ABCDE12345.a", "ABCDE12345.b"])
        #expect(given.definitionTable == ["N": "V"])
        #expect(given.effectiveRegion == "DE")
        #expect(given.quiet)
        let app = try Self.input(prefix + ["--app", "My.ipa", "--quiet"])
        #expect(app.appPath == "My.ipa")
        #expect(app.quiet)
        // The same usage errors everywhere.
        for bad in [["--entitlements", "E", "--app", "A"], ["--domain", "x.example", "--define", "NOVALUE"], ["--domain", "x.example", "--region", "XX"]] {
            #expect(throws: (any Error).self, "\(name) \(bad)") { try AASAFetchCommand.parseAsRoot(prefix + bad) }
        }
        if name == "match" {
            // match also takes --aasa or --cases: its validation says what is missing.
            #expect(throws: (any Error).self, "\(name)") { try AASAFetchCommand.parseAsRoot(prefix) }
        } else if name != "diagnose" {
            // diagnose takes a HOST instead; the others need some input, checked when they run
            // (after the parser's own errors).
            #expect(throws: CommandFailure.self, "\(name)") { try Self.input(prefix).requireEntries(command: name) }
        }
    }

    /// A second `--domains`, `--entitlements` or `--app` is a usage error in every command that
    /// reads inputs; an environment variable's value beside the command line's is not (the
    /// command line's overrides it). Regression: the parser kept the last one, so a failing list
    /// given first was never read and the run exited 0.
    @Test(arguments: inputCommands.map(\.name))
    func aRepeatedSingleInputIsAUsageError(_ name: String) throws {
        let prefix = try #require(Self.inputCommands.first { $0.name == name }?.prefix)
        for (option, extra) in [("--domains", ["--domain", "x.example"]), ("--entitlements", []), ("--app", [])] {
            let arguments = prefix + [option, "first", "\(option)=second"] + extra + ["--json", "--no-config"]
            let run = try ToolRunner.run(arguments, cache: nil)
            #expect(run.status == 64, "\(arguments): \(run.stdout) \(run.stderr)")
            let error = try #require(try run.json()["error"] as? [String: Any], "\(arguments)")
            #expect(error["code"] as? String == "usage")
            #expect((error["message"] as? String)?.contains("\(option) is given 2 times ('first', 'second')") == true, "\(error)")
        }
        // The environment's value beside the command line's is no repetition: the command line wins.
        let overridden = try ToolRunner.run(prefix + ["--domains", "/nonexistent/list.txt", "--json", "--no-config"],
                                            environment: ["AASA_FETCH_DOMAINS": "/nonexistent/other.txt"])
        #expect(overridden.status != 64 && !overridden.stdout.contains("is given"), "\(overridden.stdout)")
        #expect(OptionSources.repeatedInputOption(in: prefix + ["--domains", "a", "--domain", "x", "--app-id", "A.b"]) == nil)
        #expect(OptionSources.repeatedInputOption(in: prefix + ["--domains", "a", "--", "--domains"]) == nil)
    }

    /// `load()` is the one reader: a bare `--domain` host is `applinks:HOST` with a note, and the
    /// app ID defaults to the entitlements' `application-identifier` (else `--app-id` wins).
    @Test func loadReadsBareHostsAndTheDefaultAppID() throws {
        let loaded = try Self.input(["plan", "--entitlements", DemoSites.entitlements, "--domain", "extra.example.com"]).load()
        #expect(loaded.entries.last?.normalized == "applinks:extra.example.com")
        #expect(loaded.findings.map(\.code) == ["entry-bare-host"])
        #expect(loaded.findings.first?.severity == .info)
        #expect(loaded.appIDs == [DemoSites.appID])
        #expect(loaded.appIDSource == .entitlements)
        let chosen = try Self.input(["plan", "--entitlements", DemoSites.entitlements, "--app-id", "ZYXWV98765.x"]).load()
        #expect(chosen.appIDs == ["ZYXWV98765.x"])
        #expect(chosen.appIDSource == .option)
        // A whole entry gets no note; a list line's bare host means the same as --domain's.
        let whole = try Self.input(["plan", "--domain", "webcredentials:example.com"]).load()
        #expect(whole.findings.isEmpty)
        #expect(InputOptions.entryString(fromLine: "example.com # comment") == "applinks:example.com")
        #expect(InputOptions.entry(fromDomainOption: "example.com").entry == "applinks:example.com")
        // A host with a port is a bare host, so the entry reports the port (it was service
        // `www.example.com` with host `8080`, planned and fetched); a URL reports its scheme.
        #expect(InputOptions.entry(fromDomainOption: "www.example.com:8080").entry == "applinks:www.example.com:8080")
        #expect(InputOptions.entryString(fromLine: "example.com:443") == "applinks:example.com:443")
        #expect(InputOptions.entryString(fromLine: "[::1]:443") == "applinks:[::1]:443")
        #expect(InputOptions.entry(fromDomainOption: "https://example.com").entry == "https://example.com")
        #expect(InputOptions.entry(fromDomainOption: "webcredentials:example.com").entry == "webcredentials:example.com")
        let port = try Self.input(["plan", "--domain", "www.example.com:8080"]).load()
        #expect(port.entries.first?.errorCode == "entitlement-port" && port.entries.first?.isFetchable == false)
        // So is a one-label name with a port, which is not a service: `localhost:8080` reported
        // an unknown service `localhost` naming "the IP address 8080".
        #expect(InputOptions.entry(fromDomainOption: "localhost:8080").entry == "applinks:localhost:8080")
        #expect(InputOptions.entryString(fromLine: "intranet:8443") == "applinks:intranet:8443")
        #expect(InputOptions.entry(fromDomainOption: "localhost:8080?mode=developer").entry == "applinks:localhost:8080?mode=developer")
        #expect(InputOptions.entry(fromDomainOption: "webcredentials:8080").entry == "webcredentials:8080")
        let single = try Self.input(["plan", "--domain", "localhost:8080"]).load()
        #expect(single.entries.first?.errorCode == "entitlement-port", "\(single.entries.first?.findings ?? [])")
        #expect(single.entries.first?.findings.map(\.code).contains("entitlement-unknown-service") == false)
        let url = try Self.input(["plan", "--domain", "https://www.example.com/"]).load()
        #expect(url.entries.first?.errorCode == "entitlement-scheme")
    }

    @Test func diagnoseWalksEntriesInTheOrderOfTheirDownloads() throws {
        let entries = EntryParser().parse(["applinks:a.de", "applinks:https://bad/", "applinks:b.com", "applinks:c.fr"])
        let hosts = { (region: String?) in AASAFetchCommand.Diagnose.walkOrder(entries, region: region).map { $0.raw ?? "" } }
        #expect(hosts(nil) == ["applinks:b.com", "applinks:a.de", "applinks:c.fr", "applinks:https://bad/"])
        #expect(hosts("FR") == ["applinks:b.com", "applinks:c.fr", "applinks:a.de", "applinks:https://bad/"])
        #expect(AASAFetchCommand.Diagnose.entry(forHost: "example.com") == "applinks:example.com")
        #expect(AASAFetchCommand.Diagnose.entry(forHost: "webcredentials:example.com") == "webcredentials:example.com")
        // A port stays the host's (the check names it); any other `word:rest` is a whole entry
        // (`foo:` was read as a host with the "port" ok.example.com).
        #expect(AASAFetchCommand.Diagnose.entry(forHost: "example.com:8443") == "applinks:example.com:8443")
        #expect(AASAFetchCommand.Diagnose.entry(forHost: "foo:ok.example.com") == "foo:ok.example.com")
    }

    /// Through the binary against the example sites: every input option means the same in each command.
    @Test func inputOptionsMeanTheSameInEveryCommand() async throws {
        let sites = try await DemoSites.start()
        defer { sites.stop() }
        let network = sites.network
        let list = FileManager.default.temporaryDirectory.appendingPathComponent("grammar-\(UUID().uuidString).txt")
        defer { try? FileManager.default.removeItem(at: list) }
        try Data("# two sites\nlegacy.example.org\nxn--bcher-kva.example\n".utf8).write(to: list)

        // --entitlements: entries and the default app ID.
        let fetch = try ToolRunner.run(["--entitlements", DemoSites.entitlements, "--json"] + network).json()
        let plan = try ToolRunner.run(["plan", "--entitlements", DemoSites.entitlements, "--json"]).json()
        let diagnose = try ToolRunner.run(["diagnose", "--entitlements", DemoSites.entitlements, "--json"] + network).json()
        for (name, report) in [("fetch", fetch), ("plan", plan), ("diagnose", diagnose)] {
            #expect(report["appIDs"] as? [String] == [DemoSites.appID], "\(name)")
            #expect(report["appIDSource"] as? String ?? "entitlements" == "entitlements", "\(name)")
        }
        let match = try ToolRunner.run(["match", "https://shop.example.net/cart", "--entitlements", DemoSites.entitlements, "--json", "--no-store"] + network)
        #expect(match.stdout.split(separator: "\n").count == 1, "\(match.stdout)")
        #expect(match.stdout.contains(#""appID":"\#(DemoSites.appID)""#), "\(match.stdout)")
        #expect(match.status == 0, "\(match.stderr)")

        // --domain with a bare host: applinks:HOST and a note, in each command.
        let bare = ["--domain", "shop.example.net", "--app-id", DemoSites.appID]
        for arguments in [["fetch"] + bare + network, ["plan"] + bare, ["diagnose"] + bare + network] {
            let report = try ToolRunner.run(arguments + ["--json"]).json()
            #expect(report.findingCodes == ["entry-bare-host"], "\(arguments[0])")
            let entry = (report["entries"] as? [[String: Any]])?.first?["normalized"] ?? (report["diagnoses"] as? [[String: Any]])?.first?["normalized"]
            #expect(entry as? String == "applinks:shop.example.net", "\(arguments[0])")
        }
        let noted = try ToolRunner.run(["match", "https://shop.example.net/cart"] + bare + network + ["--no-store"])
        #expect(noted.stderr.contains("note entry-bare-host"), "\(noted.stderr)")
        #expect(noted.status == 0)
        // -q: no notes (and no progress) on standard error.
        let quiet = try ToolRunner.run(["match", "https://shop.example.net/cart", "-q"] + bare + network + ["--no-store"])
        #expect(quiet.stderr.isEmpty, "\(quiet.stderr)")

        // --domains: the same list in each command.
        for arguments in [["fetch", "--json"] + network, ["plan", "--json"], ["diagnose", "--json"] + network] {
            let report = try ToolRunner.run(arguments + ["--domains", list.path, "--app-id", DemoSites.appID]).json()
            let entries = (report["entries"] as? [[String: Any]]) ?? (report["diagnoses"] as? [[String: Any]]) ?? []
            #expect(entries.compactMap { $0["normalized"] as? String } == ["applinks:legacy.example.org", "applinks:xn--bcher-kva.example"],
                    "\(arguments[0])")
        }
        let listed = try ToolRunner.run(["match", "https://xn--bcher-kva.example/cart", "--domains", list.path, "-q", "--no-store"] + network)
        #expect(listed.stdout.hasPrefix("match"), "\(listed.stdout) \(listed.stderr)")

        // --region: the same order of downloads (fetch, plan) and of diagnoses: the region's
        // ccTLD first (these hosts are not served: the order is what counts).
        let regional = ["--domain", "applinks:shop.example.de", "--domain", "applinks:shop.example.fr", "--app-id", DemoSites.appID]
        for (region, order) in [("DE", ["shop.example.de", "shop.example.fr"]), ("FR", ["shop.example.fr", "shop.example.de"])] {
            let fetched = try ToolRunner.run(["fetch", "--json", "--region", region] + regional + network).json()
            #expect((fetched["domains"] as? [[String: Any]])?.compactMap { $0["host"] as? String } == order, "fetch \(region)")
            let planned = try ToolRunner.run(["plan", "--json", "--region", region] + regional).json()
            #expect((planned["fetches"] as? [[String: Any]])?.compactMap { $0["host"] as? String } == order, "plan \(region)")
            let diagnosed = try ToolRunner.run(["diagnose", "--json", "--region", region] + regional + network).json()
            #expect((diagnosed["diagnoses"] as? [[String: Any]])?.compactMap { $0["host"] as? String } == order, "diagnose \(region)")
        }

        // diagnose takes HOST together with the other inputs.
        let both = try ToolRunner.run(["diagnose", "shop.example.net", "--domain", "applinks:legacy.example.org", "--app-id", DemoSites.appID, "--json"] + network)
        #expect((try both.json()["diagnoses"] as? [[String: Any]])?.count == 2)
    }

    /// `--app`: the app's signed domains and its app ID, in each command.
    @Test func appMeansTheSameInEveryCommand() async throws {
        let sites = try await DemoSites.start()
        defer { sites.stop() }
        let dir = try AppFixtures.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let ipa = dir.appendingPathComponent("Demo.ipa")
        try Data(try AppFixtures.deflatedZip(AppFixtures.ipaEntries(executable: AppFixtures.signedExecutable(), profile: try AppFixtures.profile())))
            .write(to: ipa)
        let app = ["--app", ipa.path]
        for arguments in [["fetch", "--json"] + app + sites.network, ["plan", "--json"] + app, ["diagnose", "--json"] + app + sites.network] {
            let report = try ToolRunner.run(arguments).json()
            #expect(report["appIDs"] as? [String] == [AppFixtures.appID], "\(arguments[0])")
            #expect(report["appIDSource"] as? String ?? "app" == "app", "\(arguments[0])")
        }
        // example.com lists other apps only: match answers for the app's own ID (no_match, exit 1).
        let match = try ToolRunner.run(["match", "https://example.com/buy/1", "--json", "--no-store"] + app + sites.network)
        #expect(match.stdout.contains(#""appID":"\#(AppFixtures.appID)""#) && match.stdout.contains(#""decision":"no_match""#), "\(match.stdout)")
        #expect(match.status == 1)
    }

    /// One store grammar: `--cache DIR` names the same store in every command that uses one;
    /// `--no-store` (fetch, match) uses none and refuses a store option beside it.
    @Test func storeOptionsMeanTheSameInEveryCommand() async throws {
        let sites = try await DemoSites.start()
        defer { sites.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("grammar-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let elsewhere = folder.appendingPathComponent("unused").path
        let cache = ["--cache", folder.appendingPathComponent("store").path]
        // The environment's store is another folder: --cache must win everywhere.
        func run(_ arguments: [String]) throws -> ToolRunner.Result { try ToolRunner.run(arguments, cache: elsewhere) }

        #expect(try run(["--domain", "applinks:shop.example.net", "--no-store", "-q"] + sites.network).status == 0)
        #expect(!FileManager.default.fileExists(atPath: elsewhere), "--no-store created a store")
        #expect(try run(["--domain", "applinks:shop.example.net", "-q"] + cache + sites.network).status == 0)
        #expect(try run(["match", "https://legacy.example.org/cart", "--domain", "applinks:legacy.example.org", "-q"] + cache + sites.network).status == 0)
        let shown = try run(["show", "--json"] + cache).json()
        #expect(Set((shown["hosts"] as? [[String: Any]])?.compactMap { $0["host"] as? String } ?? []) == ["shop.example.net", "legacy.example.org"])
        #expect(try run(["refresh"] + cache + sites.network).status == 0)
        #expect(try run(["export", "--out", folder.appendingPathComponent("out").path] + cache).status == 0)
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("out/origin/shop.example.net.json").path))
        #expect(try run(["forget", "shop.example.net"] + cache).status == 0)
        #expect(try run(["show", "shop.example.net"] + cache).status == 1)
        #expect(!FileManager.default.fileExists(atPath: elsewhere), "a command ignored --cache")

        // --store names a PostgreSQL store on each of them (here one that is not there: exit 2, its code).
        let unreachable = ["--store", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"]
        let commands: [(arguments: [String], network: Bool)] = [
            (["--domain", "applinks:shop.example.net"], true), (["match", "https://shop.example.net/", "--domain", "applinks:shop.example.net"], true),
            (["refresh"], true), (["show"], false), (["forget", "shop.example.net"], false), (["export"], false),
        ]
        for (arguments, network) in commands {
            let result = try run(arguments + unreachable + (network ? sites.network : []))
            #expect(result.status == 2, "\(arguments) \(result.stderr)")
            #expect(result.stderr.contains("store-unreachable"), "\(arguments) \(result.stderr)")
        }
        // --no-store beside a store option is a contradiction (fetch, match).
        for arguments in [["--domain", "applinks:shop.example.net"], ["match", "https://shop.example.net/", "--domain", "applinks:shop.example.net"]] {
            #expect(try run(arguments + ["--no-store"] + cache).status == 64, "\(arguments)")
            #expect(try run(arguments + ["--no-store"] + unreachable).status == 64, "\(arguments)")
        }
        // diagnose uses no store (the README no longer says it does): no store option is accepted.
        #expect(try run(["diagnose", "shop.example.net"] + cache).status == 64)
    }
}
