import AASAFetchCore
import AASAFetchTestSupport
import ArgumentParser
import Foundation
import Testing

@testable import AASAFetchCLI

/// Options from `AASA_FETCH_*` variables (``OptionSources``): names derived from the parser, the
/// command line winning, value syntax, and usage errors that name the variable.
@Suite struct OptionSourcesTests {
    typealias Fetch = AASAFetchCommand.Fetch

    private func resolve(_ arguments: [String], _ environment: [String: String]) throws -> OptionSources.Resolution {
        try OptionSources.resolve(arguments, environment: environment)
    }

    private func fetch(_ arguments: [String], _ environment: [String: String]) throws -> Fetch {
        let resolution = try resolve(arguments, environment)
        return try #require(try AASAFetchCommand.parseAsRoot(resolution.arguments) as? Fetch)
    }

    /// The message and exit code of what `resolve` throws. The run's own path (the check
    /// deferred until its parse fails, ``OptionSources/Blame``) must blame the same setting.
    private func usageError(_ arguments: [String], _ environment: [String: String]) -> (message: String, code: Int32)? {
        func described(_ body: () throws -> Void) -> (message: String, code: Int32)? {
            do {
                try body()
                return nil
            } catch {
                return (AASAFetchCommand.message(for: error), AASAFetchCommand.exitCode(for: error).rawValue)
            }
        }
        let eager = described { _ = try resolve(arguments, environment) }
        let deferred = described {
            let (resolution, blame) = try OptionSources.resolveDeferringCheck(arguments, environment: environment)
            do {
                _ = try AASAFetchCommand.parseAsRoot(resolution.arguments)
            } catch {
                try blame?.check(failure: error)
            }
        }
        #expect(eager?.message == deferred?.message && eager?.code == deferred?.code, "\(String(describing: eager)) / \(String(describing: deferred))")
        return eager
    }

    @Test func theNetworkOptionsComeFromTheEnvironmentForTheDefaultCommand() throws {
        let command = try fetch(
            ["--entitlements", "App.entitlements"],
            ["AASA_FETCH_CACERT": "ca.pem", "AASA_FETCH_CONNECT_TO": "::127.0.0.1:8443", "AASA_FETCH_ALLOW_PRIVATE": "1"])
        #expect(command.network.cacert == "ca.pem")
        #expect(command.network.connectTo == ["::127.0.0.1:8443"])
        #expect(command.network.allowPrivate)
        #expect(command.input.entitlementsPath == "App.entitlements")
    }

    @Test func aSubcommandGetsItsOwnOptionsAfterItsName() throws {
        let resolution = try resolve(["diagnose", "example.com", "--app-id", "A.b"], ["AASA_FETCH_MAX_TIME": "3", "AASA_FETCH_ROUTE": "both"])
        #expect(resolution.arguments.first == "diagnose")
        let command = try #require(try AASAFetchCommand.parseAsRoot(resolution.arguments) as? AASAFetchCommand.Diagnose)
        #expect(command.network.maxTime == 3)
        #expect(command.routing.route == .both)
        #expect(command.host == "example.com")
    }

    /// An option of an exclusive group on the command line wins over the environment's others:
    /// `--no-store` with `AASA_FETCH_CACHE` set is a pure run, not a usage error.
    @Test func anExclusiveOptionOnTheCommandLineDropsTheEnvironmentsOthers() throws {
        let pure = try fetch(["--domain", "applinks:a.test", "--no-store"], ["AASA_FETCH_CACHE": "/tmp/elsewhere", "AASA_FETCH_STORE": "postgres://x"])
        #expect(pure.storage.noStore)
        #expect(pure.storage.store.cacheDirectory == nil && pure.storage.store.storeURL == nil)
        let cached = try fetch(["--domain", "applinks:a.test", "--cache", "mine"], ["AASA_FETCH_NO_STORE": "1"])
        #expect(!cached.storage.noStore && cached.storage.store.cacheDirectory == "mine")
        let app = try fetch(["--app", "My.ipa"], ["AASA_FETCH_ENTITLEMENTS": "App.entitlements"])
        #expect(app.input.appPath == "My.ipa" && app.input.entitlementsPath == nil)
    }

