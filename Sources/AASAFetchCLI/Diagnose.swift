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
            commandName: "diagnose",
            abstract: "Say why a domain does (not) associate: walk the OS's steps (entry, DNS, TCP, TLS, HTTP, JSON, structure, app ID, CDN) and stop at the first failure.",
            discussion: HelpText.discussion(
                "Entries are walked in the order fetch starts their downloads. diagnose reads and records nothing in the store.",
                examples: CommandHelp.diagnose, exitCodes: CommandHelp.diagnoseExitCodes)
        )

        @Argument(help: ArgumentHelp("A host (applinks:HOST is checked) or a whole entry such as webcredentials:example.com.", valueName: "host"))
        var host: String?

        @OptionGroup var input: InputOptions
        @OptionGroup var network: NetworkOptions
        @OptionGroup var routing: RouteOptions
        @OptionGroup var output: FormatOptions
        /// `--config FILE`, `--no-config` (read by ``OptionSources`` before parsing).
        @OptionGroup(title: "Config file") var configFile: ConfigFileOptions

        /// The entry `HOST` names: a whole entry when it starts with a known service, else `applinks:HOST`.
        static func entry(forHost host: String) -> String {
            let parts = host.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { return "applinks:\(host)" }
            // `example.com:8443` is a host with a port (which the entry check then names); any
            // other `word:rest` is a whole entry, a service the check may not know included.
            let isPort = !parts[1].isEmpty && parts[1].utf8.allSatisfy { (0x30...0x39).contains($0) }
            return Service(name: String(parts[0])).isKnown || !isPort ? host : "applinks:\(host)"
        }

        /// The entries in the order `fetch` starts their downloads (priority tier, then entry
        /// order; entries with nothing to fetch last), so `--region` means the same as there.
        static func walkOrder(_ entries: [AssociatedDomainEntry], region: String?) -> [AssociatedDomainEntry] {
            let plan = FetchPlan(entries: entries, prioritizer: DomainPrioritizer(region: region))
            var seen = Set<Int>()
            var order: [Int] = []
            for index in plan.fetches.flatMap(\.entryIndexes) + Array(entries.indices) where seen.insert(index).inserted {
                order.append(index)
            }
            return order.map { entries[$0] }
        }

        /// Rewrites the progress line on standard error (a terminal); `nil` clears it.
        private static func progress(_ line: String?, console: Console) {
            console.errControl("\r\u{1B}[K" + (line.map { ProgressLine.fitted($0) } ?? ""))
        }

        func run() async throws {
            if host == nil { try input.requireEntries(command: "diagnose", alternatives: "a HOST") }
            let console = Console.standard
            let loaded = try input.loadOrExit(console: console, adding: host.map { [Self.entry(forHost: $0)] } ?? [])
            if loaded.entries.isEmpty {
                if let file = input.entitlementsPath ?? input.appPath {
                    throw CommandFailure(code: "entitlements-empty", message: "\(file) lists no associated domains")
                }
                throw CommandFailure(code: "no-entries", message: "\(input.domainsFile ?? "the input") holds no entry")
            }
            let entries = Self.walkOrder(loaded.entries, region: input.effectiveRegion)
            let options = try network.fetchOptions()
            let clients = RouteClients(options: options, usesCDN: routing.route != .origin)
            let diagnoser = Diagnoser(transport: clients.origin, cdnTransport: clients.cdn, options: options,
                                      route: routing.route, cdnBase: routing.cdnBase)
            let progress = ProgressLine.enabled(console: console, quiet: input.quiet) && entries.count > 1
            var diagnoses: [Diagnosis] = []
            for (position, entry) in entries.enumerated() {
                if progress { Self.progress("\(position + 1)/\(entries.count) diagnosing \(entry.host ?? "an entry")", console: console) }
                diagnoses.append(await diagnoser.diagnose(entry, appIDs: loaded.appIDs))
            }
            if progress { Self.progress(nil, console: console) }
            await clients.shutdown()

            let report = DiagnosisReport(appIDs: loaded.appIDs, appIDSource: loaded.appIDSource, route: routing.route,
                                         diagnoses: diagnoses, findings: loaded.findings)
            switch output.format {
            case .json:
                try console.json(report)
            case .human:
                DiagnosisRenderer(console: console).render(report)
            case .github, .sarif, .junit:
                var writer = CIWriters.standardOutput(output.format, console: console)
                DiagnoseCI.render(report, entries: entries, sources: loaded.sources, to: &writer)
            }
            // Steps this process could not take (libcurl refused the request: a --cacert it cannot
            // load; no descriptor or thread left) are the run's failure, not the host's: exit 2, as
            // in fetch.
            var runFailures: [String: Int] = [:]
            for diagnosis in diagnoses {
                if HostFetchResult.shortageCodes.contains(diagnosis.code) { runFailures[diagnosis.code, default: 0] += 1 }
            }
            if let failure = CommandFailure.shortage(runFailures) { throw failure }
            if !report.succeeded { throw ExitStatus.failure }
        }
    }
}

