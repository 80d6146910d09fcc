import AASAFetchCore
import ArgumentParser
import Foundation
import Yams

/// `--config FILE` and `--no-config`, on every command: which config file gives option values.
///
/// The parser only accepts them (so they show in `--help`, the completions and the man page);
/// ``OptionSources`` reads them before parsing, and ``ConfigFile`` reads the file.
struct ConfigFileOptions: ParsableArguments {
    @Option(
        name: .customLong("config"),
        help: ArgumentHelp(
            "Read option values from this JSON or YAML file (default: aasa-fetch.json, aasa-fetch.yaml or aasa-fetch.yml in the working directory, when there is one). Options on the command line and AASA_FETCH_* variables win over it.",
            valueName: "file"),
        completion: .file(extensions: ["json", "yaml", "yml"]))
    var config: String?

    @Flag(name: .customLong("no-config"), help: "Read no config file: neither the default one nor the file of AASA_FETCH_CONFIG.")
    var noConfig = false

    func validate() throws {
        if config != nil, noConfig {
            throw ValidationError("--config and --no-config cannot be given together")
        }
    }
}

/// A value read from a config file, with the line it starts on.
struct ConfigValue: Equatable {
    /// What the value is. Numbers keep their text as written, so that the option's own parser
    /// judges them exactly as it judges a command-line value.
    indirect enum Kind: Equatable {
        case null
        case bool(Bool)
        case number(String)
        case string(String)
        case list([ConfigValue])
        case table([ConfigMember])
    }

    var kind: Kind
    /// The line (1-based) where the value starts.
    var line: Int

    /// The value's type in messages ("a string", "a list").
    var typeName: String {
        switch kind {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .list: "a list"
        case .table: "an object"
        }
    }
}

/// One key of a config file's object (or YAML mapping) and its value.
struct ConfigMember: Equatable {
    var key: String
    /// The line of the key.
    var line: Int
    var value: ConfigValue
}

/// A config file: its path as given, and its top-level members.
///
/// The file is read through ``BoundedFile`` (at most ``sizeLimit`` bytes) and parsed as JSON when
/// its name ends in `.json` (the project's strict ``JSONParser``), as YAML otherwise (Yams, the
/// YAML 1.2 core types: only `true`/`false` are booleans, `yes`/`no` are strings). Errors:
/// `config-unreadable` and `config-too-large` (exit 2), `config-invalid` for a file that is not
/// a JSON object or YAML mapping of keys (exit 64, with the line).
struct ConfigFile: Equatable {
    /// The largest config file read.
    static let sizeLimit = 1 << 20
    /// The deepest nesting of lists and objects accepted (a flat file needs 3).
    static let maxDepth = 16
    /// The names looked for in the working directory, in this order.
    static let defaultNames = ["aasa-fetch.json", "aasa-fetch.yaml", "aasa-fetch.yml"]

    /// The path as given (relative to the working directory, or absolute).
    var path: String
    /// The top-level members, in file order.
    var members: [ConfigMember]

    /// The folder that relative paths in the file are relative to: the file's own folder, as a
    /// prefix to put before them (`""` when the file is in the working directory).
    var folderPrefix: String {
        let folder = (path as NSString).deletingLastPathComponent
        if folder.isEmpty || folder == "." { return "" }
        return folder.hasSuffix("/") ? folder : folder + "/"
    }

    /// `value` (a path in the file) as a path from the working directory: a relative one is put
    /// inside the file's folder; an absolute one, `-` (standard input) and `""` stay as written.
    func resolve(_ value: String) -> String {
        guard !value.isEmpty, value != "-", !value.hasPrefix("/") else { return value }
        return folderPrefix + value
    }

    /// The default config file of `directory`: the one of ``defaultNames`` that exists there.
    /// - Returns: The path (relative when `directory` is the working directory), or `nil`.
    /// - Throws: A usage error naming both when there are two.
    static func defaultPath(in directory: String, relative: Bool) throws -> String? {
        let present = defaultNames.filter { exists(in: directory, name: $0) }
        guard let first = present.first else { return nil }
        if present.count > 1 {
            let names = present.joined(separator: " and ")
            throw ValidationError(
                "the working directory has two config files, \(names): keep one, or choose with --config FILE (or --no-config)")
        }
        return relative ? first : (directory as NSString).appendingPathComponent(first)
    }

    /// Whether `directory` holds an entry called `name` (of any kind: a folder or an unreadable
    /// file is there too, and reading it then says what is wrong).
    static func exists(in directory: String, name: String) -> Bool {
        var status = stat()
        return lstat((directory as NSString).appendingPathComponent(name), &status) == 0
    }