    @Test func theCommandLineWinsOverTheEnvironment() throws {
        let environment = ["AASA_FETCH_CACERT": "env.pem", "AASA_FETCH_CONCURRENCY": "7", "AASA_FETCH_QUIET": "0", "AASA_FETCH_CONNECT_TO": "a:1:b:2"]
        let separate = try fetch(["--domain", "applinks:a.test", "--cacert", "mine.pem", "-q", "--connect-to", "c:3:d:4"], environment)
        #expect(separate.network.cacert == "mine.pem")
        #expect(separate.network.connectTo == ["c:3:d:4"], "a repeatable option given on the command line replaces the environment's values")
        #expect(separate.input.quiet)
        #expect(separate.network.concurrency == 7)
        let joined = try fetch(["--domain", "applinks:a.test", "--cacert=mine.pem", "--concurrency=9"], environment)
        #expect(joined.network.cacert == "mine.pem")
        #expect(joined.network.concurrency == 9)
    }

    @Test func repeatableOptionsTakeValuesSeparatedByWhiteSpace() throws {
        let command = try fetch(
            ["--domain", "applinks:a.test"],
            ["AASA_FETCH_CONNECT_TO": " a.test:443:127.0.0.1:1  b.test:443:127.0.0.1:2\n\tc.test:443:127.0.0.1:3 ",
             "AASA_FETCH_DOMAIN": "applinks:b.test"])
        #expect(command.network.connectTo == ["a.test:443:127.0.0.1:1", "b.test:443:127.0.0.1:2", "c.test:443:127.0.0.1:3"])
        #expect(command.input.domains == ["applinks:a.test"], "--domain on the command line wins over AASA_FETCH_DOMAIN")
        let userAgent = try fetch(["--domain", "applinks:a.test"], ["AASA_FETCH_USER_AGENT": "Mozilla/5.0 (X11; Linux)"])
        #expect(userAgent.network.userAgent == "Mozilla/5.0 (X11; Linux)", "a single-valued option takes the whole value")
    }

    @Test(arguments: [("1", true), ("true", true), ("YES", true), ("On", true), ("0", false), ("false", false), ("no", false), ("OFF", false), ("", false)])
    func flagValues(value: String, set: Bool) throws {
        let command = try fetch(["--domain", "applinks:a.test"], ["AASA_FETCH_ALLOW_PRIVATE": value, "AASA_FETCH_JSON": value])
        #expect(command.network.allowPrivate == set)
        #expect(command.json == set)
    }

    @Test func aBadFlagValueIsAUsageErrorNamingTheVariable() throws {
        let error = try #require(usageError(["--domain", "applinks:a.test"], ["AASA_FETCH_ALLOW_PRIVATE": "maybe"]))
        #expect(error.code == 64)
        #expect(error.message.contains("AASA_FETCH_ALLOW_PRIVATE='maybe'"))
        #expect(error.message.contains("--allow-private is a flag"))
    }

    @Test func aValueTheOptionRefusesIsAUsageErrorNamingTheVariable() throws {
        let notANumber = try #require(usageError(["--domain", "applinks:a.test"], ["AASA_FETCH_CONCURRENCY": "lots", "AASA_FETCH_CACERT": "ca.pem"]))
        #expect(notANumber.code == 64)
        #expect(notANumber.message.contains("environment variable AASA_FETCH_CONCURRENCY='lots'"), "\(notANumber.message)")
        #expect(notANumber.message.contains("--concurrency"))
        #expect(!notANumber.message.contains("AASA_FETCH_CACERT"))

        let outOfRange = try #require(usageError(["refresh"], ["AASA_FETCH_CONCURRENCY": "0"]))
        #expect(outOfRange.code == 64)
        #expect(outOfRange.message.contains("AASA_FETCH_CONCURRENCY='0'"))
        #expect(outOfRange.message.contains("between 1 and 4096"))

        let route = try #require(usageError(["diagnose", "example.com"], ["AASA_FETCH_ROUTE": "sideways"]))
        #expect(route.message.contains("AASA_FETCH_ROUTE='sideways'"))
    }

