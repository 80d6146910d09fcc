import AASAFetchCore
import ArgumentParser
import Foundation

/// Where option values come from besides the command line, and which one wins.
///
/// Every long option of a command can also be given as an environment variable
/// `AASA_FETCH_<NAME>`: the option's name upper-cased with `-` turned into `_`
/// (`--cacert` → `AASA_FETCH_CACERT`, `--connect-to` → `AASA_FETCH_CONNECT_TO`), and as a key of the
/// config file (``ConfigFile``: `--config FILE`, `AASA_FETCH_CONFIG`, or `aasa-fetch.json`,
/// `aasa-fetch.yaml` or `aasa-fetch.yml` in the working directory; `--no-config` reads none). An
/// option given on the command line wins over the environment, which wins over the file. The
/// values are turned into command-line arguments before ArgumentParser parses, so they are checked
/// exactly like typed ones; the option names a command accepts are read from the parser itself (its
/// tool description), not from a list kept here.
///
/// Value syntax in the environment:
/// - an option taking a value: the variable's whole value (`AASA_FETCH_USER_AGENT='Mozilla/5.0 (…)'`);
/// - a repeatable option: several values separated by white space (spaces, tabs or new lines),
///   one option each (`AASA_FETCH_CONNECT_TO='a.test:443:127.0.0.1:8443 b.test:443:127.0.0.1:8444'`);
/// - a flag: `1`, `true`, `yes` or `on` sets it; `0`, `false`, `no` or `off` leaves it unset
///   (any case);
/// - an empty variable counts as unset.
///
/// In the config file: `true`/`false` for a flag, a string or a number for an option, a list (or
/// one value) for a repeatable option, `null` for unset; relative paths (options whose value is a
/// `file`, `dir` or `path`) are relative to the file's folder. A key that names a command and holds
/// an object is that command's section, which wins over the top level for it.
///
/// A value the option refuses (`AASA_FETCH_CONCURRENCY=lots`), or a flag value that is not one
/// of the above, is a usage error (exit 64) whose message names the variable, or the file, line and
/// key. A variable with the prefix that names no option of any command is reported on standard
/// error as ignored (a typo would otherwise pass silently); a key of the file that names no option
/// of any command is a usage error. Variables that are not options (``nonOptionVariables``) are
/// left to the code that reads them.
///
/// The precedence is kept in one place, ``merge(commandLine:layers:arguments:)``: the command line,
/// then each layer in order (the environment, the file's section for the command, the file's top
/// level); an option of an exclusive group that a source gives drops the group's others from every
/// lower source.
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
        /// The command line with the options of the environment and the config file added.
        public var arguments: [String]
        /// Notes for standard error (ignored variables).
        public var warnings: [String]
    }

    /// One value for one option from a source other than the command line.
    struct Setting: Equatable {
        /// The option it sets.
        var option: OptionSpec
        /// Where it came from, in a list of sources: the variable's name, or the key and the file.
        var source: String
        /// The value as written there.
        var rawValue: String
        /// The arguments it becomes (`--name=value`, or `--flag`; none for a flag set to false).
        var arguments: [String]
        /// Where it came from and its value, for a message about it.
        var label: String
        /// Whether it came from the environment (else from the config file).
        var fromEnvironment: Bool
    }

    /// Adds the options of `environment` and of the config file to `arguments` (the process's
    /// arguments without the program name) for the command they select.
    /// - Parameters:
    ///   - arguments: The command line.
    ///   - environment: The process environment.
    ///   - currentDirectory: Where the default config file is looked for (`nil`: the working
    ///     directory, and the file is then named by its relative path).
    ///   - root: The root command (its subcommands are searched for the one selected).
    /// - Returns: The arguments for ArgumentParser and notes for standard error.
    /// - Throws: A `ValidationError` naming the variable or the file's key (exit 64) when a value is
    ///   refused; a ``CommandFailure`` when the config file cannot be read (`config-unreadable`,
    ///   `config-too-large`) or parsed (`config-invalid`).
    public static func resolve(
        _ arguments: [String], environment: [String: String], currentDirectory: String? = nil,
        root: any ParsableCommand.Type = AASAFetchCommand.self
    ) throws -> Resolution {
        let (resolution, blame) = try resolveDeferringCheck(arguments, environment: environment, currentDirectory: currentDirectory, root: root)
        if let blame {
            do {
                _ = try root.parseAsRoot(resolution.arguments)
            } catch {
                try blame.check(failure: error)
            }
        }
        return resolution
    }

    /// The output format a config file asks for (`json: true` or `format: F`, in the command's
    /// section first, then at the top level), read leniently: when the file's options could not
    /// be resolved (a mistyped key, a value of the wrong type), the usage error that says so is a
    /// JSON document too. Empty when there is no such file or key.
    static func formatFromConfig(_ arguments: [String], environment: [String: String]) -> [String] {
        let options = arguments.prefix { $0 != "--" }
        if options.contains("--no-config") { return [] }
        var path: String?
        if let index = options.lastIndex(of: "--config"), index + 1 < options.endIndex {
            path = options[index + 1]
        } else if let given = options.last(where: { $0.hasPrefix("--config=") }) {
            path = String(given.dropFirst("--config=".count))
        } else if let variable = environment["AASA_FETCH_CONFIG"], !variable.isEmpty {
            path = variable
        } else if ["1", "true", "yes", "on"].contains((environment["AASA_FETCH_NO_CONFIG"] ?? "").lowercased()) {
            return []
        } else {
            path = try? ConfigFile.defaultPath(in: FileManager.default.currentDirectoryPath, relative: true)
        }
        guard let path, let file = try? ConfigFile.load(path: path) else { return [] }
        func format(in members: [ConfigMember]) -> [String]? {
            if let member = members.last(where: { $0.key == "format" }), case .string(let value) = member.value.kind { return ["--format", value] }
            if let member = members.last(where: { $0.key == "json" }), case .bool(true) = member.value.kind { return ["--json"] }
            return nil
        }
        // The command's section: `fetch`'s for the default command too (`aasa-fetch --domain …`).
        let command = selectedCommandName(arguments)
        if let section = file.members.last(where: { $0.key == command }), case .table(let members) = section.value.kind,
           let found = format(in: members) {
            return found
        }
        return format(in: file.members) ?? []
    }

    /// The name of the command `arguments` run: their first word when it names one, else `fetch`.
    static func selectedCommandName(_ arguments: [String]) -> String {
        let names = AASAFetchCommand.configuration.subcommands.compactMap { $0.configuration.commandName }
        return arguments.first.flatMap { names.contains($0) ? $0 : nil } ?? "fetch"
    }

    /// ``resolve(_:environment:currentDirectory:root:)`` without parsing the combined arguments:
    /// the caller parses them once, and only when that fails asks the ``Blame`` which setting is
    /// at fault (the parse it would otherwise run first costs as much as the run's own).
    /// - Returns: The resolution, and the blame when options were added from the environment or
    ///   the config file.
    public static func resolveDeferringCheck(
        _ arguments: [String], environment: [String: String], currentDirectory: String? = nil,
        root: any ParsableCommand.Type = AASAFetchCommand.self
    ) throws -> (Resolution, Blame?) {
        let variables = environment.filter { $0.key.hasPrefix(environmentPrefix) && !nonOptionVariables.contains($0.key) }
        // Help, version and completion requests print the parser's own text: nothing to add.
        let beforeTerminator = arguments.prefix { $0 != "--" }
        if beforeTerminator.contains(where: { ["-h", "--help", "--version", "--experimental-dump-help"].contains($0) || $0.hasPrefix("--generate-completion-script") })
            || arguments.first == "help"
        {
            return (Resolution(arguments: arguments, warnings: []), nil)
        }
        // Nothing to read: no variable, no --config, no default file (the common case costs no
        // description of the command).
        let mentionsConfig = beforeTerminator.contains { $0 == "--config" || $0.hasPrefix("--config=") }
        let directory = currentDirectory ?? FileManager.default.currentDirectoryPath
        if variables.isEmpty, !mentionsConfig, !ConfigFile.defaultNames.contains(where: { ConfigFile.exists(in: directory, name: $0) }) {
            return (Resolution(arguments: arguments, warnings: []), nil)
        }
        let (command, consumed) = selectedCommand(arguments, root: root)
        let described = OptionSpec.arguments(of: command)
        let options = OptionSpec.options(from: described)
        var warnings: [String] = []
        let environmentSettings = try environmentLayer(variables, options: options)
        let known = Set(options.map(\.variable))
        let unknown = variables.keys.filter { !known.contains($0) && !(variables[$0] ?? "").isEmpty }.sorted()
        if !unknown.isEmpty {
            let everyOption = Set(OptionSpec.optionsOfEveryCommand(root).values.joined().map(\.variable))
            for name in unknown where !everyOption.contains(name) {
                warnings.append("aasa-fetch: warning: \(name) is not an option of any command (ignored)")
            }
        }
        let userArguments = Array(arguments.dropFirst(consumed))
        var layers = [environmentSettings]
        if options.contains(where: { $0.key == "config" }),
            let path = try configPath(commandLine: userArguments, environment: environmentSettings, arguments: described, currentDirectory: currentDirectory)
        {
            let file = try ConfigFile.load(path: path)
            layers += try fileLayers(file, command: command, options: options, root: root)
        }
        let injected = merge(commandLine: userArguments, layers: layers, arguments: described)
        guard !injected.isEmpty else { return (Resolution(arguments: arguments, warnings: warnings), nil) }
        let prefix = Array(arguments.prefix(consumed))
        // After the command line's own options (before a `--`), so that a mistake typed there
        // is the parser's first complaint.
        let terminator = userArguments.firstIndex(of: "--") ?? userArguments.endIndex
        let combined = prefix + userArguments[..<terminator] + injected.flatMap(\.arguments) + userArguments[terminator...]
        let blame = Blame(settings: injected, commandLine: arguments, prefix: prefix, userArguments: userArguments, root: root)
        return (Resolution(arguments: combined, warnings: warnings), blame)
    }

    /// The settings that apply: for each option, the first source that sets it — the command line,
    /// then `layers` in order (the environment, the config file's section for the command, the
    /// config file's top level). This is the only place where the precedence is decided.
    static func merge(commandLine: [String], layers: [[Setting]], arguments: [ArgumentDescription]) -> [Setting] {
        var given = OptionSpec.givenOptions(in: commandLine, of: arguments)
        // Options that set something: an option of an exclusive group set by a source stands for
        // the others in every lower source (`--no-store` typed by hand wins over
        // `AASA_FETCH_CACHE` instead of clashing with it, and `AASA_FETCH_CACHE` wins over the
        // config file's `no-store`).
        var setting = given
        func closeOverGroups() {
            for group in exclusiveGroups where !setting.isDisjoint(with: group) {
                given.formUnion(group)
            }
        }
        closeOverGroups()
        var chosen: [Setting] = []
        for layer in layers {
            var taken: Set<String> = []
            for candidate in layer where !given.contains(candidate.option.key) && !taken.contains(candidate.option.key) {
                taken.insert(candidate.option.key)
                // A flag set to false adds no argument: it decides its own option (a lower
                // source's `true` does not apply) but sets nothing, so it takes nothing from the
                // others of its group (`AASA_FETCH_NO_STORE=0` dropped the file's `cache`).
                guard !candidate.arguments.isEmpty else { continue }
                chosen.append(candidate)
                setting.insert(candidate.option.key)
            }
            given.formUnion(taken)
            closeOverGroups()
        }
        return chosen
    }

    /// Input options that take one value, each naming what it reads: ArgumentParser keeps the last
    /// of several, so a second `--domains` dropped the first list without a word.
    static let singleInputs: [String: String] = ["entitlements": "file", "app": "app", "domains": "file"]

    /// The first input option of ``singleInputs`` that `arguments` (the whole command line, the
    /// options of the environment and the config file added, which add at most one value of an
    /// option the command line does not give) gives more than once, with its values.
    static func repeatedInputOption(in arguments: [String], root: any ParsableCommand.Type = AASAFetchCommand.self) -> (option: String, what: String, values: [String])? {
        let beforeTerminator = arguments.prefix { $0 != "--" }
        // The common case: no option is given twice, found without describing the command.
        let spelled = beforeTerminator.compactMap { token -> String? in
            guard token.hasPrefix("--") else { return nil }
            let name = String(token.dropFirst(2).prefix { $0 != "=" })
            return singleInputs[name] != nil ? name : nil
        }
        guard Set(spelled).count < spelled.count else { return nil }
        let (command, consumed) = selectedCommand(arguments, root: root)
        let given = OptionSpec.givenValues(in: Array(arguments.dropFirst(consumed)), of: OptionSpec.arguments(of: command))
        for (name, what) in singleInputs.sorted(by: { $0.key < $1.key }) {
            let values = given.filter { $0.key == name }.map { $0.value ?? "" }
            if values.count > 1 { return ("--" + name, what, values) }
        }
        return nil
    }

    /// The most values a repeatable option takes from a config file or a variable: each becomes
    /// an argument, and the parser's time grows with the square of their number (8,000 config
    /// entries took 51 s in a debug build); `--domains FILE` reads any number.
    static let listLimit = 1_000

    /// Options that cannot be given together: whichever a source gives, a lower source's settings
    /// of the others are dropped.
    static let exclusiveGroups: [Set<String>] = [
        ["no-store", "cache", "store"],
        ["entitlements", "app"],
        ["json", "format"],
        ["config", "no-config"],
    ]

    // MARK: - The environment layer

    /// The settings of the `AASA_FETCH_*` variables that name an option of the command, in the
    /// order of the command's options.
    static func environmentLayer(_ variables: [String: String], options: [OptionSpec]) throws -> [Setting] {
        var settings: [Setting] = []
        // `AASA_FETCH_NO_CONFIG=1` reads no file at all, that of `AASA_FETCH_CONFIG` included
        // (the two were refused together).
        let noConfig = options.first { $0.name == "no-config" }.flatMap { variables[$0.variable] }
            .map { ["1", "true", "yes", "on"].contains($0.lowercased()) } ?? false
        for option in options {
            guard let value = variables[option.variable], !value.isEmpty else { continue }
            if noConfig, option.name == "config" { continue }
            settings.append(
                Setting(
                    option: option, source: option.variable, rawValue: value, arguments: try option.arguments(for: value),
                    label: "environment variable \(option.variable)=\(quoted(shown(value, of: option)))", fromEnvironment: true))
        }
        return settings
    }

    // MARK: - The config file layers

    /// The options that choose the config file, which a config file cannot set.
    static let configOptions: Set<String> = ["config", "no-config"]

    /// The config file to read: `--config` on the command line, else `AASA_FETCH_CONFIG`, else the
    /// default file of the working directory when there is one; none with `--no-config` (or
    /// `AASA_FETCH_NO_CONFIG=1` when the command line gives no `--config`).
    static func configPath(
        commandLine: [String], environment: [Setting], arguments: [ArgumentDescription], currentDirectory: String?
    ) throws -> String? {
        let given = OptionSpec.givenValues(in: commandLine, of: arguments)
        // Both on the command line: no file; the parser reports the clash.
        if given.contains(where: { $0.key == "no-config" }) { return nil }
        if let path = given.last(where: { $0.key == "config" })?.value { return path }
        if environment.contains(where: { $0.option.key == "no-config" && !$0.arguments.isEmpty }) { return nil }
        if let setting = environment.first(where: { $0.option.key == "config" }) { return setting.rawValue }
        return try ConfigFile.defaultPath(in: currentDirectory ?? FileManager.default.currentDirectoryPath, relative: currentDirectory == nil)
    }

    /// The settings of `file` for `command`: the settings of its section (`"refresh": {…}`), then
    /// those of the top level, two layers so that the section wins (exclusive groups included).
    ///
    /// Every key is checked, whichever command runs: a top-level key must be an option of some
    /// command (it is ignored by the commands that do not have it) or a command's section, a key in
    /// a section an option of that command, and every value of the type its option takes.
    /// - Throws: A `ValidationError` (exit 64) naming the file, the line and the key.
    static func fileLayers(
        _ file: ConfigFile, command: any ParsableCommand.Type, options: [OptionSpec], root: any ParsableCommand.Type
    ) throws -> [[Setting]] {
        let commands = allCommands(root).dropFirst()
        let running = ObjectIdentifier(command)
        // Every command's options (by command, and by key), described once and only when a key
        // needs them.
        var described: (byCommand: [String: [OptionSpec]], byKey: [String: [OptionSpec]])?
        func optionsOfEveryCommand() -> (byCommand: [String: [OptionSpec]], byKey: [String: [OptionSpec]]) {
            if let described { return described }
            let byCommand = OptionSpec.optionsOfEveryCommand(root)
            var byKey: [String: [OptionSpec]] = [:]
            for option in byCommand.values.joined() { byKey[option.key, default: []].append(option) }
            described = (byCommand, byKey)
            return (byCommand, byKey)
        }
        func unknown(_ member: ConfigMember, section: String?, candidates: [String]) -> ValidationError {
            let suggestion = closest(to: member.key, in: candidates).map { " (did you mean \"\($0)\"?)" } ?? ""
            let place = section.map { "is not an option of \($0)" } ?? "is not an option of any command"
            return ValidationError("config file \(file.path), line \(member.line): \"\(member.key)\" \(place)\(suggestion)")
        }
        var sectionLayer: [Setting] = []
        var topLayer: [Setting] = []
        for member in file.members {
            if configOptions.contains(member.key) {
                throw ValidationError(
                    "config file \(file.path), line \(member.line): \"\(member.key)\" cannot be set in a config file (use --\(member.key) or AASA_FETCH_\(member.key.uppercased().replacingOccurrences(of: "-", with: "_")))")
            }
            if case .table(let items) = member.value.kind, let section = commands.first(where: { $0._commandName == member.key }) {
                let isRunning = ObjectIdentifier(section) == running
                let sectionOptions = (isRunning ? options : optionsOfEveryCommand().byCommand[member.key] ?? []).filter { !configOptions.contains($0.key) }
                for item in items {
                    guard let option = sectionOptions.first(where: { $0.key == item.key }) else {
                        if configOptions.contains(item.key) {
                            throw ValidationError("config file \(file.path), line \(item.line): \"\(item.key)\" cannot be set in a config file")
                        }
                        throw unknown(item, section: member.key, candidates: sectionOptions.map(\.key))
                    }
                    let setting = try fileSetting(option, item, file: file, section: member.key)
                    if isRunning, let setting { sectionLayer.append(setting) }
                }
                continue
            }
            if let option = options.first(where: { $0.key == member.key }) {
                if let setting = try fileSetting(option, member, file: file, section: nil) { topLayer.append(setting) }
                continue
            }
            let byKey = optionsOfEveryCommand().byKey
            guard let others = byKey[member.key] else {
                if commands.contains(where: { $0._commandName == member.key }) {
                    // A command's section that is not a table (`"plan": 5`).
                    throw ValidationError("config file \(file.path), line \(member.line): \"\(member.key)\" is a command: its section holds its options, e.g. \"\(member.key)\": {\"quiet\": true}")
                }
                throw unknown(member, section: nil, candidates: Array(byKey.keys) + commands.map { $0._commandName })
            }
            // An option of other commands only: ignored here, but its value must be one that one
            // of them takes, so that the file is valid or not whichever command reads it.
            var firstError: (any Error)?
            for option in others {
                do {
                    _ = try fileSetting(option, member, file: file, section: nil)
                    firstError = nil
                    break
                } catch {
                    firstError = firstError ?? error
                }
            }
            if let firstError { throw firstError }
        }
        return [sectionLayer, topLayer]
    }

    /// The setting of one key of a config file; `nil` for `null` or an empty list (not set).
    /// - Throws: A `ValidationError` naming the file, line and key when the value's type is not
    ///   one the option takes.
    static func fileSetting(_ option: OptionSpec, _ member: ConfigMember, file: ConfigFile, section: String?) throws -> Setting? {
        let value = member.value
        let key = section.map { "\($0).\(member.key)" } ?? member.key
        let place = "config file \(file.path), line \(member.line)"
        func wrongType(_ expected: String) -> ValidationError {
            ValidationError("\(place): \"\(key)\" \(expected), not \(value.typeName)")
        }
        var arguments: [String]
        let rawValue: String
        switch (option.kind, value.kind) {
        case (_, .null):
            return nil
        case (.flag, .bool(let on)):
            arguments = on ? ["--\(option.name)"] : option.inversion.map { ["--\($0)"] } ?? []
            rawValue = on ? "true" : "false"
        case (.flag, _):
            throw wrongType("is a flag: give true or false")
        case (.option, .string), (.option, .number), (.option, .list):
            var items: [ConfigValue] = [value]
            if case .list(let elements) = value.kind {
                guard option.isRepeating else { throw wrongType("takes one value (a string or a number)") }
                guard elements.count <= OptionSources.listLimit else {
                    throw ValidationError("\(place): \"\(key)\" has \(elements.count) values, more than the \(OptionSources.listLimit) a config file may give\(option.name == "domain" ? "; list entries in a file and give --domains FILE" : "")")
                }
                items = elements
            }
            var texts: [String] = []
            for (index, item) in items.enumerated() {
                switch item.kind {
                case .string(let text), .number(let text):
                    texts.append(option.isPath ? file.resolve(text) : text)
                default:
                    let which = items.count == 1 && value == item ? "" : " (item \(index + 1))"
                    throw ValidationError("\(place): \"\(key)\"\(which) takes strings or numbers, not \(item.typeName)")
                }
            }
            guard !texts.isEmpty else { return nil }
            // `--name=value` keeps a value that starts with `-` a value; an empty one is given
            // apart (`--retry-delays ''`), as ArgumentParser reads `--name=` as no value.
            arguments = texts.flatMap { $0.isEmpty ? ["--\(option.name)", ""] : ["--\(option.name)=\($0)"] }
            rawValue = texts.count == 1 && !option.isRepeating ? texts[0] : "[" + texts.joined(separator: ", ") + "]"
        case (.option, _):
            throw wrongType(option.isRepeating ? "takes a string or a list of strings" : "takes one value (a string or a number)")
        }
        return Setting(
            option: option, source: "\"\(key)\" in \(file.path)", rawValue: rawValue, arguments: arguments,
            label: "\(place): \"\(key)\" (\(shown(rawValue, of: option)))", fromEnvironment: false)
    }

    /// A value as a message may show it: a webhook URL without its path (often the webhook's
    /// secret) and a store URL without its password, as the commands show them; others as given.
    static func shown(_ value: String, of option: OptionSpec) -> String {
        switch option.name {
        case "notify": Notifier.shown(value)
        case "store": PostgresAssociationStore.redacted(value)
        default: value
        }
    }

    /// The candidate nearest to `name` when it is a likely typo (at most 2 edits away).
    static func closest(to name: String, in candidates: [String]) -> String? {
        func distance(_ a: [Character], _ b: [Character]) -> Int {
            var row = Array(0...b.count)
            for (i, x) in a.enumerated() {
                var previous = row[0]
                row[0] = i + 1
                for (j, y) in b.enumerated() {
                    let current = row[j + 1]
                    row[j + 1] = min(row[j + 1] + 1, row[j] + 1, previous + (x == y ? 0 : 1))
                    previous = current
                }
            }
            return row[b.count]
        }
        let target = Array(name)
        let scored = Set(candidates).map { ($0, distance(target, Array($0))) }.filter { $0.1 <= 2 }
        return scored.min { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }?.0
    }

    // MARK: - Checking the values

    /// The options added to a command line, kept to say which one is at fault when the combined
    /// arguments fail to parse.
    public struct Blame {
        var settings: [Setting]
        var commandLine: [String]
        var prefix: [String]
        var userArguments: [String]
        var root: any ParsableCommand.Type

        /// After the combined arguments failed with `failure`: finds the setting at fault and
        /// throws a usage error that names its variable or its key in the config file; returns
        /// when the failure is the command line's own (the parser's error is then the one to report).
        ///
        /// When the command line alone parses, the first setting that fails with it alone is at
        /// fault (or, when each is fine alone, all of them together). When the command line alone
        /// fails too (it may lack an input that a lower source gives), a setting is at fault when it
        /// fails with the command line for another reason than the command line's own; the command
        /// line's own error is left to the parser: it is what the user typed.
        public func check(failure: any Error) throws {
            try OptionSources.check(failure: failure, settings: settings, commandLine: commandLine, prefix: prefix,
                                    userArguments: userArguments, root: root)
        }
    }

    private static func check(
        failure: any Error, settings: [Setting], commandLine: [String], prefix: [String], userArguments: [String],
        root: any ParsableCommand.Type
    ) throws {
        var ownFailure: String?
        do {
            _ = try root.parseAsRoot(commandLine)
        } catch {
            ownFailure = root.message(for: error)
        }
        // The setting's arguments go after the command line's own (before a `--`), so that a
        // mistake typed there is still the parser's first complaint.
        let terminator = userArguments.firstIndex(of: "--") ?? userArguments.endIndex
        for setting in settings {
            let alone = prefix + userArguments[..<terminator] + setting.arguments + userArguments[terminator...]
            do {
                _ = try root.parseAsRoot(alone)
            } catch {
                let message = root.message(for: error)
                if message != ownFailure {
                    throw ValidationError("\(setting.label): \(message)")
                }
            }
        }
        guard ownFailure == nil else { return }
        let names = settings.map(\.source).joined(separator: ", ")
        let origins = Set(settings.map(\.fromEnvironment))
        let sources = origins.count == 2 ? "the environment and the config file" : (origins.contains(true) ? "the environment" : "the config file")
        throw ValidationError("the options from \(sources) (\(names)) do not go together: \(root.message(for: failure))")
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
    /// The name of its value in `--help` (`file`, `dir`, `n`), if it takes one.
    var valueName: String? = nil

    /// Whether its value is a file or a folder (its value is named `file`, `dir` or `path`): a
    /// relative one in a config file is relative to the file's folder.
    var isPath: Bool {
        guard kind == .option, let valueName else { return false }
        return ["file", "dir", "path", "folder", "directory"].contains(valueName.lowercased())
    }

    /// Identifies the option across its spellings.
    var key: String { name }

    /// The arguments a variable's value becomes.
    func arguments(for value: String) throws -> [String] {
        switch kind {
        case .option:
            let values = isRepeating ? value.split(whereSeparator: \.isWhitespace).map(String.init) : [value]
            guard values.count <= OptionSources.listLimit else {
                throw ValidationError("environment variable \(variable) has \(values.count) values, more than the \(OptionSources.listLimit) it may give\(name == "domain" ? "; list entries in a file and give --domains FILE" : "")")
            }
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
                spellings: argument.spellings,
                valueName: argument.valueName)
        }
    }

    /// The options of every command below `root` (and of `root`), by command name: from the
    /// generated table (``OptionTable``) when it has every command, else from one description of
    /// the whole tool (describing each command apart costs as much each time).
    static func optionsOfEveryCommand(_ root: any ParsableCommand.Type) -> [String: [OptionSpec]] {
        let commands = OptionSources.allCommands(root)
        if commands.allSatisfy({ OptionTable.arguments[OptionTable.key(of: $0)] != nil }) {
            var all: [String: [OptionSpec]] = [:]
            for command in commands { all[command._commandName, default: []] += options(from: arguments(of: command)) }
            return all
        }
        guard let info = try? JSONDecoder().decode(ToolDescription.self, from: Data(root._dumpHelp().utf8)) else { return [:] }
        var all: [String: [OptionSpec]] = [:]
        func visit(_ command: ToolDescription.Command) {
            all[command.commandName ?? "", default: []] += options(from: command.arguments ?? [])
            for subcommand in command.subcommands ?? [] { visit(subcommand) }
        }
        visit(info.command)
        return all
    }

    /// The command's arguments as ArgumentParser describes them (hidden ones included): from the
    /// table generated from that description (``OptionTable``), else from the description.
    static func arguments(of command: any ParsableCommand.Type) -> [ArgumentDescription] {
        OptionTable.arguments[OptionTable.key(of: command)] ?? describedArguments(of: command)
    }

    /// The command's arguments from ArgumentParser's description of it (`_dumpHelp()`, a JSON text
    /// decoded here: a few milliseconds a command, which ``OptionTable`` saves at start-up).
    static func describedArguments(of command: any ParsableCommand.Type) -> [ArgumentDescription] {
        let text = command._dumpHelp()
        guard let info = try? JSONDecoder().decode(ToolDescription.self, from: Data(text.utf8)) else { return [] }
        return info.command.arguments ?? []
    }

    /// The keys of the options that `commandLine` (the arguments after the command's name) gives,
    /// skipping option values and stopping at `--`.
    static func givenOptions(in commandLine: [String], of arguments: [ArgumentDescription]) -> Set<String> {
        Set(givenValues(in: commandLine, of: arguments).map(\.key))
    }

    /// The options that `commandLine` gives, in order, with their values (`nil` for a flag).
    static func givenValues(in commandLine: [String], of arguments: [ArgumentDescription]) -> [(key: String, value: String?)] {
        var bySpelling: [String: ArgumentDescription] = [:]
        for argument in arguments {
            for spelling in argument.spellings { bySpelling[spelling] = argument }
        }
        var given: [(key: String, value: String?)] = []
        var index = 0
        while index < commandLine.count {
            let token = commandLine[index]
            index += 1
            if token == "--" { break }
            guard token.hasPrefix("-"), token.count > 1 else { continue }
            if token.hasPrefix("--") {
                let spelling = String(token.prefix { $0 != "=" })
                guard let argument = bySpelling[spelling] else { continue }
                if argument.kind == "option" {
                    if let equals = token.firstIndex(of: "=") {
                        given.append((argument.key, String(token[token.index(after: equals)...])))
                    } else {
                        given.append((argument.key, index < commandLine.count ? commandLine[index] : nil))
                        index += 1
                    }
                } else {
                    given.append((argument.key, nil))
                }
            } else {
                // Short names, possibly combined (`-qj`); the last may take the next token.
                for character in token.dropFirst() {
                    guard let argument = bySpelling["-\(character)"] else { continue }
                    if argument.kind == "option" {
                        given.append((argument.key, index < commandLine.count ? commandLine[index] : nil))
                        index += 1
                    } else {
                        given.append((argument.key, nil))
                    }
                }
            }
        }
        return given
    }
}