    /// Reads and parses the file at `path`.
    /// - Throws: ``CommandFailure`` `config-unreadable`, `config-too-large` or `config-invalid`.
    static func load(path: String) throws(CommandFailure) -> ConfigFile {
        var status = stat()
        if stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR {
            throw CommandFailure(code: "config-unreadable", message: "cannot read config file \(path): it is a folder")
        }
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path: path, limit: sizeLimit)
        } catch {
            switch error {
            case .tooLarge:
                throw CommandFailure(code: "config-too-large", message: error.message(path: "config file \(path)"))
            case .unreadable:
                throw CommandFailure(code: "config-unreadable", message: error.message(path: "config file \(path)"))
            }
        }
        let isJSON = path.lowercased().hasSuffix(".json")
        let root = isJSON ? try parseJSON(bytes, path: path) : try parseYAML(bytes, path: path)
        guard let root else { return ConfigFile(path: path, members: []) }
        guard case .table(let members) = root.kind else {
            throw invalid(path, line: root.line, "the file must be \(isJSON ? "an object" : "a mapping") of option names, not \(root.typeName)")
        }
        return ConfigFile(path: path, members: members)
    }

    private static func invalid(_ path: String, line: Int?, _ message: String) -> CommandFailure {
        let place = line.map { "\(path), line \($0)" } ?? path
        return CommandFailure(code: "config-invalid", message: "config file \(place): \(message)", status: ExitStatus.usage)
    }

    // MARK: - JSON

    private static func parseJSON(_ bytes: [UInt8], path: String) throws(CommandFailure) -> ConfigValue? {
        let document: JSONDocument
        do {
            document = try JSONParser.parse(bytes, maxDepth: maxDepth)
        } catch {
            throw invalid(path, line: error.line, "invalid JSON at column \(error.column): \(error.message)")
        }
        return try convert(document.root, path: path)
    }

    private static func convert(_ value: JSONValue, path: String) throws(CommandFailure) -> ConfigValue {
        let line = value.position.line
        switch value.kind {
        case .null: return ConfigValue(kind: .null, line: line)
        case .bool(let flag): return ConfigValue(kind: .bool(flag), line: line)
        case .number(let number): return ConfigValue(kind: .number(number.text), line: line)
        case .string(let text): return ConfigValue(kind: .string(text), line: line)
        case .array(let elements):
            var values: [ConfigValue] = []
            for element in elements { values.append(try convert(element, path: path)) }
            return ConfigValue(kind: .list(values), line: line)
        case .object(let members):
            var converted: [ConfigMember] = []
            var seen: [String: Int] = [:]
            for member in members {
                if let earlier = seen[member.key] {
                    throw invalid(path, line: member.keyPosition.line, "\"\(member.key)\" is given twice (first on line \(earlier))")
                }
                seen[member.key] = member.keyPosition.line
                converted.append(ConfigMember(key: member.key, line: member.keyPosition.line, value: try convert(member.value, path: path)))
            }
            return ConfigValue(kind: .table(converted), line: line)
        }
    }

    // MARK: - YAML

    private static func parseYAML(_ bytes: [UInt8], path: String) throws(CommandFailure) -> ConfigValue? {
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw invalid(path, line: firstInvalidLine(bytes), "not UTF-8 text")
        }
        var text = decoded[...]
        if text.hasPrefix("\u{FEFF}") { text = text.dropFirst() }
        if let line = aliasLine(in: text) {
            throw invalid(path, line: line, "anchors and aliases (&name, *name) are not accepted in a config file; quote a value that starts with & or *")
        }
        let source = String(text)
        // Yams builds (and frees) the nodes recursively, about 2.5 KiB of stack a level, and
        // libyaml accepts 1,000 levels: more than the 2 MiB stack a thread may have (a small
        // `ulimit -s` or `ulimit -v`), where a hostile file crashed the run.
        let outcome: Result<ConfigValue?, CommandFailure> = LargeStack.run {
            do throws(CommandFailure) {
                return .success(try parseYAMLTree(source, path: path))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    /// The parse and conversion of ``parseYAML(_:path:)``, where the document's nodes live and die.
    private static func parseYAMLTree(_ source: String, path: String) throws(CommandFailure) -> ConfigValue? {
        let node: Node?
        do {
            // The basic resolver leaves every scalar a string; `scalar(_:)` applies the YAML 1.2
            // core types itself.
            node = try Parser(yaml: source, resolver: .basic).singleRoot()
        } catch let error as YamlError {
            throw invalid(path, line: Self.line(of: error), Self.message(of: error))
        } catch {
            throw invalid(path, line: nil, "\(error)")
        }
        guard let node else { return nil }
        var budget = 100_000
        return try convert(node, path: path, depth: 0, budget: &budget)
    }

    private static func convert(_ node: Node, path: String, depth: Int, budget: inout Int) throws(CommandFailure) -> ConfigValue {
        let line = node.mark?.line ?? 1
        budget -= 1
        guard depth <= maxDepth else {
            throw invalid(path, line: line, "nested more than \(maxDepth) levels")
        }
        guard budget >= 0 else {
            throw invalid(path, line: line, "more than 100,000 values")
        }
        switch node {
        case .scalar(let scalar):
            return ConfigValue(kind: kind(of: scalar), line: line)
        case .sequence(let sequence):
            var values: [ConfigValue] = []
            for element in sequence { values.append(try convert(element, path: path, depth: depth + 1, budget: &budget)) }
            return ConfigValue(kind: .list(values), line: line)
        case .mapping(let mapping):
            var members: [ConfigMember] = []
            var seen: [String: Int] = [:]
            for (key, value) in mapping {
                guard case .scalar(let keyScalar) = key else {
                    throw invalid(path, line: key.mark?.line ?? line, "a key must be a plain name, not a list or a mapping")
                }
                let keyLine = keyScalar.mark?.line ?? line
                if let earlier = seen[keyScalar.string] {
                    throw invalid(path, line: keyLine, "\"\(keyScalar.string)\" is given twice (first on line \(earlier))")
                }
                seen[keyScalar.string] = keyLine
                members.append(ConfigMember(key: keyScalar.string, line: keyLine, value: try convert(value, path: path, depth: depth + 1, budget: &budget)))
            }
            return ConfigValue(kind: .table(members), line: line)
        case .alias:
            throw invalid(path, line: line, "aliases are not accepted in a config file")
        }
    }

    /// The YAML 1.2 core schema for a scalar: a quoted or block scalar is a string; a plain one is
    /// null (`null`, `~`, nothing), a boolean (`true`/`false` in any of YAML's three spellings),
    /// a number, or else a string.
    static func kind(of scalar: Node.Scalar) -> ConfigValue.Kind {
        let text = scalar.string
        guard scalar.style == .plain || scalar.style == .any else { return .string(text) }
        switch text {
        case "", "~", "null", "Null", "NULL": return .null
        case "true", "True", "TRUE": return .bool(true)
        case "false", "False", "FALSE": return .bool(false)
        default:
            return text.wholeMatch(of: /[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?/) != nil ? .number(text) : .string(text)
        }
    }

    /// The line of the first YAML anchor (`&name`) or alias (`*name`) in `text`, if any: an `&` or
    /// `*` followed by a name character where a node starts (first on its line, or after `:`,
    /// `-`, `?`, `[`, `{` or `,` and white space), outside quotes and comments. Aliases are
    /// refused before parsing because a parsed alias repeats its target wherever it is used, so a
    /// few lines of nested aliases stand for billions of values (and Yams hashes mapping keys
    /// whole). A plain value that starts with `&` or `*` has to be quoted anyway.
    static func aliasLine(in text: Substring) -> Int? {
        let characters = Array(text)
        var line = 1
        var quote: Character?
        var inComment = false
        // The last character on this line outside quotes that is not white space.
        var lastSignificant: Character?
        var index = 0
        while index < characters.count {
            let character = characters[index]
            let previous: Character = index > 0 ? characters[index - 1] : "\n"
            index += 1
            if character == "\n" {
                line += 1
                inComment = false
                if quote == nil { lastSignificant = nil }
                continue
            }
            if inComment { continue }
            if let open = quote {
                if character == "\\", open == "\"", index < characters.count {
                    if characters[index] == "\n" { line += 1 }
                    index += 1
                } else if character == open {
                    quote = nil
                    lastSignificant = character
                }
                continue
            }
            if character.isWhitespace { continue }
            let startsNode = lastSignificant.map { ":-?[{,".contains($0) } ?? true
            let separated = previous.isWhitespace || "[{,".contains(previous)
            switch character {
            case "#" where separated:
                inComment = true
            case "\"" where startsNode, "'" where startsNode:
                quote = character
            case "&" where startsNode && separated, "*" where startsNode && separated:
                if index < characters.count, !characters[index].isWhitespace, !",[]{}".contains(characters[index]) { return line }
                lastSignificant = character
            default:
                lastSignificant = character
            }
        }
        return nil
    }

    private static func line(of error: YamlError) -> Int? {
        switch error {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _):
            return mark.line
        case .duplicatedKeysInMapping(_, let context):
            return context.mark.line
        case .reader(_, let offset?, _, let yaml):
            return yaml.utf8.prefix(offset).count { $0 == 0x0A } + 1
        default:
            return nil
        }
    }

    private static func message(of error: YamlError) -> String {
        switch error {
        case .composer(_, let problem, _, _) where problem == "but found another document":
            return "a second YAML document (a config file holds one)"
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _), .composer(let context, let problem, let mark, _):
            let during = context.map { $0.mark.line == mark.line ? " \($0.text)" : " \($0.text) started on line \($0.mark.line)" } ?? ""
            return "invalid YAML at column \(mark.column): \(problem)\(during)"
        case .duplicatedKeysInMapping(let duplicates, _):
            return "\(duplicates.map { "\"\($0)\"" }.joined(separator: ", ")) is given more than once"
        case .reader(let problem, _, _, _):
            return "invalid YAML: \(problem)"
        default:
            return "invalid YAML: \(error)"
        }
    }

    /// The first line of `bytes` that is not valid UTF-8.
    private static func firstInvalidLine(_ bytes: [UInt8]) -> Int {
        for (number, line) in bytes.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated()
        where String(validating: line, as: UTF8.self) == nil {
            return number + 1
        }
        return 1
    }
}
