import ArgumentParser
import Foundation

/// The root `aasa-fetch` command. Without a subcommand it runs ``Fetch``.
public struct AASAFetchCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "aasa-fetch",
        abstract: "Download and check apple-app-site-association files the way Apple's devices do.",
        version: AASAFetchVersion.string,
        subcommands: [
            Fetch.self, Plan.self, Match.self, Diagnose.self, Refresh.self, Show.self, Forget.self, Export.self,
            Lint.self, Diff.self, Entitlements.self,
        ],
        defaultSubcommand: Fetch.self
    )

    public init() {}
}

/// The tool's version.
public enum AASAFetchVersion {
    /// The version string printed by `--version`.
    public static let string = "0.1.0"
}

extension AASAFetchCommand {
    /// Parses the process arguments (with the options of `AASA_FETCH_*` variables added, see
    /// ``OptionSources``), runs the chosen command and exits with its status.
    public static func runFromCommandLine() async {
        let resolution: OptionSources.Resolution
        do {
            resolution = try OptionSources.resolve(
                Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
        } catch {
            exit(withError: error)
        }
        for warning in resolution.warnings {
            FileHandle.standardError.write(Data((warning + "\n").utf8))
        }
        await main(resolution.arguments)
    }
}
