import AASAFetchCore

/// Words for people: a count with its noun in the right number ("1 entry", "2 entries").
enum Plural {
    /// `n` and `singular`, or `plural` (default: `singular` + "s") when `n` is not 1.
    static func count(_ n: Int, _ singular: String, _ plural: String? = nil) -> String {
        "\(n) \(n == 1 ? singular : plural ?? singular + "s")"
    }
}

/// Concise human output for runs and plans. Colour only when standard output is a terminal.
///
/// One style everywhere: a finding is `SEVERITY CODE: message` (severity `error`, `warning` or
/// `note`), and what to change is a line `fix: …` right under the fact it fixes, two spaces
/// deeper. Lines go to `emit` (standard output unless a test collects them).
struct HumanRenderer {
    let console: Console
    let emit: (String) -> Void

    init(console: Console, emit: ((String) -> Void)? = nil) {
        self.console = console
        self.emit = emit ?? { console.out($0) }
    }

    func mark(_ associated: Bool?) -> String {
        switch associated {
        case true?: console.paint("✔", .green)
        case false?: console.paint("✘", .red)
        case nil: console.paint("?", .yellow)
        }
    }

    /// `text` as the terminal shows it (escaped), padded with spaces to `width` columns (wide
    /// characters take two, combining marks none).
    func pad(_ text: String, _ width: Int) -> String {
        let shown = TerminalText.escaped(text)
        let columns = Self.columns(shown)
        return columns >= width ? shown : shown + String(repeating: " ", count: width - columns)
    }

    /// A table cell: ``pad(_:_:)``, and always two spaces before the next column (an entry as long
    /// as the column ran into it: `applinks:e.test:8080---`).
    func cell(_ text: String, _ width: Int) -> String {
        let padded = pad(text, width)
        return padded.hasSuffix("  ") ? padded : padded + (padded.hasSuffix(" ") ? " " : "  ")
    }

    /// The terminal columns `text` takes: two for East Asian wide and emoji characters, none for
    /// combining marks and zero-width characters, one for the others.
    static func columns(_ text: String) -> Int {
        var total = 0
        for scalar in text.unicodeScalars {
            let value = scalar.value
            if value < 0x300 { total += 1; continue }
            switch scalar.properties.generalCategory {
            case .nonspacingMark, .enclosingMark, .format: continue
            default: break
            }
            // Emoji drawn as emoji by default (🚀 U+1F680, ☕ U+2615) are East Asian Wide.
            if scalar.properties.isEmojiPresentation { total += 2; continue }
            switch value {
            case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
                 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
                 0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x3FFFD:
                total += 2
            default:
                total += 1
            }
        }
        return total
    }

    /// The severity word of a finding, painted.
    func tag(_ severity: Severity) -> String {
        switch severity {
        case .error: console.paint("error", .red)
        case .warning: console.paint("warning", .yellow)
        case .info: console.paint("note", .dim)
        }
    }

    /// The fix line for text indented by `indent`: `fix:` two spaces deeper.
    func fixLine(_ fix: String, under indent: String) -> String {
        "\(indent)  \(console.paint("fix:", .dim)) \(fix)"
    }

    func renderFindings(_ findings: [Finding], indent: String = "    ") {
        for finding in findings {
            emit("\(indent)\(tag(finding.severity)) \(finding.code): \(finding.message)")
            if let fix = finding.fix { emit(fixLine(fix, under: indent)) }
        }
    }

    /// A finding about the inputs as one line for standard error (`match`, whose standard output
    /// is the answer): `aasa-fetch: note CODE: message`.
    static func noteLine(_ finding: Finding) -> String {
        let word = switch finding.severity {
        case .error: "error"
        case .warning: "warning"
        case .info: "note"
        }
        return "aasa-fetch: \(word) \(finding.code): \(finding.message)"
    }

    /// Renders a fetch run: one line per host, then the reason and fix of a failure, then other
    /// findings; warnings that concern every host (`custom-root`) are said once at the end.
    func renderRun(_ report: RunReport) {
        var run = RunRenderer(console: console, hostWidth: RunRenderer.width(for: report.domains.map(RunRenderer.label)), emit: emit)
        run.begin(entries: report.summary.entries, hosts: report.summary.domains, appIDs: report.appIDs, findings: report.findings)
        for domain in report.domains { run.domain(domain) }
        run.finish(entries: report.entries, summary: report.summary)
    }

