import AASAFetchCore
import ArgumentParser
import Foundation

/// The input grammar of every command that reads inputs (`fetch`, `plan`, `match`, `diagnose`):
/// `--entitlements`, `--app`, `--domain`, `--domains`, `--app-id`, `--define`, `--region`, `-q`.
/// Each option means the same everywhere; ``load(adding:)`` is the one place inputs are read.
struct InputOptions: ParsableArguments {
    @Option(name: .customLong("entitlements"), help: ArgumentHelp("An .entitlements file (XML or binary plist): its associated domains, and its application-identifier as the default app ID.", valueName: "file"), completion: .file(extensions: ["entitlements", "plist"]))
    var entitlementsPath: String?

    @Option(name: .customLong("app"), help: ArgumentHelp("A built app (.ipa, .app or Mach-O): the associated domains and app ID of its signed entitlements.", valueName: "path"), completion: .file())
    var appPath: String?

    @Option(name: .customLong("domain"), help: ArgumentHelp("An entry such as applinks:www.example.com (repeatable); a bare host means applinks:HOST.", valueName: "entry"))
    var domains: [String] = []

    @Option(name: .customLong("domains"), help: ArgumentHelp("A file with one entry a line ('#' comments; a bare host means applinks:HOST).", valueName: "file"), completion: .file())
    var domainsFile: String?

    @Option(name: .customLong("app-id"), help: ArgumentHelp("The app ID to check, TEAMID.bundle.id (repeatable); default: the application-identifier of --entitlements or --app.", valueName: "id"))
    var appIDs: [String] = []

    @Option(name: .customLong("define"), help: ArgumentHelp("A value for an Xcode variable such as $(APP_DOMAIN) (repeatable).", valueName: "NAME=VALUE"))
    var definitions: [String] = []

    @Option(help: ArgumentHelp("The region whose ccTLDs are fetched second, after .com/.net/.org (e.g. CN, GB); default from LC_ALL, LC_MESSAGES or LANG.", valueName: "CC"))
    var region: String?

    @Flag(name: .shortAndLong, help: "No progress and no notes on standard error.")
    var quiet = false

    func validate() throws {
        if entitlementsPath != nil && appPath != nil {
            throw ValidationError("give either --entitlements FILE or --app PATH, not both")
        }
        for definition in definitions where !definition.contains("=") {
            throw ValidationError("--define takes NAME=VALUE, not '\(definition)'")
        }
        // A store keeps an app ID as text that ends at a NUL: one with a control character would
        // be judged as given and recorded cut short.
        if let appID = appIDs.first(where: AppID.hasControlCharacter) {
            throw ValidationError("--app-id \(appID.debugDescription) holds a control character")
        }
        if let region, !DomainPrioritizer.isKnownRegion(region) {
            throw ValidationError("'\(region)' is not an ISO 3166-1 region code with a ccTLD")
        }
    }

    /// Whether any entry source was given.
    var hasEntries: Bool { entitlementsPath != nil || appPath != nil || !domains.isEmpty || domainsFile != nil }

    /// Throws the usage error (exit 64) of `command` when it was given no entries (`alternatives`
    /// names the command's other ways to get some, e.g. "a HOST"). Commands call it in `run`, not
    /// in `validate`: the parser's own errors (an unknown option, a stray argument) come first, and
    /// they are often why no input was seen.
    func requireEntries(command: String, alternatives: String? = nil) throws(CommandFailure) {
        guard !hasEntries else { return }
        throw CommandFailure(
            code: "usage",
            message: "give \(alternatives.map { "\($0), " } ?? "")--entitlements FILE, --app PATH, --domain ENTRY or --domains FILE (aasa-fetch \(command) --help lists every option)",
            status: ExitStatus.usage)
    }

    /// The parsed `--define` values.
    var definitionTable: [String: String] {
        var table: [String: String] = [:]
        for definition in definitions {
            guard let equals = definition.firstIndex(of: "=") else { continue }
            table[String(definition[..<equals])] = String(definition[definition.index(after: equals)...])
        }
        return table
    }

    /// The region used for priorities.
    var effectiveRegion: String? {
        region?.uppercased() ?? DomainPrioritizer.region(fromEnvironment: ProcessInfo.processInfo.environment)
    }

    /// Everything a run needs from its inputs.
    struct Loaded {
        var entries: [AssociatedDomainEntry]
        var appIDs: [String]
        var appIDSource: AppIDSource
        var findings: [Finding]
        /// Which file each entry came from.
        var sources = EntrySources()

