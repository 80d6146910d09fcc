import ArgumentParser
import Foundation

/// Where option values come from besides the command line, and which one wins.
///
/// Every long option of a command can also be given as an environment variable
/// `AASA_FETCH_<NAME>`: the option's name upper-cased with `-` turned into `_`
/// (`--cacert` → `AASA_FETCH_CACERT`, `--connect-to` → `AASA_FETCH_CONNECT_TO`). An option given on
/// the command line wins over the environment. The values are turned into command-line arguments
/// before ArgumentParser parses, so they are checked exactly like typed ones; the option names a
/// command accepts are read from the parser itself (its tool description), not from a list kept here.
///
/// Value syntax:
/// - an option taking a value: the variable's whole value (`AASA_FETCH_USER_AGENT='Mozilla/5.0 (…)'`);
/// - a repeatable option: several values separated by white space (spaces, tabs or new lines),
///   one option each (`AASA_FETCH_CONNECT_TO='a.test:443:127.0.0.1:8443 b.test:443:127.0.0.1:8444'`);
/// - a flag: `1`, `true`, `yes` or `on` sets it; `0`, `false`, `no` or `off` leaves it unset
///   (any case);
/// - an empty variable counts as unset.
///
/// A value the option refuses (`AASA_FETCH_CONCURRENCY=lots`), or a flag value that is not one
/// of the above, is a usage error (exit 64) whose message names the variable. A variable with the
/// prefix that names no option of any command is reported on standard error as ignored (a typo
/// would otherwise pass silently); variables that are not options (``nonOptionVariables``) are
/// left to the code that reads them.
///
/// The precedence is kept in one place, ``merge(commandLine:layers:)``: the command line, then
/// each layer in order (today only the environment; a configuration file would be a later layer).
public enum OptionSources {
    /// The prefix of every option variable.
    public static let environmentPrefix = "AASA_FETCH_"

    /// Variables with the prefix that are read directly by the code and are not options.
    /// (None today: `AASA_FETCH_SPOOL` is gone, a `--domains` run always uses the run spool.)
    public static let nonOptionVariables: Set<String> = []

    /// Options that never come from the environment (ArgumentParser's own).
    static let builtInOptions: Set<String> = ["help", "version", "experimental-dump-help", "generate-completion-script"]

    /// The arguments to parse and the warnings to print.
    public struct Resolution: Equatable, Sendable {
        /// The command line with the options of the environment added.
        public var arguments: [String]
        /// Notes for standard error (ignored variables).
        public var warnings: [String]
    }

    /// One value for one option from a source other than the command line.
    struct Setting: Equatable {
        /// The option it sets.
        var option: OptionSpec
        /// Where it came from, for messages: the variable's name.
        var source: String
        /// The value as written there.
        var rawValue: String
        /// The arguments it becomes (`--name=value`, or `--flag`; none for a flag set to false).
        var arguments: [String]
    }

    /// Adds the options of `environment` to `arguments` (the process's arguments without the
    /// program name) for the command they select.
    /// - Parameters:
    ///   - arguments: The command line.
    ///   - environment: The process environment.
    ///   - root: The root command (its subcommands are searched for the one selected).
    /// - Returns: The arguments for ArgumentParser and notes for standard error.
    /// - Throws: A `ValidationError` naming the variable (exit 64) when a variable's value is refused.
    public static func resolve(
        _ arguments: [String], environment: [String: String], root: any ParsableCommand.Type = AASAFetchCommand.self
    ) throws -> Resolution {
        let variables = environment.filter { $0.key.hasPrefix(environmentPrefix) && !nonOptionVariables.contains($0.key) }
        guard !variables.isEmpty else { return Resolution(arguments: arguments, warnings: []) }
        // Help, version and completion requests print the parser's own text: nothing to add.
        let beforeTerminator = arguments.prefix { $0 != "--" }
        if beforeTerminator.contains(where: { ["-h", "--help", "--version", "--experimental-dump-help"].contains($0) || $0.hasPrefix("--generate-completion-script") })
            || arguments.first == "help"
        {
            return Resolution(arguments: arguments, warnings: [])
        }
        let (command, consumed) = selectedCommand(arguments, root: root)
        let described = OptionSpec.arguments(of: command)
        let options = OptionSpec.options(from: described)
        var warnings: [String] = []
        let layer = try environmentLayer(variables, options: options)
        let known = Set(options.map(\.variable))
        let unknown = variables.keys.filter { !known.contains($0) && !(variables[$0] ?? "").isEmpty }.sorted()
        if !unknown.isEmpty {
            let everyOption = Set(allCommands(root).flatMap { OptionSpec.options(of: $0).map(\.variable) })
            for name in unknown where !everyOption.contains(name) {
                warnings.append("aasa-fetch: warning: \(name) is not an option of any command (ignored)")
            }
        }
        let userArguments = Array(arguments.dropFirst(consumed))
        let injected = merge(commandLine: userArguments, layers: [layer], arguments: described)
        guard !injected.isEmpty else { return Resolution(arguments: arguments, warnings: warnings) }
        let prefix = Array(arguments.prefix(consumed))
        let combined = prefix + injected.flatMap(\.arguments) + userArguments
        try check(combined, settings: injected, commandLine: arguments, prefix: prefix, userArguments: userArguments, root: root)
        return Resolution(arguments: combined, warnings: warnings)
    }

