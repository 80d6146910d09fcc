import AASAFetchCore
import ArgumentParser
import Foundation

extension AASAFetchCommand {
    /// `aasa-fetch entitlements PATH`: what a built app's code signature and provisioning profile
    /// say (app ID, team, associated domains, profile name and expiry), how they agree, and with
    /// `--compare FILE` how they differ from the project's `.entitlements` file.
    ///
    /// Exit status: 0 no error finding (and with `--compare`, no difference), 1 an error finding or
    /// a difference, 2 the app cannot be read, 64 usage.
    /// JSON shape: docs/json.md, docs/schema/entitlements.schema.json.
    struct Entitlements: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "entitlements",
            abstract: "Print the entitlements a built app ships (.ipa, .app, Mach-O, provisioning profile) or a plain .entitlements file, and compare them.",
            discussion: HelpText.discussion(
                "--compare FILE: what differs from another .entitlements file (the project's).",
                examples: CommandHelp.entitlements, exitCodes: CommandHelp.entitlementsExitCodes)
        )

        @Argument(help: ArgumentHelp("An .ipa, an .app folder, a Mach-O executable, a provisioning profile or an .entitlements file (XML or binary plist).", valueName: "path"), completion: .file())
        var path: String
        @Option(help: ArgumentHelp("The project's .entitlements file to compare with.", valueName: "file"), completion: .file(extensions: ["entitlements", "plist"]))
        var compare: String?
        @Option(name: .customLong("define"), help: ArgumentHelp("A value for an Xcode variable of the compared file (repeatable).", valueName: "NAME=VALUE"))
        var definitions: [String] = []
        @Flag(help: "Print JSON.") var json = false
        /// `--config FILE`, `--no-config` (read by ``OptionSources`` before parsing).
        @OptionGroup(title: "Config file") var configFile: ConfigFileOptions

        func validate() throws {
            for definition in definitions where !definition.contains("=") {
                throw ValidationError("--define takes NAME=VALUE, not '\(definition)'")
            }
        }

        func run() async throws {
            let console = Console.standard
            let inspection: AppInspection
            do {
                inspection = try AppInspector.inspect(path: path)
            } catch {
                throw CommandFailure(code: error.code, message: error.message.contains(path) ? error.message : "\(path): \(error.message)")
            }
            var findings = inspection.findings
            var project: EntitlementsReport.Project?
            var differences = 0
            if let compare {
                let file: EntitlementsFile
                do {
                    // A project file without the key lists no domain: what the app signs is then
                    // missing from it, the difference this comparison is for.
                    file = try EntitlementsFile.read(path: compare, requireDomains: false)
                } catch {
                    throw CommandFailure(code: error.code, message: "\(compare): \(error.message)")
                }
                var table: [String: String] = [:]
                for definition in definitions {
                    guard let equals = definition.firstIndex(of: "=") else { continue }
                    table[String(definition[..<equals])] = String(definition[definition.index(after: equals)...])
                }
                let compared = EntitlementsComparison.compare(inspection, project: file, projectPath: compare, definitions: table)
                differences = compared.filter { $0.severity != .info }.count
                findings += compared
                project = .init(path: compare, applicationIdentifier: file.applicationIdentifier, associatedDomains: file.associatedDomains)
            }
            let report = EntitlementsReport(inspection: inspection, project: project, findings: findings, differences: differences)
            if json {
                try console.json(report)
            } else {
                render(report, unreadableProfile: inspection.profile == nil ? inspection.profilePath : nil, console: console)
            }
            if !report.ok { throw ExitStatus.failure }
        }

        /// `ok`, or `1 error, 2 differences with FILE`.
        static func closingLine(_ report: EntitlementsReport) -> String {
            if report.ok { return "ok" }
            let errors = Plural.count(report.findings.filter { $0.severity == .error }.count, "error")
            guard let project = report.project else { return errors }
            return "\(errors), \(Plural.count(report.differences, "difference")) with \(project.path)"
        }

        /// The human report; `unreadableProfile`: the path of a profile that is there but could
        /// not be read (its error is among the findings).
        private func render(_ report: EntitlementsReport, unreadableProfile: String?, console: Console) {
            console.out("\(report.path) (\(report.kind.rawValue))\(report.executable.map { " · \($0)" } ?? "")")
            console.out("app ID \(report.appID ?? "unknown") · team \(report.teamID ?? "unknown")\(report.bundleIdentifier.map { " · bundle \($0)" } ?? "")")
            func list(_ domains: [String?]?) {
                guard let domains else {
                    console.out("    (no com.apple.developer.associated-domains)")
                    return
                }
                if domains.isEmpty { console.out("    (empty list)") }
                for domain in domains { console.out("    \(domain ?? "(not a string)")") }
            }
            if let signature = report.signature, signature.source == .plist {
                console.out("associated domains:")
                list(signature.associatedDomains)
            } else if let signature = report.signature {
                console.out("signature (\(signature.source.rawValue) blob; blobs \(signature.blobs.map(\.rawValue).joined(separator: ", ")); \(signature.architectures.joined(separator: ", "))):")
                list(signature.associatedDomains)
            } else {
                console.out("signature: not read")
            }
            if let profile = report.profile {
                let expiry = profile.expirationDate.map { ISO8601DateFormatter().string(from: $0) } ?? "unknown"
                console.out("profile \"\(profile.name ?? "?")\" (expires \(expiry)\(profile.expired ? ", EXPIRED" : ""); team \(profile.teamIdentifiers.joined(separator: ", "))):")
                if profile.allowsAnyDomain {
                    console.out("    * (any domain)")
                } else {
                    list(profile.associatedDomains)
                }
            } else if let unreadableProfile {
                console.out("profile: unreadable (\(unreadableProfile))")
            } else if report.kind != .entitlements {
                console.out("profile: none")
            }
            if let project = report.project {
                console.out("project \(project.path):")
                list(project.associatedDomains)
            }
            HumanRenderer(console: console).renderFindings(report.findings, indent: "  ")
            console.out(Self.closingLine(report))
        }
    }
}