        /// Everything but the entries.
        var settled: Settled { Settled(appIDs: appIDs, appIDSource: appIDSource, findings: findings, sources: sources) }
    }

    /// What a run needs from its inputs besides the entries (which a spooled run keeps on disk).
    struct Settled {
        var appIDs: [String]
        var appIDSource: AppIDSource
        var findings: [Finding]
        /// Which file each entry came from.
        var sources = EntrySources()
    }

    /// ``load(adding:)`` for a command: an input that cannot be read ends the command with its
    /// ``CommandFailure`` (reported by the entry point, exit 2).
    func loadOrExit(console: Console, adding extra: [String] = []) throws -> Loaded {
        try load(adding: extra)
    }

    /// Reads the entitlements and lists, parses every entry and settles the app IDs. `extra`
    /// entries (a command's own arguments, such as `diagnose HOST`) come after `--domain`'s.
    func load(adding extra: [String] = []) throws(CommandFailure) -> Loaded {
        let head = try readHead(adding: extra)
        var strings = head.strings
        var lines = head.lines
        if let domainsFile {
            do throws(LineReaderError) {
                var reader = try LineReader(path: domainsFile)
                defer { reader.close() }
                while let line = try reader.next() {
                    if let entry = Self.entryString(fromLine: line) {
                        strings.append(entry)
                        lines.append(reader.line)
                    }
                }
            } catch {
                throw Self.domainsFailure(error, path: domainsFile)
            }
        }
        var entries = EntryParser(definitions: definitionTable).parse(strings)
        for index in entries.indices where index < lines.count { entries[index].line = lines[index] }
        let settled = settle(head)
        return Loaded(entries: entries, appIDs: settled.appIDs, appIDSource: settled.appIDSource, findings: settled.findings,
                      sources: settled.sources)
    }

    /// ``load()`` into a run spool: the same entries in the same order, but the `--domains` file is
    /// read line by line and every entry goes to `spool` as it is parsed, so nothing grows with the
    /// length of the list. A file that cannot be read (or is not UTF-8) is `domains-unreadable`.
    func loadSpooled(into spool: RunSpool) throws(CommandFailure) -> Settled {
        let head = try readHead(adding: [])
        do {
            try spool.append(definitions: definitionTable, lines: { add in
                for (index, string) in head.strings.enumerated() { try add(string, index < head.lines.count ? head.lines[index] : nil) }
                guard let domainsFile else { return }
                var reader = try LineReader(path: domainsFile)
                defer { reader.close() }
                while let line = try reader.next() {
                    if let entry = Self.entryString(fromLine: line) { try add(entry, reader.line) }
                }
            })
        } catch let error as LineReaderError {
            throw Self.domainsFailure(error, path: domainsFile ?? "")
        } catch let error as SpoolError {
            throw CommandFailure(code: error.code, message: error.message)
        } catch {
            throw CommandFailure(code: "spool-error", message: "\(error)")
        }
        return settle(head)
    }

    /// The failure for a `--domains` file that cannot be read: `domains-line-too-long` for a line
    /// over ``LineReader/defaultMaxLineBytes`` (a file without line ends), else `domains-unreadable`.
    static func domainsFailure(_ error: LineReaderError, path: String) -> CommandFailure {
        if case .lineTooLong = error {
            return CommandFailure(code: "domains-line-too-long", message: "\(path): \(error); a list holds one entry a line")
        }
        return CommandFailure(code: "domains-unreadable", message: "cannot read \(path): \(error)")
    }

    /// The entry a line of a `--domains` file holds: `#` starts a comment, blank lines hold none,
    /// a bare host means `applinks:HOST`.
    static func entryString(fromLine line: some StringProtocol) -> String? {
        let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let trimmed = EntryText.trimmed(content)
        guard !trimmed.isEmpty else { return nil }
        return bareHost(trimmed) ? "applinks:\(trimmed)" : trimmed
    }

    /// Whether a `--domain` value or a list line is a bare host (no `service:` prefix), which
    /// means `applinks:HOST`. A host with a port (`www.example.com:8080`) is bare too, so the
    /// entry reports the port; a URL (`https://…`) is not, so it reports the scheme.
    static func bareHost(_ text: some StringProtocol) -> Bool {
        let trimmed = EntryText.trimmed(text)
        guard !trimmed.isEmpty else { return false }
        if EntryText.hasPrefix(trimmed, asciiIgnoringCase: "http:") || EntryText.hasPrefix(trimmed, asciiIgnoringCase: "https:") { return false }
        return EntryParser.serviceColon(in: trimmed) == nil && !trimmed.hasPrefix(":")
    }

