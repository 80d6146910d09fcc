import AASAFetchCore
import ArgumentParser
import CurlTransport
import Foundation

extension AASAFetchCommand {
    /// `aasa-fetch diagnose`: walks the OS's steps for one host or every entry of an entitlements
    /// file and stops at the first step that fails, saying what to change.
    ///
    /// Exit status: 0 every entry associates (or could not be judged for want of an app ID),
    /// 1 a step failed, 2 the input could not be read, 64 usage error.
    /// JSON shape: ``DiagnosisReport`` (docs/json.md, docs/schema/diagnose.schema.json).
    struct Diagnose: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Say why a domain does (not) associate: walk the OS's steps (entry, DNS, TCP, TLS, HTTP, JSON, structure, app ID, CDN) and stop at the first failure."
        )

        @Argument(help: ArgumentHelp("A host (applinks:HOST is checked) or a whole entry such as webcredentials:example.com.", valueName: "host"))
        var host: String?

        @Option(name: .customLong("entitlements"), help: ArgumentHelp("Diagnose every entry of an .entitlements file (XML or binary plist).", valueName: "file"))
        var entitlementsPath: String?

        @Option(name: .customLong("domain"), help: ArgumentHelp("An entry such as applinks:www.example.com?mode=developer (repeatable).", valueName: "entry"))
        var domains: [String] = []

        @Option(name: .customLong("app-id"), help: ArgumentHelp("The app ID to check, TEAMID.bundle.id (repeatable); default: the entitlements' application-identifier.", valueName: "id"))
        var appIDs: [String] = []

        @Option(name: .customLong("define"), help: ArgumentHelp("A value for an Xcode variable such as $(APP_DOMAIN) (repeatable).", valueName: "NAME=VALUE"))
        var definitions: [String] = []

        @OptionGroup var network: NetworkOptions
        @OptionGroup var routing: RouteOptions
        @Flag(help: "Print JSON.") var json = false

        func validate() throws {
            let sources = (host == nil ? 0 : 1) + (entitlementsPath == nil ? 0 : 1) + (domains.isEmpty ? 0 : 1)
            guard sources == 1 else {
                throw ValidationError(sources == 0
                    ? "give a HOST, --entitlements FILE or --domain ENTRY"
                    : "give only one of HOST, --entitlements FILE and --domain ENTRY")
            }
            for definition in definitions where !definition.contains("=") {
                throw ValidationError("--define takes NAME=VALUE, not '\(definition)'")
            }
        }

        func run() async throws {
            let console = Console.standard
            let loaded = try load()
            let options = network.fetchOptions
            let client = CurlClient(
                maxConnections: options.concurrency,
                // One connection to the CDN, which HTTP/2 multiplexes (without the limit libcurl
                // 7.88 opens one per transfer started before the first connection is up).
                maxConnectionsPerHost: routing.route == .origin ? 0 : 1)
            let diagnoser = Diagnoser(transport: client, options: options, route: routing.route, cdnBase: routing.cdnBase)
            var diagnoses: [Diagnosis] = []
            for entry in loaded.entries {
                diagnoses.append(await diagnoser.diagnose(entry, appIDs: loaded.appIDs))
            }
            await client.shutdown()

            let report = DiagnosisReport(appIDs: loaded.appIDs, appIDSource: loaded.source, route: routing.route,
                                         diagnoses: diagnoses, findings: loaded.findings)
            if json {
                try console.json(report)
            } else {
                DiagnosisRenderer(console: console).render(report)
            }
            if !report.succeeded { throw ExitStatus.failure }
        }

        private func load() throws -> (entries: [AssociatedDomainEntry], appIDs: [String], source: AppIDSource, findings: [Finding]) {
            var table: [String: String] = [:]
            for definition in definitions {
                guard let equals = definition.firstIndex(of: "=") else { continue }
                table[String(definition[..<equals])] = String(definition[definition.index(after: equals)...])
            }
            var strings: [String?] = domains.map { Optional($0) }
            var findings: [Finding] = []
            var identifier: String?
            if let host {
                let prefix = host.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
                strings.append(host.contains(":") && Service(name: prefix).isKnown ? host : "applinks:\(host)")
            }
            if let entitlementsPath {
                do {
                    let file = try EntitlementsFile.read(path: entitlementsPath)
                    strings += file.associatedDomains
                    identifier = file.applicationIdentifier
                    if file.associatedDomains.isEmpty {
                        throw CommandFailure(code: "entitlements-empty", message: "\(entitlementsPath) lists no associated domains")
                    }
                } catch let error as EntitlementsError {
                    throw CommandFailure(code: error.code, message: "\(entitlementsPath): \(error.message)")
                }
            }
            var ids = appIDs
            var source = ids.isEmpty ? AppIDSource.none : .option
            if ids.isEmpty, let identifier {
                if let expanded = AppID.expand(identifier, definitions: table) {
                    ids = [expanded]
                    source = .entitlements
                } else {
                    findings.append(.warning("app-id-unresolved", "application-identifier '\(identifier)' holds Xcode variables",
                                             fix: "pass --app-id TEAMID.bundle.id, or --define the variables"))
                }
            }
            for appID in ids where !AppID.isWellFormed(appID) {
                findings.append(.warning("app-id-malformed", "'\(appID)' is not shaped like an app ID (10-character prefix, a dot, a bundle ID)",
                                         fix: "use the app ID from the developer portal, e.g. ABCDE12345.com.example.app"))
            }
            return (EntryParser(definitions: table).parse(strings), ids, source, findings)
        }
    }
}

/// Human output of `diagnose`: every step with a mark, its summary, what it saw and the fix.
struct DiagnosisRenderer {
    let console: Console

    func render(_ report: DiagnosisReport) {
        for finding in report.findings {
            console.out("\(console.paint("warning", .yellow)) \(finding.code): \(finding.message)")
        }
        for (index, diagnosis) in report.diagnoses.enumerated() {
            if index > 0 { console.out("") }
            let apps = diagnosis.appIDs.isEmpty ? "no app ID" : diagnosis.appIDs.joined(separator: ", ")
            let mode = diagnosis.developerMode ? ", developer-mode rules" : ""
            console.out(console.paint("\(diagnosis.entry ?? "(not a string)")", .bold) + "  (app \(apps), route \(diagnosis.route.rawValue)\(mode))")
            for step in diagnosis.steps {
                let mark: String
                switch step.status {
                case .passed: mark = console.paint("✔", .green)
                case .warned: mark = console.paint("!", .yellow)
                case .failed: mark = console.paint("✘", .red)
                case .skipped: mark = console.paint("-", .dim)
                }
                let code = step.code == "ok" ? "" : " [\(step.code)]"
                console.out("  \(mark) \(step.step.padding(toLength: 12, withPad: " ", startingAt: 0)) \(step.summary)\(code)")
                for line in step.details {
                    console.out("      \(console.paint(line, .dim))")
                }
                if let fix = step.fix, step.status == .failed || step.status == .warned {
                    console.out("      \(console.paint("fix:", .bold)) \(fix)")
                }
            }
            let host = diagnosis.host ?? diagnosis.entry ?? ""
            switch (diagnosis.failedStep, diagnosis.associated) {
            case (let step?, _):
                console.out(console.paint("✘", .red) + " \(host) does not associate: step \(step) failed (\(diagnosis.code))")
            case (nil, nil):
                console.out(console.paint("?", .yellow) + " \(host): every step passed, but without an app ID association is not judged")
            default:
                console.out(console.paint("✔", .green) + " \(host) associates")
            }
        }
    }
}