/// What `entitlements --json` prints. Every key is present; `null` where it does not apply.
struct EntitlementsReport: Encodable {
    struct Signature: Encodable {
        var source: SignedEntitlements.Source
        var blobs: [SignedEntitlements.Source]
        var architectures: [String]
        var applicationIdentifier: String?
        var teamIdentifier: String?
        var associatedDomains: [String?]?
        var entitlements: [String: PlistValue]
    }

    struct Profile: Encodable {
        var path: String?
        var name: String?
        var uuid: String?
        var teamIdentifiers: [String]
        var teamName: String?
        var applicationIdentifierPrefixes: [String]
        var applicationIdentifier: String?
        var expirationDate: Date?
        var expired: Bool
        var allowsAnyDomain: Bool
        var associatedDomains: [String?]?
        var entitlements: [String: PlistValue]
    }

    struct Project: Encodable {
        var path: String
        var applicationIdentifier: String?
        var associatedDomains: [String?]
    }

    var schemaVersion = JSONSchemaVersion.current
    var path: String
    var kind: AppInspection.Kind
    var bundle: String?
    var executable: String?
    var bundleIdentifier: String?
    var appID: String?
    var teamID: String?
    var signature: Signature?
    var profile: Profile?
    var project: Project?
    var findings: [Finding]
    var differences: Int
    /// No error finding and no difference with the compared file.
    var ok: Bool

    init(inspection: AppInspection, project: Project?, findings: [Finding], differences: Int) {
        path = inspection.path
        kind = inspection.kind
        bundle = inspection.bundle
        executable = inspection.executable
        bundleIdentifier = inspection.bundleIdentifier
        appID = inspection.appID
        teamID = inspection.teamID
        signature = inspection.signature.map {
            Signature(source: $0.source, blobs: $0.blobs, architectures: $0.architectures, applicationIdentifier: $0.applicationIdentifier,
                      teamIdentifier: $0.teamIdentifier, associatedDomains: $0.associatedDomains, entitlements: $0.entitlements)
        }
        profile = inspection.profile.map { profile in
            let domains: [String?]?
            switch profile.associatedDomains {
            case nil: domains = nil
            case .any: domains = ["*"]
            case .list(let list): domains = list
            }
            return Profile(path: inspection.profilePath, name: profile.name, uuid: profile.uuid, teamIdentifiers: profile.teamIdentifiers,
                           teamName: profile.teamName, applicationIdentifierPrefixes: profile.applicationIdentifierPrefixes,
                           applicationIdentifier: profile.applicationIdentifier, expirationDate: profile.expirationDate,
                           expired: profile.isExpired(at: Date()), allowsAnyDomain: profile.associatedDomains == .any,
                           associatedDomains: domains, entitlements: profile.entitlements)
        }
        self.project = project
        self.findings = findings
        self.differences = differences
        ok = !findings.containsError && differences == 0
    }
}