/// The parts of ArgumentParser's tool description (`_dumpHelp()`, format version 0) used here.
struct ToolDescription: Decodable {
    struct Command: Decodable {
        var commandName: String?
        var arguments: [ArgumentDescription]?
        var subcommands: [Command]?
    }

    var command: Command
}

/// The arguments of every command as ArgumentParser describes them, kept in generated source
/// (`OptionTable+Generated.swift`) so that a run does not describe its command to read them.
/// `OptionTableTests` fails when the table differs from the description, and
/// `AASA_REGENERATE=1 swift test --filter OptionTableTests` writes it again.
enum OptionTable {
    /// The table's key of a command: its type's full name.
    static func key(of command: any ParsableCommand.Type) -> String {
        String(reflecting: command)
    }

    /// The source of `OptionTable+Generated.swift` for the commands below `root` (and `root`).
    static func source(root: any ParsableCommand.Type) -> String {
        func literal(_ text: String?) -> String { text.map { String(reflecting: $0) } ?? "nil" }
        var lines = [
            "// Generated from ArgumentParser's description of the commands by",
            "// `AASA_REGENERATE=1 swift test --filter OptionTableTests`; do not edit (see OptionTable).",
            "",
            "extension OptionTable {",
            "    static let arguments: [String: [ArgumentDescription]] = [",
        ]
        for command in OptionSources.allCommands(root) {
            lines.append("        \(literal(key(of: command))): [")
            for argument in OptionSpec.describedArguments(of: command) {
                let names = argument.names.map { "[" + $0.map { ".init(kind: \(literal($0.kind)), name: \(literal($0.name)))" }.joined(separator: ", ") + "]" } ?? "nil"
                lines.append("            .init(kind: \(literal(argument.kind)), shouldDisplay: \(argument.shouldDisplay), isRepeating: \(argument.isRepeating),")
                lines.append("                  names: \(names), valueName: \(literal(argument.valueName))),")
            }
            lines.append("        ],")
        }
        lines += ["    ]", "}", ""]
        return lines.joined(separator: "\n")
    }
}

/// One argument in ArgumentParser's tool description.
struct ArgumentDescription: Decodable, Equatable {
    struct Name: Decodable, Equatable {
        /// `long`, `short` or `longWithSingleDash`.
        var kind: String
        var name: String
    }

    /// `positional`, `option` or `flag`.
    var kind: String
    var shouldDisplay: Bool
    var isRepeating: Bool
    var names: [Name]?
    /// The name of the value (`file`, `n`).
    var valueName: String?

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