    /// Renders a plan.
    func renderPlan(_ plan: PlanOutput) {
        emit("region: \(plan.region ?? "none") · app: \(plan.appIDs.isEmpty ? "unknown" : plan.appIDs.joined(separator: ", "))")
        renderFindings(plan.findings, indent: "  ")
        emit("\(Plural.count(plan.entries.count, "entry", "entries")):")
        for verdict in plan.entries {
            let target = verdict.entry.host.map { " → \($0)" } ?? ""
            emit("  \(mark(verdict.entry.errorCode == nil)) \(verdict.entry.raw ?? "(not a string)")\(target)")
            renderFindings(verdict.findings)
        }
        emit("\(Plural.count(plan.fetches.count, "download")), in start order:")
        let number = String(plan.fetches.count).count + 1
        let width = RunRenderer.width(for: plan.fetches.map(\.host))
        for (position, fetch) in plan.fetches.enumerated() {
            emit("  \(pad("\(position + 1).", number)) \(pad(fetch.host, width))\(pad(fetch.route.rawValue, 8))tier \(fetch.tier)  \(fetch.entries.joined(separator: ", "))")
        }
    }
}

/// Renders a fetch run piece by piece, so a streaming run prints each host as it is judged and
/// keeps only counters: ``begin(entries:hosts:appIDs:findings:)``, ``domain(_:)`` per host in start
/// order, ``finish(entries:summary:)``.
///
/// A host line is `MARK HOST STATUS CODE ENTRIES`; the host column is as wide as the longest host
/// of the run, the code column as the longest code a host line can carry (``codeWidth``), so the
/// columns stay aligned while hosts are printed as they finish.
struct RunRenderer {
    /// Warning codes said once at the end instead of under every host.
    static let folded: Set<String> = ["custom-root"]

    /// Every code a host line can show: `ok`, the download failures, the body failures,
    /// `app-not-listed` and the CDN route's failures.
    static let hostLineCodes = [
        "ok", "dns-failure", "connect-failure", "timeout", "transfer-failure", "private-address",
        "tls-untrusted", "tls-expired", "tls-not-yet-valid", "tls-hostname-mismatch", "tls-failure",
        "too-large", "invalid-request", "cancelled", "http-redirect", "http-client-error", "http-server-error",
        "http-unexpected-status", "invalid-json", "not-an-association-file", "app-not-listed",
        "cdn-origin-failure", "cdn-not-found", "cdn-unknown-domain", "cdn-http-error", "cdn-unreachable",
    ]

    /// The width of the code column.
    static let codeWidth = hostLineCodes.map(\.count).max() ?? 0

    let console: Console
    let hostWidth: Int
    private let renderer: HumanRenderer
    private var emit: (String) -> Void { renderer.emit }
    private var hostsSeen = 0
    private var foldedHosts: [String: (count: Int, names: [String], message: String)] = [:]

    init(console: Console, hostWidth: Int, emit: ((String) -> Void)? = nil) {
        self.console = console
        self.hostWidth = hostWidth
        renderer = HumanRenderer(console: console, emit: emit)
    }

    /// What the host column shows for a domain: the host, and `(cdn)` for a CDN record.
    static func label(_ domain: DomainReport) -> String {
        domain.route == .cdn ? "\(domain.host)\(cdnSuffix)" : domain.host
    }

    /// The label suffix of a CDN record.
    static let cdnSuffix = " (cdn)"

    /// The column width for a list of host labels.
    static func width(for labels: [String]) -> Int {
        width(longest: labels.map(\.count).max())
    }

    /// The column width when the longest host label has `longest` characters (`nil`: no hosts):
    /// the label and two spaces.
    static func width(longest: Int?) -> Int {
        (longest ?? 10) + 2
    }

    func begin(entries: Int, hosts: Int, appIDs: [String], findings: [Finding]) {
        let apps = appIDs.isEmpty ? "no app ID (association not judged)" : appIDs.joined(separator: ", ")
        emit("\(Plural.count(entries, "entry", "entries")), \(Plural.count(hosts, "host")), app \(apps)")
        renderer.renderFindings(findings, indent: "  ")
    }

    /// One table line: mark, label, status and code in their columns, then the rest.
    func row(_ mark: String, _ label: String, _ status: String, _ code: String, _ rest: String) -> String {
        let line = "\(mark) \(renderer.cell(label, hostWidth))\(renderer.pad(status, 5))\(renderer.cell(code, Self.codeWidth + 2))\(rest)"
        return rest.isEmpty ? String(line.reversed().drop { $0 == " " }.reversed()) : line
    }

