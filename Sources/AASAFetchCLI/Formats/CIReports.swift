import AASAFetchCore

/// `fetch` in a CI format, streamed like the human and JSON output: one group per host (its
/// entries, as ``DomainReport/verdicts`` left them) as each host is judged, then the entries that
/// could not be fetched, then the tally. Memory holds one host at a time and the few names of
/// folded warnings.
///
/// Cases: one per entry. A failing entry's first problem is its failure: its own error finding
/// (an invalid entry, `app-not-listed`) or the host's failure (`http-redirect`, … with the host's
/// reason and fix). The host's other findings (`legacy-root-path`, `content-type`, …) go with
/// its first entry; `custom-root` is said once at the end, as the human output does. Every
/// problem points at the entry's file and line (an XML entitlements file's `<string>`, a
/// `--domains` line; no line for a binary plist or `--app`; no file for `--domain`), and at the
/// host's URL for SARIF when there is no file.
struct FetchCIStream {
    var writer: any CIWriter
    let sources: EntrySources
    private var folded: [String: (count: Int, names: [String], finding: Finding)] = [:]
    private var hosts = 0

    init(writer: any CIWriter, sources: EntrySources) {
        self.writer = writer
        self.sources = sources
    }

    /// The location of an entry's problems.
    func location(of entry: AssociatedDomainEntry, url: String?) -> CILocation {
        let file = sources.file(ofEntry: entry.index)
        return CILocation(file: file, line: file == nil ? nil : entry.line, column: nil, url: url)
    }

    mutating func begin(findings: [Finding]) {
        writer.begin(command: "fetch")
        let file = sources.entitlementsPath ?? sources.listPath
        writer.loose(findings.map { CIProblem($0, at: CILocation(file: file)) })
    }

    mutating func domain(_ domain: DomainReport) {
        hosts += 1
        var hostFindings = domain.findings.filter { finding in
            // Said per entry: the failure and the findings copied from the entries' verdicts.
            !(finding.code == domain.code && finding.severity == .error) && finding.code != "app-not-listed" && finding.code != "app-id-unknown"
        }
        for finding in hostFindings where RunRenderer.folded.contains(finding.code) {
            var entry = folded[finding.code] ?? (0, [], finding)
            entry.count += 1
            if entry.names.count < 5 { entry.names.append(domain.host) }
            folded[finding.code] = entry
        }
        hostFindings.removeAll { RunRenderer.folded.contains($0.code) }
        let seconds = Double(domain.attempts.reduce(0) { $0 + $1.milliseconds }) / 1000
        let failureFix = domain.findings.first { $0.code == domain.code && $0.severity == .error && $0.fix != nil }?.fix
        let label = RunRenderer.label(domain)
        var cases: [CICase] = []
        for (position, verdict) in domain.verdicts.enumerated() {
            let at = location(of: verdict.entry, url: domain.url)
            var problems: [CIProblem] = []
            var own = verdict.findings.filter { !RunRenderer.folded.contains($0.code) }
            if verdict.associated == false {
                if let index = own.firstIndex(where: { $0.code == verdict.code && $0.severity == .error }) {
                    problems.append(CIProblem(own.remove(at: index), at: at))
                } else {
                    problems.append(CIProblem(code: verdict.code, severity: .error, message: "\(domain.host): \(domain.reason)",
                                              fix: failureFix, location: at))
                }
            }
            problems += own.map { CIProblem($0, at: at) }
            if position == 0 { problems += hostFindings.map { CIProblem($0, at: at) } }
            cases.append(CICase(
                suite: label, name: verdict.entry.raw ?? "(not a string)", outcome: Self.outcome(verdict),
                time: position == 0 ? seconds : 0, problems: problems))
        }
        writer.suite(label, cases)
    }

    static func outcome(_ verdict: EntryVerdict) -> CICase.Outcome {
        switch verdict.associated {
        case false?: .failed(code: verdict.code)
        case nil: .skipped("association not judged: no app ID")
        case true?: .passed
        }
    }

    /// The entries that name nothing to fetch (one group), then the folded warnings and the tally.
    /// `unfetchable` hands them over in entry order; it is called twice (count, then write).
    mutating func finish(unfetchable: (_ body: (EntryVerdict) throws -> Void) throws -> Void, summary: RunSummary) throws {
        var count = 0
        try unfetchable { _ in count += 1 }
        if count > 0 {
            writer.openSuite("entries not fetched", counts: CICounts(tests: count, failures: count))
            var written = 0
            try unfetchable { verdict in
                guard written < count else { return }
                written += 1
                let at = location(of: verdict.entry, url: nil)
                var findings = verdict.findings
                var problems: [CIProblem] = []
                if let index = findings.firstIndex(where: { $0.code == verdict.code && $0.severity == .error }) {
                    problems.append(CIProblem(findings.remove(at: index), at: at))
                }
                problems += findings.map { CIProblem($0, at: at) }
                writer.testCase(CICase(suite: "entries not fetched", name: verdict.entry.raw ?? "(not a string)",
                                       outcome: .failed(code: verdict.code), time: nil, problems: problems))
            }
            writer.closeSuite()
        }
        let file = sources.entitlementsPath ?? sources.listPath
        for (code, hostsWith) in folded.sorted(by: { $0.key < $1.key }) {
            let which = hostsWith.count == hosts ? "every host"
                : hostsWith.names.joined(separator: ", ") + (hostsWith.count > hostsWith.names.count ? " and \(hostsWith.count - hostsWith.names.count) more" : "")
            var finding = hostsWith.finding
            finding.message += " (\(which))"
            writer.loose([CIProblem(code: code, severity: finding.severity, message: finding.message, fix: finding.fix,
                                    location: CILocation(file: file))])
        }
        let s = summary
        writer.finish(summary: RunRenderer.tally(associated: s.associated, entries: s.entries, failed: s.failed, unjudged: s.unjudged,
                                                 warnings: s.warnings, console: Console(colors: false)))
    }
}