    @Test func optionsThatConflictOnlyTogetherAreNamedTogether() throws {
        let error = try #require(usageError(["refresh"], ["AASA_FETCH_WORKER": "1", "AASA_FETCH_WATCH": "1"]))
        #expect(error.code == 64)
        #expect(error.message.contains("AASA_FETCH_WATCH, AASA_FETCH_WORKER") || error.message.contains("AASA_FETCH_WORKER, AASA_FETCH_WATCH"), "\(error.message)")
        // Against the command line, the environment's option is the one at fault.
        let withFlag = try #require(usageError(["refresh", "--watch"], ["AASA_FETCH_WORKER": "1"]))
        #expect(withFlag.message.contains("AASA_FETCH_WORKER='1'"))
    }

    @Test func theCommandLinesOwnErrorIsLeftToTheParser() throws {
        // The user's mistake is reported as usual, not blamed on a variable.
        let resolution = try resolve(["--concurrency", "x", "--domain", "applinks:a.test"], ["AASA_FETCH_MAX_TIME": "nope"])
        #expect(resolution.arguments.contains("--max-time=nope"))
        #expect(usageError(["--concurrency", "x", "--domain", "applinks:a.test"], ["AASA_FETCH_MAX_TIME": "nope"]) == nil)
        #expect(throws: (any Error).self) { try AASAFetchCommand.parseAsRoot(resolution.arguments) }
    }

    /// The command line may lack an input that the environment gives: a refused value of another
    /// variable is still blamed on its variable (it was the parser's bare message).
    @Test func aRefusedValueIsNamedWhenTheEnvironmentGivesTheInput() throws {
        let error = try #require(usageError(["--no-store"], ["AASA_FETCH_DOMAIN": "applinks:a.test", "AASA_FETCH_CONCURRENCY": "lots"]))
        #expect(error.code == 64)
        #expect(error.message.contains("environment variable AASA_FETCH_CONCURRENCY='lots'"), "\(error.message)")
        #expect(try resolve(["--no-store"], ["AASA_FETCH_DOMAIN": "applinks:a.test", "AASA_FETCH_CONCURRENCY": "4"]).arguments.contains("--concurrency=4"))
    }

