import Foundation
import Testing

/// The pieces of the golden-example harness: the shell subset of examples, finding examples in
/// markdown and `--help` texts, and the normalisation.
@Suite struct GoldenHarnessTests {
    @Test func commandsAreSplitAsAShellWould() throws {
        let command = try ExampleCommand(#"AASA_FETCH_CONCURRENCY=lots aasa-fetch diagnose --domain 'applinks:dev.example.com?mode=developer' "a b" c\ d 2>&1"#)
        #expect(command.environment == ["AASA_FETCH_CONCURRENCY": "lots"])
        #expect(command.arguments == ["diagnose", "--domain", "applinks:dev.example.com?mode=developer", "a b", "c d"])
        #expect(command.mergesStandardError)
        let input = try ExampleCommand("aasa-fetch match --cases - < examples/cases.jsonl")
        #expect(input.arguments == ["match", "--cases", "-"])
        #expect(input.standardInput == "examples/cases.jsonl")
        #expect(try ExampleCommand("aasa-fetch --domain applinks:*.example.com").arguments == ["--domain", "applinks:*.example.com"])
        #expect(try ExampleCommand(#"aasa-fetch --define "X=\$(Y)""#).arguments == ["--define", "X=$(Y)"])
    }

    @Test(arguments: ["aasa-fetch show | head", "aasa-fetch show; echo", "aasa-fetch show > out.txt", "aasa-fetch show $HOST",
                      "aasa-fetch show 'open", "curl https://example.com", "aasa-fetch show && aasa-fetch refresh", "aasa-fetch show 2>&1 --json"])
    func unsupportedShellIsRefused(text: String) {
        #expect(throws: ExampleCommand.Unsupported.self) { try ExampleCommand(text) }
    }

    @Test func slugsAreShortAndStable() throws {
        #expect(try ExampleCommand("aasa-fetch --entitlements examples/Example.entitlements --json").slug == "entitlements-examples-example-entitlements-json")
        #expect(try ExampleCommand("aasa-fetch").slug == "run")
    }

    @Test func markdownBlocksGiveCommandsTheirShownOutputAndStatus() throws {
        let text = """
            # Title
            ```
            $ aasa-fetch plan \\
                --entitlements examples/Example.entitlements
            line one
            line two

            $ echo $?
            1
            $ aasa-fetch show
            $ aasa-fetch plan --domain applinks:example.com
            …
            ```

            ```json
            {"no": "commands"}
            ```
            ```
            scripts/demo     # not a $ line: not run
            $ aasa-fetch lint x.json
            ```
            """
        let groups = try ExampleSources.markdownGroups(text, name: "README.md")
        #expect(groups.map(\.name) == ["README.md#1", "README.md#2"])
        let first = groups[0].examples
        #expect(first.count == 3)
        #expect(first[0].command.arguments == ["plan", "--entitlements", "examples/Example.entitlements"])
        #expect(first[0].location == "README.md:3")
        #expect(first[0].shownOutput == ["line one", "line two"])
        #expect(first[0].outputLines == 4..<6)
        #expect(first[0].shownStatus?.status == "1")
        #expect(first[0].shownStatus?.line == 8)
        #expect(first[1].shownOutput == [], "nothing shown: it must print nothing")
        #expect(first[2].shownOutput == nil, "a lone … leaves the output out")
        #expect(groups[1].examples.map(\.command.arguments) == [["lint", "x.json"]])
        #expect(throws: ExampleCommand.Unsupported.self) { try ExampleSources.markdownGroups("```\n$ aasa-fetch show | wc\n```", name: "x.md") }
        #expect(throws: ExampleCommand.Unsupported.self) { try ExampleSources.markdownGroups("```\n$ echo $?\n1\n```", name: "x.md") }
    }

    @Test func helpExamplesAreTheDollarLinesOfTheExamplesSection() throws {
        let help = """
            OVERVIEW: Download and judge.

            EXAMPLES:
              $ aasa-fetch --entitlements examples/Example.entitlements
                  Check every associated domain of the example app.
              $ aasa-fetch plan --domain applinks:example.com

            USAGE: aasa-fetch fetch <options>

            OPTIONS:
              $ aasa-fetch not-an-example
            """
        let examples = try ExampleSources.helpExamples(help, command: "aasa-fetch fetch")
        #expect(examples.map(\.command.arguments) == [["--entitlements", "examples/Example.entitlements"], ["plan", "--domain", "applinks:example.com"]])
        #expect(examples.allSatisfy { $0.shownOutput == nil })
    }

    @Test func normalisationHidesWhatVariesAndKeepsTheRest() {
        let normalizer = OutputNormalizer(folder: "/tmp/aasa-golden-1", ports: [40123])
        let raw = """
            --connect-to ::127.0.0.1:40123: connections to www.example.com:443 go to 127.0.0.1:40123
            store /tmp/aasa-golden-1/cache/aasa-fetch.sqlite, spool /tmp/other/spool.sqlite
            valid from Nov 21 22:27:08 2026 GMT until Feb  9 22:27:08 2027 GMT
            connected in 12 ms; at 2026-11-21T22:40:00Z, next 2026-11-22
            "owner" : "vm:16634:840399841",
            HTTP 200, 950 bytes \t
            ETag "6b048921-c5", Last-Modified Mon, 23 Nov 2026 18:42:41 GMT; "etag" : "\"6b048921-3b6\""
            """
        #expect(normalizer.display(raw).hasPrefix("--connect-to ::127.0.0.1:8443: connections to www.example.com:443 go to 127.0.0.1:8443\nstore cache/aasa-fetch.sqlite"))
        #expect(normalizer.normalize(raw) == """
            --connect-to ::127.0.0.1:<port>: connections to www.example.com:443 go to 127.0.0.1:<port>
            store cache/aasa-fetch.sqlite, spool <tmp>
            valid from <cert-date> until <cert-date>
            connected in <duration>; at <time>, next <date>
            "owner" : "<owner>",
            HTTP 200, 950 bytes
            ETag "<mtime>-c5", Last-Modified <http-date>; "etag" : "\"<mtime>-3b6\""
            """)
        // What a document shows normalises like what the tool printed.
        #expect(normalizer.normalize(normalizer.display(raw)) == normalizer.normalize(raw))
    }
}
