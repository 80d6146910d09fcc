import AASAFetchCore
import ArgumentParser
import Foundation

/// Where entries and app IDs come from: `--entitlements`, `--domain`, `--domains`, `--define`, `--app-id`.
struct InputOptions: ParsableArguments {
    @Option(name: .customLong("entitlements"), help: ArgumentHelp("An .entitlements file (XML or binary plist).", valueName: "file"))
    var entitlementsPath: String?

    @Option(name: .customLong("app"), help: ArgumentHelp("A built app (.ipa, .app or Mach-O): entries and app ID come from its signed entitlements.", valueName: "path"))
    var appPath: String?

    @Option(name: .customLong("domain"), help: ArgumentHelp("An entry such as applinks:www.example.com (repeatable).", valueName: "entry"))
    var domains: [String] = []

    @Option(name: .customLong("domains"), help: ArgumentHelp("A file with one entry a line ('#' comments; a bare host means applinks:HOST).", valueName: "file"))
    var domainsFile: String?

    @Option(name: .customLong("define"), help: ArgumentHelp("A value for an Xcode variable such as $(APP_DOMAIN) (repeatable).", valueName: "NAME=VALUE"))
    var definitions: [String] = []

    @Option(name: .customLong("app-id"), help: ArgumentHelp("The app ID to check, TEAMID.bundle.id (repeatable); default: the entitlements' application-identifier.", valueName: "id"))
    var appIDs: [String] = []

    @Option(help: ArgumentHelp("The region whose ccTLDs come second in priority (e.g. CN, GB); default from LC_ALL, LC_MESSAGES or LANG.", valueName: "CC"))
    var region: String?

    func validate() throws {
        if entitlementsPath == nil && appPath == nil && domains.isEmpty && domainsFile == nil {
            throw ValidationError("give --entitlements FILE, --app PATH, --domain ENTRY or --domains FILE")
        }
        if entitlementsPath != nil && appPath != nil {
            throw ValidationError("give either --entitlements FILE or --app PATH, not both")
        }
        for definition in definitions where !definition.contains("=") {
            throw ValidationError("--define takes NAME=VALUE, not '\(definition)'")
        }
        if let region, !DomainPrioritizer.isKnownRegion(region) {
            throw ValidationError("'\(region)' is not an ISO 3166-1 region code with a ccTLD")
        }
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
    }

    /// ``load()`` for a command: an input that cannot be read is reported on standard error with its
    /// code, and the command exits 2.
    func loadOrExit(console: Console) throws -> Loaded {
        do {
            return try load()
        } catch let failure as CommandFailure {
            console.err("aasa-fetch: \(failure.code): \(failure.message)")
            throw ExitStatus.cannotRun
        }
    }

    /// Reads the entitlements and lists, parses every entry and settles the app IDs.
    func load() throws -> Loaded {
        var strings: [String?] = []
        var findings: [Finding] = []
        var entitlements: EntitlementsFile?
        if let entitlementsPath {
            do {
                let file = try EntitlementsFile.read(path: entitlementsPath)
                entitlements = file
                strings += file.associatedDomains
                if file.associatedDomains.isEmpty {
                    findings.append(.warning("entitlements-empty", "\(entitlementsPath) lists no associated domains"))
                }
            } catch {
                throw CommandFailure(code: error.code, message: "\(entitlementsPath): \(error.message)")
            }
        }
        var appDefinitions: [String: String] = [:]
        if let appPath {
            let app = try AppEntitlementsLoader.load(appPath)
            entitlements = app.file
            strings += app.file.associatedDomains
            findings += app.findings
            appDefinitions = app.definitions
        }
        strings += domains.map { Optional($0) }
        if let domainsFile {
            let text: String
            do {
                text = try String(contentsOfFile: domainsFile, encoding: .utf8)
            } catch {
                throw CommandFailure(code: "domains-unreadable", message: "cannot read \(domainsFile): \(error.localizedDescription)")
            }
            for line in text.split(whereSeparator: \.isNewline) {
                let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                let trimmed = content.trimmingCharacters(in: .whitespaces)
                guard !trimmed.isEmpty else { continue }
                strings.append(trimmed.contains(":") ? trimmed : "applinks:\(trimmed)")
            }
        }
        let parser = EntryParser(definitions: definitionTable)
        let entries = parser.parse(strings)

        var appIDs: [String] = []
        var source = AppIDSource.none
        if !self.appIDs.isEmpty {
            appIDs = self.appIDs
            source = .option
        } else if let identifier = entitlements?.applicationIdentifier {
            if let expanded = AppID.expand(identifier, definitions: appDefinitions.merging(definitionTable) { _, given in given }) {
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
        for appID in appIDs where !AppID.isWellFormed(appID) {
            findings.append(.warning(
                "app-id-malformed",
                "'\(appID)' is not shaped like an app ID (10-character prefix, a dot, a bundle ID)",
                fix: "use the app ID from the developer portal, e.g. ABCDE12345.com.example.app"
            ))
        }
        return Loaded(entries: entries, appIDs: appIDs, appIDSource: source, findings: findings)
    }
}