    /// With a mistake on the command line and another in the environment, the parser speaks of the
    /// one typed: the environment's options come after the command line's.
    @Test func theCommandLinesMistakeIsTheOneReported() throws {
        let resolution = try resolve(["--concurrency", "x", "--domain", "applinks:a.test"], ["AASA_FETCH_MAX_TIME": "nope"])
        let message = try #require({ () -> String? in
            do {
                _ = try AASAFetchCommand.parseAsRoot(resolution.arguments)
                return nil
            } catch {
                return AASAFetchCommand.message(for: error)
            }
        }())
        #expect(message.contains("'x'") && message.contains("--concurrency"), "\(message)")
    }

    @Test func variablesOfOtherCommandsAreIgnoredAndUnknownOnesReported() throws {
        let lint = try resolve(["lint", "a.json"], ["AASA_FETCH_CACERT": "ca.pem", "AASA_FETCH_CACRET": "typo.pem", "AASA_FETCH_EMPTY": ""])
        #expect(lint.arguments == ["lint", "a.json"])
        #expect(lint.warnings == ["aasa-fetch: warning: AASA_FETCH_CACRET is not an option of any command (ignored)"])
        let fetch = try resolve(["--domain", "applinks:a.test"], ["AASA_FETCH_CACERT": "ca.pem"])
        #expect(fetch == OptionSources.Resolution(arguments: ["--domain", "applinks:a.test", "--cacert=ca.pem"], warnings: []))
        // The old spool switch is no longer read by anything: it is reported like any unknown variable.
        let spool = try resolve(["--domain", "applinks:a.test"], ["AASA_FETCH_SPOOL": "off"])
        #expect(spool.warnings == ["aasa-fetch: warning: AASA_FETCH_SPOOL is not an option of any command (ignored)"])
    }

    @Test(arguments: [["--help"], ["fetch", "-h"], ["help", "fetch"], ["--version"], ["diagnose", "--help"], ["--generate-completion-script", "bash"]])
    func helpAndVersionAreLeftAlone(arguments: [String]) throws {
        let resolution = try resolve(arguments, ["AASA_FETCH_CACERT": "ca.pem", "AASA_FETCH_ALLOW_PRIVATE": "bad"])
        #expect(resolution.arguments == arguments)
    }

    @Test func theStoreVariablesAreOptionsOfEveryStoreCommand() throws {
        for command in ["show", "forget", "export", "refresh", "match"] {
            let variables = OptionSpec.options(of: OptionSources.selectedCommand([command], root: AASAFetchCommand.self).0).map(\.variable)
            #expect(variables.contains("AASA_FETCH_CACHE"), "\(command)")
            #expect(variables.contains("AASA_FETCH_STORE"), "\(command)")
        }
        let show = try #require(try AASAFetchCommand.parseAsRoot(try resolve(["show"], ["AASA_FETCH_CACHE": "/srv/aasa"]).arguments) as? AASAFetchCommand.Show)
        #expect(show.store.path == "/srv/aasa/aasa-fetch.sqlite")
    }

    @Test func everyDisplayedLongOptionHasOneVariable() throws {
        for command in OptionSources.allCommands(AASAFetchCommand.self) {
            let options = OptionSpec.options(of: command)
            let variables = options.map(\.variable)
            #expect(Set(variables).count == variables.count, "\(command._commandName): \(variables)")
            for option in options {
                #expect(option.variable == "AASA_FETCH_" + option.name.uppercased().replacingOccurrences(of: "-", with: "_"))
                #expect(!OptionSources.builtInOptions.contains(option.name))
            }
        }
        let fetch = Set(OptionSpec.options(of: Fetch.self).map(\.variable))
        for name in ["AASA_FETCH_CACERT", "AASA_FETCH_CONNECT_TO", "AASA_FETCH_ALLOW_PRIVATE", "AASA_FETCH_RESOLVE", "AASA_FETCH_ROUTE", "AASA_FETCH_JSON", "AASA_FETCH_QUIET", "AASA_FETCH_CACHE", "AASA_FETCH_NO_STORE"] {
            #expect(fetch.contains(name), "\(name)")
        }
        // Hidden options are not set from the environment.
        #expect(!OptionSpec.options(of: AASAFetchCommand.Refresh.self).map(\.variable).contains("AASA_FETCH_NOW"))
    }

    @Test func optionValuesAndTheTerminatorAreNotTakenForOptions() throws {
        let arguments = OptionSpec.arguments(of: Fetch.self)
        let given = OptionSpec.givenOptions(in: ["--user-agent", "--cacert", "-q", "--", "--json"], of: arguments)
        #expect(given == ["user-agent", "quiet"])
    }

    /// End to end with the binary: the environment sends the run to the example sites, a flag on
    /// the command line overrides it, and a bad value exits 64 naming the variable.
    @Test(.timeLimit(.minutes(3)))
    func theBinaryReadsTheEnvironment() async throws {
        let sites = try await ExampleSites.start()
        defer { sites.stop() }
        let arguments = ["--domain", "applinks:shop.example.net", "--app-id", "ABCDE12345.com.example.app", "--json", "--no-store", "-q"]
        let viaEnvironment = try ToolRunner.run(arguments, environment: sites.environment())
        #expect(viaEnvironment.status == 0, "\(viaEnvironment.stderr)")
        let report = try viaEnvironment.json()
        #expect(report.domain("shop.example.net")?["code"] as? String == "ok")

        let closed = try Loopback.freePort()
        let overridden = try ToolRunner.run(
            arguments + ["--connect-to", "::127.0.0.1:\(closed)", "--retry-delays", ""], environment: sites.environment())
        #expect(overridden.status == 1)
        #expect(try overridden.json().domain("shop.example.net")?["code"] as? String == "connect-failure")

        let bad = try ToolRunner.run(arguments, environment: sites.environment().merging(["AASA_FETCH_MAX_TIME": "soon"]) { _, new in new })
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("AASA_FETCH_MAX_TIME='soon'"), "\(bad.stderr)")
    }

    /// A mistyped option or a stray argument is the error reported, not the missing input it
    /// caused (the check for input ran first and hid it); no input at all is still named.
    @Test func theParsersErrorComesBeforeTheMissingInput() throws {
        let cases: [([String], String)] = [
            (["--entitlement", "app.entitlements"], "Unknown option '--entitlement'"),
            (["plan", "--domian", "applinks:example.com"], "Unknown option '--domian'"),
            (["plan", "applinks:example.com"], "Unexpected argument 'applinks:example.com'"),
            (["diagnose", "--app-ids", "X"], "Unknown option '--app-ids'"),
            (["plan"], "give --entitlements FILE"),
            ([], "give --entitlements FILE"),
            (["diagnose"], "give a HOST, --entitlements FILE"),
        ]
        for (arguments, message) in cases {
            let run = try ToolRunner.run(arguments)
            #expect(run.status == 64, "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains(message), "\(arguments): \(run.stderr)")
        }
    }

    /// JSON asked for by the environment or the config file gets the error document on standard
    /// output when the refused value comes from there too (it was printed only for `--json` typed
    /// on the command line).
    @Test func jsonFromTheEnvironmentOrTheFileGetsTheErrorDocument() throws {
        let fromEnvironment = try ToolRunner.run(["--domain", "applinks:example.com"],
                                                 environment: ["AASA_FETCH_JSON": "1", "AASA_FETCH_CONCURRENCY": "0"])
        #expect(fromEnvironment.status == 64, "\(fromEnvironment.stderr)")
        let error = try #require(try fromEnvironment.json()["error"] as? [String: Any], "\(fromEnvironment.stdout)")
        #expect(error["code"] as? String == "usage")
        #expect((error["message"] as? String)?.contains("AASA_FETCH_CONCURRENCY='0'") == true, "\(error)")

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("json-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let config = folder.appendingPathComponent("aasa-fetch.json").path
        try #"{"json": true, "region": "zz"}"#.write(toFile: config, atomically: true, encoding: .utf8)
        let fromFile = try ToolRunner.run(["plan", "--domain", "applinks:example.com", "--config", config])
        #expect(fromFile.status == 64, "\(fromFile.stderr)")
        let fileError = try #require(try fromFile.json()["error"] as? [String: Any], "\(fromFile.stdout)")
        #expect((fileError["message"] as? String)?.contains("\"region\" (zz)") == true, "\(fileError)")

        // A config file that cannot be read at all: AASA_FETCH_JSON still decides, the command
        // line's own format first.
        let broken = folder.appendingPathComponent("broken.json").path
        try "{bad".write(toFile: broken, atomically: true, encoding: .utf8)
        let unreadable = try ToolRunner.run(["plan", "--domain", "applinks:example.com", "--config", broken], environment: ["AASA_FETCH_JSON": "1"])
        #expect(unreadable.status == 64, "\(unreadable.stderr)")
        #expect((try unreadable.json()["error"] as? [String: Any])?["code"] as? String == "config-invalid", "\(unreadable.stdout)")
        let typed = try ToolRunner.run(["plan", "--domain", "applinks:example.com", "--config", broken, "--format", "human"],
                                       environment: ["AASA_FETCH_JSON": "1"])
        #expect(typed.status == 64)
        #expect(typed.stdout.isEmpty, "\(typed.stdout)")

        // A key the file should not have, or a value of the wrong type, next to `json: true` (or
        // in the command's section): the error document too (stdout was empty).
        for (text, expected) in [(#"{"json": true, "cachee": "x"}"#, "\"cachee\" is not an option"),
                                 (#"{"json": true, "concurrency": [1, 2]}"#, "concurrency"),
                                 (#"{"plan": {"json": true, "regio": "fr"}}"#, "regio")] {
            try text.write(toFile: config, atomically: true, encoding: .utf8)
            let run = try ToolRunner.run(["plan", "--domain", "applinks:example.com", "--config", config])
            #expect(run.status == 64, "\(text): \(run.stderr)")
            let error = try #require(try? run.json()["error"] as? [String: Any], "\(text): \(run.stdout)")
            #expect((error["message"] as? String)?.contains(expected) == true, "\(text): \(error)")
        }
    }
}