/// Human output of `diagnose`: every step with a mark, its summary, what it saw and the fix; with
/// more than one entry, a closing tally in the words of `fetch`.
struct DiagnosisRenderer {
    let console: Console
    private let renderer: HumanRenderer
    private var emit: (String) -> Void { renderer.emit }

    init(console: Console, emit: ((String) -> Void)? = nil) {
        self.console = console
        renderer = HumanRenderer(console: console, emit: emit)
    }

    /// The width of the step column: the longest step name and two spaces.
    static let stepWidth = ["entitlement", "host", "dns", "tcp", "tls", "http", "json", "structure", "association", "cdn", "user-agent"]
        .map(\.count).max().map { $0 + 2 } ?? 13

    func render(_ report: DiagnosisReport) {
        renderer.renderFindings(report.findings, indent: "")
        for (index, diagnosis) in report.diagnoses.enumerated() {
            if index > 0 || !report.findings.isEmpty { emit("") }
            let apps = diagnosis.appIDs.isEmpty ? "no app ID" : diagnosis.appIDs.joined(separator: ", ")
            let mode = diagnosis.developerMode ? ", developer-mode rules" : ""
            emit(console.paint("\(diagnosis.entry ?? "(not a string)")", .bold) + "  (app \(apps), route \(diagnosis.route.rawValue)\(mode))")
            // A fix is said once per entry (the user-agent check repeats the http step's).
            var fixes: Set<String> = []
            for step in diagnosis.steps {
                let mark: String
                switch step.status {
                case .passed: mark = console.paint("✔", .green)
                case .warned: mark = console.paint("!", .yellow)
                case .failed: mark = console.paint("✘", .red)
                case .skipped: mark = console.paint("-", .dim)
                }
                let code = step.code == "ok" ? "" : " [\(step.code)]"
                emit("  \(mark) \(renderer.pad(step.step, Self.stepWidth))\(step.summary)\(code)")
                for line in step.details {
                    emit("      \(console.paint(line, .dim))")
                }
                if let fix = step.fix, step.status == .failed || step.status == .warned, fixes.insert(fix).inserted {
                    emit(renderer.fixLine(fix, under: "    "))
                }
            }
            let host = diagnosis.host ?? diagnosis.entry ?? ""
            switch (diagnosis.failedStep, diagnosis.associated) {
            case (let step?, _):
                emit(console.paint("✘", .red) + " \(host) does not associate: step \(step) failed (\(diagnosis.code))")
            case (nil, nil):
                emit(console.paint("?", .yellow) + " \(host): every step passed, but without an app ID association is not judged")
            default:
                emit(console.paint("✔", .green) + " \(host) associates")
            }
        }
        if report.diagnoses.count > 1 {
            emit("")
            emit(Self.tally(report, console: console))
        }
    }

    /// `6 of 8 entries associate, 2 fail (http-redirect, app-not-listed), 3 warnings`: the
    /// failures' codes in walk order, each once; warnings are warned steps.
    static func tally(_ report: DiagnosisReport, console: Console) -> String {
        let diagnoses = report.diagnoses
        let failed = diagnoses.filter { $0.failedStep != nil }
        var codes: [String] = []
        for diagnosis in failed where !codes.contains(diagnosis.code) { codes.append(diagnosis.code) }
        return RunRenderer.tally(
            associated: diagnoses.filter { $0.failedStep == nil && $0.associated == true }.count,
            entries: diagnoses.count,
            failed: failed.count,
            failureCodes: codes,
            unjudged: diagnoses.filter { $0.failedStep == nil && $0.associated == nil }.count,
            warnings: diagnoses.reduce(0) { $0 + $1.steps.filter { $0.status == .warned }.count },
            console: console)
    }
}