    mutating func domain(_ domain: DomainReport) {
        hostsSeen += 1
        let status = domain.httpStatus.map(String.init) ?? "---"
        emit(row(renderer.mark(domain.associated), Self.label(domain), status, domain.code, domain.entries.joined(separator: ", ")))
        var rest = domain.findings.filter { !Self.folded.contains($0.code) }
        if domain.code != "ok" || domain.associated == false {
            // One fact once: the failure's reason, with the most specific fix among the findings
            // that say the same thing (the decoder's and the downloader's `invalid-json`, say).
            let same = rest.filter { $0.code == domain.code && $0.severity == .error }
            emit("    \(domain.reason)")
            if let fix = same.lazy.compactMap(\.fix).first { emit(renderer.fixLine(fix, under: "    ")) }
            rest.removeAll { $0.code == domain.code && $0.severity == .error }
        }
        renderer.renderFindings(rest)
        for finding in domain.findings where Self.folded.contains(finding.code) {
            var entry = foldedHosts[finding.code] ?? (0, [], finding.message)
            entry.count += 1
            if entry.names.count < 5 { entry.names.append(domain.host) }
            foldedHosts[finding.code] = entry
        }
    }

    func finish(entries: [EntryVerdict], summary: RunSummary) {
        for verdict in entries where !verdict.entry.isFetchable { unfetchable(verdict) }
        for verdict in entries where verdict.entry.isFetchable { ownFindings(verdict) }
        finish(summary: summary)
    }

    /// An entry with nothing to fetch, with its findings (after every host, in entry order).
    func unfetchable(_ verdict: EntryVerdict) {
        emit(row(renderer.mark(false), verdict.entry.raw ?? "(not a string)", "---", verdict.code, ""))
        // The code's own finding says why (its message is the fact; the code is on the line above).
        var findings = verdict.findings
        if let index = findings.firstIndex(where: { $0.code == verdict.code && $0.severity == .error }) {
            let primary = findings.remove(at: index)
            emit("    \(primary.message)")
            if let fix = primary.fix { emit(renderer.fixLine(fix, under: "    ")) }
        }
        renderer.renderFindings(findings)
    }

    /// A fetched entry's own (`entitlement-…`) findings, if any (after the unfetchable entries).
    func ownFindings(_ verdict: EntryVerdict) {
        let own = verdict.findings.filter { $0.code.hasPrefix("entitlement-") }
        if !own.isEmpty {
            emit("  entry \(verdict.entry.raw ?? ""):")
            renderer.renderFindings(own)
        }
    }

    /// The warnings said once and the closing line; `runErrors` counts the run's own error findings
    /// (about the app given with `--app`: a profile that refuses a domain, …).
    func finish(summary s: RunSummary, runErrors: Int = 0) {
        for (code, hosts) in foldedHosts.sorted(by: { $0.key < $1.key }) {
            let which = hosts.count == hostsSeen ? "every host"
                : hosts.names.joined(separator: ", ") + (hosts.count > hosts.names.count ? " and \(hosts.count - hosts.names.count) more" : "")
            emit("\(renderer.tag(.warning)) \(code) (\(which)): \(hosts.message)")
        }
        var line = Self.tally(associated: s.associated, entries: s.entries, failed: s.failed, unjudged: s.unjudged, warnings: s.warnings, console: console)
        if runErrors > 0 { line += ", " + console.paint("\(Plural.count(runErrors, "error")) about the app", .red) }
        emit(line)
    }

    /// The closing line of a run or a diagnosis of several entries:
    /// `6 of 8 entries associate, 2 fail, 1 not judged, 3 warnings` (with `failureCodes`:
    /// `2 fail (http-redirect, app-not-listed)`).
    static func tally(associated: Int, entries: Int, failed: Int, failureCodes: [String] = [], unjudged: Int, warnings: Int,
                      console: Console) -> String {
        var line = "\(associated) of \(Plural.count(entries, "entry", "entries")) \(associated == 1 ? "associates" : "associate")"
        if failed > 0 {
            line += ", " + console.paint("\(failed) \(failed == 1 ? "fails" : "fail")", .red)
            if !failureCodes.isEmpty { line += " (\(failureCodes.joined(separator: ", ")))" }
        }
        if unjudged > 0 { line += ", \(unjudged) not judged" }
        if warnings > 0 { line += ", \(Plural.count(warnings, "warning"))" }
        return line
    }
}
