import AASAFetchCore
import ArgumentParser
import CurlTransport
import Foundation

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
            Fetch.self, Plan.self, Match.self, Diagnose.self, Refresh.self, Show.self, Forget.self, Export.self, Report.self,
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
    /// descriptors 0–2 are open (``StandardStreams``), raises the soft limit of open files
    /// toward the hard one (``ProcessLimits``), gives threads stacks of at least 2 MiB under a
    /// smaller stack limit (`StackLimit.fitLimit()`) and, under an address-space limit, makes thread
    /// stacks and malloc arenas small (`AddressSpace.fitLimit()`), or ends the process with
    /// `address-space-exhausted` (exit 2) when the limit leaves no room to start, and with
    /// `threads-exhausted` or `descriptors-exhausted` when those limits leave none. Idempotent.
    public static func prepareProcess() {
        StandardStreams.reserveStandardDescriptors()
        // Without /proc (a bare chroot or sandbox) the command line cannot be read: it would be
        // empty, not even the program's name, and the run would go on as if given no options.
        if ProcessArguments.current.isEmpty {
            exit(reporting: argumentsUnreadable, console: .standard)
        }
        ProcessLimits.raiseDescriptorLimit()
        StackLimit.fitLimit()
        AddressSpace.fitLimit()
        if let failure = addressSpaceShortage ?? threadShortage ?? descriptorShortage {
            exit(reporting: failure, console: console(for: Array(ProcessArguments.current.dropFirst())))
        }
    }

    static let argumentsUnreadable = CommandFailure(
        code: "arguments-unreadable",
        message: "the command line cannot be read: /proc is not mounted here, and the Swift runtime reads the arguments from /proc/self/cmdline; mount proc on /proc (mount -t proc proc /proc) or run the tool where it is")

    /// Judged once, at the first ``prepareProcess()``, before the runtime starts its threads.
    private static let threadShortage = ProcessLimits.threadShortageAtStart()

    /// Judged once, at the first ``prepareProcess()``, after the limit was raised toward the hard one.
    private static let descriptorShortage = ProcessLimits.descriptorShortageAtStart()

    /// Judged once, at the first ``prepareProcess()``: later, the runtime's own threads are mapped
    /// too, and would be counted twice.
    private static let addressSpaceShortage = ProcessLimits.addressSpaceShortageAtStart()

    /// Parses the process arguments, runs the chosen command and exits with its status.
    ///
    /// Every error of every command ends here and is reported the same way
    /// (``Console/report(_:details:)``): `aasa-fetch: CODE: message` on standard error, with
    /// `--json` also `{"schemaVersion", "error": {"code", "message"}}` on standard output. Usage
    /// errors (exit 64) have the code `usage`; help and `--version` print as usual.
    ///
    /// The options of `AASA_FETCH_*` variables are added first (see ``OptionSources``); a variable
    /// with a refused value is a usage error that names it.
    ///
    /// After the command, a standard output that failed during it decides how the process ends
    /// (``StandardStreams``).
    public static func runFromCommandLine() async {
        prepareProcess()
        let arguments = Array(ProcessArguments.current.dropFirst())
        if let bad = ProcessArguments.firstNotUTF8 {
            exit(reporting: CommandFailure(
                code: "usage",
                message: "argument \(bad.position) is not UTF-8 (\(bad.escaped)); aasa-fetch takes UTF-8 arguments, file names included",
                status: ExitStatus.usage), console: console(for: FormatOptions.format(in: arguments) != nil ? arguments : arguments + formatFromSettings(arguments)))
        }
        let resolution: OptionSources.Resolution
        let blame: OptionSources.Blame?
        do {
            (resolution, blame) = try OptionSources.resolveDeferringCheck(arguments, environment: ProcessInfo.processInfo.environment)
        } catch {
            // The options could not be resolved (a config file that cannot be read, or a key it
            // should not have): the format still follows `AASA_FETCH_JSON` / `AASA_FETCH_FORMAT`,
            // then the config file's `json` / `format`, when the command line says none.
            let typed = FormatOptions.format(in: arguments) != nil
            exit(reporting: error, console: console(for: typed ? arguments : arguments + formatFromSettings(arguments)))
        }
        await run(arguments: resolution.arguments, warnings: resolution.warnings, blame: blame)
    }

    /// The output format the environment asks for, else the config file (read leniently), as
    /// arguments: for a run whose options could not be resolved or read.
    static func formatFromSettings(_ arguments: [String]) -> [String] {
        let environment = ProcessInfo.processInfo.environment
        let fromEnvironment = formatFromEnvironment(environment)
        let found = fromEnvironment.isEmpty ? OptionSources.formatFromConfig(arguments, environment: environment) : fromEnvironment
        // Only a format the command has: `show` has no --format, so AASA_FETCH_FORMAT=sarif
        // (meant for fetch) made its error a SARIF document.
        let name = OptionSources.selectedCommandName(arguments)
        guard let option = found.first?.dropFirst(2),
              let command = configuration.subcommands.first(where: { $0.configuration.commandName == name }),
              OptionSpec.options(of: command).contains(where: { $0.name == option }) else { return [] }
        return found
    }

    /// The output format the environment asks for, as arguments (`--json`, `--format F`); none
    /// for a value that is not a clear yes.
    static func formatFromEnvironment(_ environment: [String: String]) -> [String] {
        if let format = environment["AASA_FETCH_FORMAT"], !format.isEmpty { return ["--format", format] }
        if let json = environment["AASA_FETCH_JSON"], ["1", "true", "yes", "on"].contains(json.lowercased()) { return ["--json"] }
        return []
    }

    /// The console for a run with `arguments`, told before parsing whether the run speaks JSON, so
    /// that a usage error is a JSON document too (a line in a line protocol).
    static func console(for arguments: [String]) -> Console {
        let console = Console.standard
        let options = arguments.prefix { $0 != "--" }
        let lines = (arguments.first == "match") || (arguments.first == "refresh" && (options.contains("--watch") || options.contains("--worker")))
        let format = FormatOptions.format(in: arguments)
        if format == .json || (arguments.first == "match" && options.contains("--cases")) {
            console.expectJSON(lines: lines)
        } else if let format, format.isCI {
            console.expectFormat(format)
        }
        return console
    }

    /// Parses `arguments` (the command line with the options of the environment and the config
    /// file added), prints `warnings` and runs the command. When the parse fails, `blame` names the
    /// added option at fault (in the format the resolved options ask for, so `AASA_FETCH_JSON` gets
    /// a JSON error document); else the parser's error is reported as before.
    static func run(arguments: [String], warnings: [String] = [], blame: OptionSources.Blame? = nil) async {
        let parsed: any ParsableCommand
        do {
            parsed = try parseAsRoot(arguments)
        } catch {
            if let blame {
                do {
                    try blame.check(failure: error)
                } catch let blamed {
                    // The format the run asked for, wherever it came from (`AASA_FETCH_JSON`, the
                    // config file's `json`): the error document is then JSON too.
                    exit(reporting: blamed, console: console(for: arguments))
                }
            }
            for warning in warnings {
                Console.standard.err(warning)
            }
            exit(reporting: error, console: console(for: arguments))
        }
        for warning in warnings {
            Console.standard.err(warning)
        }
        let console = console(for: arguments)
        if let repeated = OptionSources.repeatedInputOption(in: arguments) {
            exit(reporting: CommandFailure(
                code: "usage",
                message: "\(repeated.option) is given \(repeated.values.count) times (\(repeated.values.map { "'\($0)'" }.joined(separator: ", "))); it takes one \(repeated.what): only the last would be read",
                status: ExitStatus.usage), console: console)
        }
        do {
            var command = parsed
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(reporting: error, console: console)
        }
        StandardStreams.finishIfOutputFailed()
    }

    /// `failure` as `descriptors-exhausted` (exit 2) when it came from the process running out of
    /// file descriptors: a file that could not be opened was reported as unreadable input, or as
    /// a usage error (`--cacert: cannot read ca.pem: Too many open files`). Told by the system's
    /// words in the message, or, for an unreadable input or store, by a descriptor that cannot be
    /// opened now.
    static func blamingDescriptors(_ failure: CommandFailure) -> CommandFailure {
        guard failure.code != "descriptors-exhausted" else { return failure }
        let named = failure.message.contains("Too many open files")
        guard named || ((failure.code == "usage" || failure.code.hasSuffix("-unreadable")) && SystemReason.descriptorsExhaustedNow) else { return failure }
        let limit = ProcessLimits.descriptorLimit.map { " (ulimit -n \($0))" } ?? ""
        return CommandFailure(code: "descriptors-exhausted",
                              message: "this process ran out of file descriptors\(limit): \(failure.message); raise the limit",
                              status: ExitStatus.cannotRun)
    }

    /// Reports `error` and exits with its status.
    static func exit(reporting error: any Error, console: Console) -> Never {
        StandardStreams.finishIfOutputFailed()
        switch error {
        case let failure as CommandFailure:
            let failure = blamingDescriptors(failure)
            console.report(failure)
            Self.exit(withError: failure.status)
        case let status as ExitCode:
            // A command's own answer (1: a failure found); it printed what it found.
            Self.exit(withError: status)
        default:
            let status = exitCode(for: error)
            if status == .success {
                // --help, --version, completion scripts: the parser's text, written through our
                // stream so that a standard output that cannot take it is output-failed (exit 2).
                let text = fullMessage(for: error)
                if !text.isEmpty { StandardStreams.writeOutput(text.hasSuffix("\n") ? text : text + "\n") }
                StandardStreams.finishIfOutputFailed()
                Self.exit(withError: ExitCode.success)
            }
            let message = self.message(for: error)
            if status == ExitStatus.usage {
                // The parser's text after its own message: the argument's help and the usage. A
                // message of several lines is one line here (its line feeds were printed as `\n`,
                // and then the whole message again).
                let messageLines = message.split(separator: "\n", omittingEmptySubsequences: false)
                var lines = fullMessage(for: error).split(separator: "\n", omittingEmptySubsequences: false)
                if let first = lines.first, let firstOfMessage = messageLines.first, first.hasSuffix(firstOfMessage) {
                    lines.removeFirst(min(messageLines.count, lines.count))
                }
                let oneLine = messageLines.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: " ")
                let failure = blamingDescriptors(CommandFailure(code: "usage", message: oneLine, status: ExitStatus.usage))
                console.report(failure, details: failure.code == "usage" ? lines.joined(separator: "\n").trimmingCharacters(in: .newlines) : nil)
                Self.exit(withError: failure.status)
            }
            console.report(CommandFailure(code: "internal-error", message: message.isEmpty ? "\(error)" : message))
            Self.exit(withError: ExitStatus.cannotRun)
        }
    }
}