/// `lint` in a CI format: one group `lint`, one case per file (failed with its first error,
/// `error` when it could not be read); every finding points at the file, with the line and
/// column where it is (none for whole-file findings). Standard input (`-`) has no file: SARIF
/// names it `-`.
enum LintCI {
    static func render(_ report: LintReport, to writer: inout any CIWriter) {
        writer.begin(command: "lint")
        var cases: [CICase] = []
        for file in report.files {
            let at = CILocation(file: file.path == "-" ? nil : file.path, url: file.path == "-" ? "-" : nil)
            if let readError = file.readError {
                cases.append(CICase(suite: "lint", name: file.path, outcome: .error(code: readError.code), time: nil, problems: [
                    CIProblem(code: readError.code, severity: .error, message: readError.message, fix: nil, location: at),
                ]))
                continue
            }
            let problems = file.findings.map { CIProblem($0, at: at, ownPosition: at.file != nil) }
            let firstError = file.findings.first { $0.severity == .error }
            cases.append(CICase(suite: "lint", name: file.path, outcome: firstError.map { .failed(code: $0.code) } ?? .passed,
                                time: nil, problems: problems))
        }
        writer.suite("lint", cases)
        writer.finish(summary: "\(Plural.count(report.files.count, "file")): \(Plural.count(report.errors, "error")), \(Plural.count(report.warnings, "warning")), \(Plural.count(report.infos, "note"))"
            + (report.unreadable > 0 ? ", \(report.unreadable) unreadable" : ""))
    }
}

/// `diagnose` in a CI format: one group `diagnose`, one case per entry walked (classname: the
/// host), failed at its failed step; each failed or warned step is a problem (`step: summary`,
/// the step's code and fix) at the entry's file and line.
enum DiagnoseCI {
    static func render(_ report: DiagnosisReport, entries: [AssociatedDomainEntry], sources: EntrySources, to writer: inout any CIWriter) {
        writer.begin(command: "diagnose")
        let file = sources.entitlementsPath ?? sources.listPath
        writer.loose(report.findings.map { CIProblem($0, at: CILocation(file: file)) })
        var cases: [CICase] = []
        for (position, diagnosis) in report.diagnoses.enumerated() {
            var at = CILocation(url: diagnosis.url)
            if position < entries.count, let entryFile = sources.file(ofEntry: entries[position].index) {
                at.file = entryFile
                at.line = entries[position].line
            }
            let problems = diagnosis.steps.compactMap { step -> CIProblem? in
                let severity: Severity
                switch step.status {
                case .failed: severity = .error
                case .warned: severity = .warning
                case .passed, .skipped: return nil
                }
                return CIProblem(code: step.code, severity: severity, message: "\(diagnosis.host ?? diagnosis.entry ?? ""): step \(step.step): \(step.summary)",
                                 fix: step.fix, location: at)
            }
            let outcome: CICase.Outcome = diagnosis.failedStep != nil ? .failed(code: diagnosis.code)
                : diagnosis.associated == nil ? .skipped("association not judged: no app ID") : .passed
            cases.append(CICase(suite: diagnosis.host ?? "diagnose", name: diagnosis.entry ?? "(not a string)", outcome: outcome,
                                time: nil, problems: problems))
        }
        writer.suite("diagnose", cases)
        writer.finish(summary: DiagnosisRenderer.tally(report, console: Console(colors: false)))
    }
}

/// A failure before any report, in the format asked for: a GitHub `::error` line, a SARIF log
/// whose invocation did not succeed, a JUnit document with one `<error>` case.
enum CIFailureDocument {
    static func text(_ format: OutputFormat, code: String, message: String, exitCode: Int32) -> String? {
        switch format {
        case .github:
            return GitHubWriter.line(CIProblem(code: code, severity: .error, message: message, fix: nil, location: CILocation()))
        case .sarif:
            return SARIFWriter.failureDocument(code: code, message: message, exitCode: exitCode)
        case .junit:
            var text = ""
            var writer: any CIWriter = JUnitWriter { text += $0 }
            writer.begin(command: "run")
            writer.suite("aasa-fetch", [CICase(suite: "aasa-fetch", name: "run", outcome: .error(code: code), time: nil, problems: [
                CIProblem(code: code, severity: .error, message: message, fix: nil, location: CILocation()),
            ])])
            writer.finish(summary: "")
            return text
        case .human, .json:
            return nil
        }
    }
}
