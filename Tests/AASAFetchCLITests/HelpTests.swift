@testable import AASAFetchCLI
import AASAFetchTestSupport
import ArgumentParser
import Foundation
import Testing

/// Every `--help` shows examples and exit codes, built from ``CommandHelp``; every example parses
/// and runs against the example sites.
@Suite(.timeLimit(.minutes(5)))
struct HelpTests {
    /// Every command with its examples and exit codes, and whether it takes network options.
    static let commands: [(type: any ParsableCommand.Type, path: [String], examples: [HelpExample], exitCodes: [HelpExitCode], network: Bool)] = [
        (AASAFetchCommand.self, [], CommandHelp.root, CommandHelp.rootExitCodes, false),
        (AASAFetchCommand.Fetch.self, ["fetch"], CommandHelp.fetch, CommandHelp.fetchExitCodes, true),
        (AASAFetchCommand.Plan.self, ["plan"], CommandHelp.plan, CommandHelp.planExitCodes, false),
        (AASAFetchCommand.Match.self, ["match"], CommandHelp.match, CommandHelp.matchExitCodes, true),
        (AASAFetchCommand.Diagnose.self, ["diagnose"], CommandHelp.diagnose, CommandHelp.diagnoseExitCodes, true),
        (AASAFetchCommand.Refresh.self, ["refresh"], CommandHelp.refresh, CommandHelp.refreshExitCodes, true),
        (AASAFetchCommand.Report.self, ["report"], CommandHelp.report, CommandHelp.reportExitCodes, false),
        (AASAFetchCommand.Show.self, ["show"], CommandHelp.show, CommandHelp.showExitCodes, false),
        (AASAFetchCommand.Forget.self, ["forget"], CommandHelp.forget, CommandHelp.forgetExitCodes, false),
        (AASAFetchCommand.Export.self, ["export"], CommandHelp.export, CommandHelp.exportExitCodes, false),
        (Lint.self, ["lint"], CommandHelp.lint, CommandHelp.lintExitCodes, false),
        (Diff.self, ["diff"], CommandHelp.diff, CommandHelp.diffExitCodes, false),
        (AASAFetchCommand.Entitlements.self, ["entitlements"], CommandHelp.entitlements, CommandHelp.entitlementsExitCodes, false),
    ]

    /// The lines of a help section (the indented lines after its header).
    static func section(_ header: String, of help: String) -> [String] {
        let lines = help.components(separatedBy: "\n")
        guard let start = lines.firstIndex(of: header) else { return [] }
        return Array(lines[(start + 1)...].prefix { $0.hasPrefix(" ") })
    }

    /// Splits example arguments as a shell would (they hold no quotes).
    static func words(_ arguments: String) -> [String] {
        arguments.split(separator: " ").map(String.init)
    }

    @Test func everyCommandHasAHelpEntry() {
        let listed = Set(AASAFetchCommand.configuration.subcommands.map { ObjectIdentifier($0) })
        let covered = Set(Self.commands.dropFirst().map { ObjectIdentifier($0.type) })
        #expect(listed == covered)
    }

    @Test func helpShowsExamplesAndExitCodesInTheirFormat() throws {
        for command in Self.commands {
            let help = AASAFetchCommand.helpMessage(for: command.type, columns: HelpText.width)
            let name = command.path.first ?? "aasa-fetch"
            let examples = Self.section("EXAMPLES:", of: help)
            #expect(examples.filter { $0.hasPrefix("  $ ") } == command.examples.map { "  $ \($0.commandLine)" }, "\(name)")
            for line in examples where !line.hasPrefix("  $ ") {
                #expect(line.hasPrefix("    ") && !line.contains("$ "), "\(name): \(line)")
            }
            #expect(!command.examples.isEmpty, "\(name)")
            let codes = Self.section("EXIT CODES:", of: help)
            #expect(codes.count == command.exitCodes.count, "\(name)")
            #expect(codes.map { $0.split(separator: " ").first.map(String.init) } == command.exitCodes.map { String($0.code) }, "\(name)")
            #expect(command.exitCodes.contains { $0.code == 64 } && command.exitCodes.contains { $0.code == 0 }, "\(name)")
            // At the default width nothing in the sections is wrapped.
            for line in examples + codes {
                #expect(line.count <= HelpText.width, "\(name): \(line)")
            }
            // The examples leave the network options to the environment.
            for example in command.examples {
                #expect(!["--cacert", "--connect-to", "--resolve", "--allow-private"].contains { example.arguments.contains($0) }, "\(example.arguments)")
            }
        }
    }

    @Test func everyExampleParses() throws {
        for command in Self.commands {
            for example in command.examples {
                #expect(throws: Never.self, "\(example.arguments)") { _ = try AASAFetchCommand.parseAsRoot(Self.words(example.arguments)) }
            }
        }
    }
    // Every example also runs against the example sites, in a scratch folder, with its golden
    // output and exit status: GoldenExampleTests.
}