    /// The settings that apply: for each option, the first source that sets it — the command line,
    /// then `layers` in order. This is the only place where the precedence is decided.
    static func merge(commandLine: [String], layers: [[Setting]], arguments: [ArgumentDescription]) -> [Setting] {
        var given = OptionSpec.givenOptions(in: commandLine, of: arguments)
        // An option of an exclusive group given on the command line also stands for the others:
        // `--no-store` typed by hand wins over `AASA_FETCH_CACHE` instead of clashing with it.
        for group in exclusiveGroups where !given.isDisjoint(with: group) {
            given.formUnion(group)
        }
        var chosen: [Setting] = []
        for layer in layers {
            for setting in layer where !given.contains(setting.option.key) {
                given.insert(setting.option.key)
                chosen.append(setting)
            }
        }
        return chosen
    }

    /// Options that cannot be given together: whichever the command line gives, a lower layer's
    /// settings of the others are dropped.
    static let exclusiveGroups: [Set<String>] = [
        ["no-store", "cache", "store"],
        ["entitlements", "app"],
    ]

    // MARK: - The environment layer

    /// The settings of the `AASA_FETCH_*` variables that name an option of the command, in the
    /// order of the command's options.
    static func environmentLayer(_ variables: [String: String], options: [OptionSpec]) throws -> [Setting] {
        var settings: [Setting] = []
        for option in options {
            guard let value = variables[option.variable], !value.isEmpty else { continue }
            settings.append(Setting(option: option, source: option.variable, rawValue: value, arguments: try option.arguments(for: value)))
        }
        return settings
    }

    // MARK: - Checking the values

    /// Parses the combined arguments; when they fail and the command line alone does not, finds
    /// the variable at fault and throws a usage error that names it.
    private static func check(
        _ combined: [String], settings: [Setting], commandLine: [String], prefix: [String], userArguments: [String],
        root: any ParsableCommand.Type
    ) throws {
        let failure: any Error
        do {
            _ = try root.parseAsRoot(combined)
            return
        } catch {
            failure = error
        }
        // The command line's own error comes first: it is what the user typed.
        guard (try? root.parseAsRoot(commandLine)) != nil else { return }
        for setting in settings {
            do {
                _ = try root.parseAsRoot(prefix + setting.arguments + userArguments)
            } catch {
                throw ValidationError(
                    "environment variable \(setting.source)=\(quoted(setting.rawValue)): \(root.message(for: error))")
            }
        }
        let names = settings.map(\.source).joined(separator: ", ")
        throw ValidationError("the options from the environment (\(names)) do not go together: \(root.message(for: failure))")
    }

    static func quoted(_ value: String) -> String {
        "'" + value.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    // MARK: - Commands

    /// The command the arguments select (following subcommand names and default subcommands) and
    /// how many leading arguments name it.
    static func selectedCommand(_ arguments: [String], root: any ParsableCommand.Type) -> (any ParsableCommand.Type, Int) {
        var command = root
        var index = 0
        while !command.configuration.subcommands.isEmpty {
            if index < arguments.count,
                let next = command.configuration.subcommands.first(where: {
                    $0._commandName == arguments[index] || $0.configuration.aliases.contains(arguments[index])
                })
            {
                command = next
                index += 1
            } else if let fallback = command.configuration.defaultSubcommand {
                command = fallback
            } else {
                break
            }
        }
        return (command, index)
    }

    /// Every command below `root` (and `root`).
    static func allCommands(_ root: any ParsableCommand.Type) -> [any ParsableCommand.Type] {
        [root] + root.configuration.subcommands.flatMap { allCommands($0) }
    }
}

/// A long option of a command that the environment may set, read from ArgumentParser's description
/// of the command.
struct OptionSpec: Equatable {
    /// Whether it takes a value or is a flag.
    enum Kind: Equatable {
        case option
        case flag
    }

    /// The long name without dashes (`connect-to`).
    var name: String
    /// The variable that sets it (`AASA_FETCH_CONNECT_TO`).
    var variable: String
    var kind: Kind
    /// Whether it may be given several times.
    var isRepeating: Bool
    /// The long name of the flag's inversion (`no-x` for `--x/--no-x`), if any.
    var inversion: String?
    /// Every spelling on the command line (`--cacert`, `-q`).
    var spellings: [String]

    /// Identifies the option across its spellings.
    var key: String { name }