    /// The entry a `--domain` value names, and the note that says how a bare host was read.
    static func entry(fromDomainOption value: String) -> (entry: String, note: Finding?) {
        guard bareHost(value) else { return (value, nil) }
        let host = value.trimmingCharacters(in: .whitespaces)
        return ("applinks:\(host)", .info(
            "entry-bare-host", "--domain \(host) has no service prefix: read as applinks:\(host)",
            fix: "write --domain applinks:\(host) (or webcredentials:, appclips:, activitycontinuation:)"))
    }

    /// The entries given before the `--domains` file (entitlements or app, then `--domain`) and
    /// what the app IDs are settled from.
    private struct Head {
        var strings: [String?]
        var entitlements: EntitlementsFile?
        var appDefinitions: [String: String]
        var findings: [Finding]
        /// The line of each of the first strings in its file (an XML entitlements file's), when known.
        var lines: [Int?] = []
        var sources = EntrySources()
    }

    private func readHead(adding extra: [String]) throws(CommandFailure) -> Head {
        var head = Head(strings: [], entitlements: nil, appDefinitions: [:], findings: [])
        if let entitlementsPath {
            do {
                let file = try EntitlementsFile.read(path: entitlementsPath)
                head.entitlements = file
                head.strings += file.associatedDomains
                head.lines = (file.associatedDomainLines ?? []).map { Optional($0) }
                head.sources.entitlementsPath = entitlementsPath
                head.sources.entitlementsCount = file.associatedDomains.count
                if file.associatedDomains.isEmpty {
                    head.findings.append(.warning("entitlements-empty", "\(entitlementsPath) lists no associated domains"))
                }
            } catch {
                throw CommandFailure(code: error.code, message: "\(entitlementsPath): \(error.message)")
            }
        }
        if let appPath {
            let app = try AppEntitlementsLoader.load(appPath)
            head.entitlements = app.file
            head.strings += app.file.associatedDomains
            head.sources.entitlementsPath = appPath
            head.sources.entitlementsCount = app.file.associatedDomains.count
            head.findings += app.findings
            head.appDefinitions = app.definitions
        }
        for value in domains {
            let (entry, note) = Self.entry(fromDomainOption: value)
            head.strings.append(entry)
            if let note { head.findings.append(note) }
        }
        head.strings += extra.map { Optional($0) }
        head.sources.listPath = domainsFile
        head.sources.listStart = head.strings.count
        return head
    }

    /// Settles the app IDs: `--app-id`, else the entitlements' `application-identifier`.
    private func settle(_ head: Head) -> Settled {
        var findings = head.findings
        var appIDs: [String] = []
        var source = AppIDSource.none
        if !self.appIDs.isEmpty {
            appIDs = self.appIDs
            source = .option
        } else if let identifier = head.entitlements?.applicationIdentifier {
            if let expanded = AppID.expand(identifier, definitions: head.appDefinitions.merging(definitionTable) { _, given in given }) {
                appIDs = [expanded]
                source = appPath == nil ? .entitlements : .app
            } else {
                findings.append(.warning(
                    "app-id-unresolved",
                    "application-identifier '\(identifier)' holds Xcode variables, so association cannot be judged",
                    fix: "pass --app-id TEAMID.bundle.id, or --define the variables"
                ))
            }
        }
        if let appID = appIDs.first(where: AppID.hasControlCharacter) {
            findings.append(.warning(
                "app-id-malformed",
                "application-identifier \(appID.debugDescription) holds a control character, so association cannot be judged",
                fix: "pass --app-id TEAMID.bundle.id"
            ))
            appIDs = []
            source = .none
        }
        for appID in appIDs where !AppID.isWellFormed(appID) {
            findings.append(.warning(
                "app-id-malformed",
                "'\(appID)' is not shaped like an app ID (10-character prefix, a dot, a bundle ID)",
                fix: "use the app ID from the developer portal, e.g. ABCDE12345.com.example.app"
            ))
        }
        return Settled(appIDs: appIDs, appIDSource: source, findings: findings, sources: head.sources)
    }
}
