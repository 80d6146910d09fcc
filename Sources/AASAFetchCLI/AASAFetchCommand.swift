import ArgumentParser

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
    /// Prepares the process; call it first thing in `main`, before the concurrency runtime starts
    /// (its event descriptors would take the number of a closed standard stream): makes sure
    /// descriptors 0–2 are open (``StandardStreams``) and raises the soft limit of open files
    /// toward the hard one (``ProcessLimits``). Idempotent.
    public static func prepareProcess() {
        StandardStreams.reserveStandardDescriptors()
        ProcessLimits.raiseDescriptorLimit()
    }

    /// Parses the process arguments, runs the chosen command and exits with its status.
    ///
    /// After the command, a standard output that failed during it decides how the process ends
    /// (``StandardStreams``).
    public static func runFromCommandLine() async {
        prepareProcess()
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            StandardStreams.finishIfOutputFailed()
            exit(withError: error)
        }
        StandardStreams.finishIfOutputFailed()
    }
}
