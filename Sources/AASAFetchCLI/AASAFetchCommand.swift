import ArgumentParser

/// The root `aasa-fetch` command. Without a subcommand it runs ``Fetch``.
public struct AASAFetchCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "aasa-fetch",
        abstract: "Download and check apple-app-site-association files the way Apple's devices do.",
        discussion: HelpText.discussion(
            "Without a command, aasa-fetch runs fetch. 'aasa-fetch help COMMAND' shows a command's options.",
            examples: CommandHelp.root, exitCodes: CommandHelp.rootExitCodes),
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
    /// Parses the process arguments, runs the chosen command and exits with its status.
    public static func runFromCommandLine() async {
        await main()
    }
}