    /// The arguments a variable's value becomes.
    func arguments(for value: String) throws -> [String] {
        switch kind {
        case .option:
            let values = isRepeating ? value.split(whereSeparator: \.isWhitespace).map(String.init) : [value]
            return values.map { "--\(name)=\($0)" }
        case .flag:
            switch value.lowercased() {
            case "1", "true", "yes", "on": return ["--\(name)"]
            case "0", "false", "no", "off": return inversion.map { ["--\($0)"] } ?? []
            default:
                throw ValidationError(
                    "environment variable \(variable)=\(OptionSources.quoted(value)): --\(name) is a flag; give 1, true, yes or on to set it, 0, false, no or off to leave it unset")
            }
        }
    }

    /// The options of a command that the environment may set: every long option and flag shown in
    /// its help, except ArgumentParser's own.
    static func options(of command: any ParsableCommand.Type) -> [OptionSpec] {
        options(from: arguments(of: command))
    }

    /// ``options(of:)`` from a command's described arguments.
    static func options(from described: [ArgumentDescription]) -> [OptionSpec] {
        described.compactMap { argument in
            guard argument.shouldDisplay, argument.kind != "positional" else { return nil }
            let longNames = (argument.names ?? []).filter { $0.kind == "long" }.map(\.name)
            guard var name = longNames.first, !OptionSources.builtInOptions.contains(name) else { return nil }
            var inversion: String?
            if argument.kind == "flag", longNames.count == 2 {
                // An inverted flag (`--x/--no-x`): the environment names the positive form.
                if let positive = longNames.first(where: { longNames.contains("no-" + $0) }) {
                    name = positive
                    inversion = "no-" + positive
                }
            }
            return OptionSpec(
                name: name,
                variable: OptionSources.environmentPrefix + name.uppercased().replacingOccurrences(of: "-", with: "_"),
                kind: argument.kind == "flag" ? .flag : .option,
                isRepeating: argument.isRepeating,
                inversion: inversion,
                spellings: argument.spellings)
        }
    }

    /// The command's arguments as ArgumentParser describes them (hidden ones included).
    static func arguments(of command: any ParsableCommand.Type) -> [ArgumentDescription] {
        let text = command._dumpHelp()
        guard let info = try? JSONDecoder().decode(ToolDescription.self, from: Data(text.utf8)) else { return [] }
        return info.command.arguments ?? []
    }

    /// The keys of the options that `commandLine` (the arguments after the command's name) gives,
    /// skipping option values and stopping at `--`.
    static func givenOptions(in commandLine: [String], of arguments: [ArgumentDescription]) -> Set<String> {
        var bySpelling: [String: ArgumentDescription] = [:]
        for argument in arguments {
            for spelling in argument.spellings { bySpelling[spelling] = argument }
        }
        var given: Set<String> = []
        var index = 0
        while index < commandLine.count {
            let token = commandLine[index]
            index += 1
            if token == "--" { break }
            guard token.hasPrefix("-"), token.count > 1 else { continue }
            if token.hasPrefix("--") {
                let spelling = String(token.prefix { $0 != "=" })
                guard let argument = bySpelling[spelling] else { continue }
                given.insert(argument.key)
                if argument.kind == "option", !token.contains("=") { index += 1 }
            } else {
                // Short names, possibly combined (`-qj`); the last may take the next token.
                for character in token.dropFirst() {
                    guard let argument = bySpelling["-\(character)"] else { continue }
                    given.insert(argument.key)
                    if argument.kind == "option" { index += 1 }
                }
            }
        }
        return given
    }
}

/// The parts of ArgumentParser's tool description (`_dumpHelp()`, format version 0) used here.
struct ToolDescription: Decodable {
    struct Command: Decodable {
        var arguments: [ArgumentDescription]?
    }

    var command: Command
}

/// One argument in ArgumentParser's tool description.
struct ArgumentDescription: Decodable {
    struct Name: Decodable {
        /// `long`, `short` or `longWithSingleDash`.
        var kind: String
        var name: String
    }

    /// `positional`, `option` or `flag`.
    var kind: String
    var shouldDisplay: Bool
    var isRepeating: Bool
    var names: [Name]?

    /// Every spelling on the command line.
    var spellings: [String] {
        (names ?? []).map { $0.kind == "short" ? "-\($0.name)" : ($0.kind == "long" ? "--\($0.name)" : "-\($0.name)") }
    }

    /// The key shared with ``OptionSpec/key``: the first long name, or the positive form of an
    /// inverted flag.
    var key: String {
        let longNames = (names ?? []).filter { $0.kind == "long" }.map(\.name)
        if kind == "flag", longNames.count == 2, let positive = longNames.first(where: { longNames.contains("no-" + $0) }) {
            return positive
        }
        return longNames.first ?? (names?.first?.name ?? "")
    }
}
