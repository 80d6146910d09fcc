import AASAFetchCore

/// Concise human output for runs and plans. Colour only when standard output is a terminal.
struct HumanRenderer {
    let console: Console

    func mark(_ associated: Bool?) -> String {
        switch associated {
        case true?: console.paint("✔", .green)
        case false?: console.paint("✘", .red)
        case nil: console.paint("?", .yellow)
        }
    }

    func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    func renderFindings(_ findings: [Finding], indent: String = "    ") {
        for finding in findings {
            let tag: String
            switch finding.severity {
            case .error: tag = console.paint("error", .red)
            case .warning: tag = console.paint("warning", .yellow)
            case .info: tag = console.paint("note", .dim)
            }
            console.out("\(indent)\(tag) \(finding.code): \(finding.message)")
            if let fix = finding.fix, finding.severity != .info {
                console.out("\(indent)  \(console.paint("fix:", .dim)) \(fix)")
            }
        }
    }

    /// Renders a fetch run: one line per host, then the reason and fix of a failure, then other
    /// findings; warnings that concern every host (`custom-root`) are said once at the end.
    func renderRun(_ report: RunReport) {
        var run = RunRenderer(console: console, hostWidth: RunRenderer.width(for: report.domains.map(\.host)))
        run.begin(entries: report.summary.entries, hosts: report.summary.domains, appIDs: report.appIDs, findings: report.findings)
        for domain in report.domains { run.domain(domain) }
        run.finish(entries: report.entries, summary: report.summary)
    }

    /// Renders a plan.
    func renderPlan(_ plan: PlanOutput) {
        console.out("region: \(plan.region ?? "none") · app: \(plan.appIDs.isEmpty ? "unknown" : plan.appIDs.joined(separator: ", "))")
        renderFindings(plan.findings, indent: "  ")
        console.out("entries:")
        for verdict in plan.entries {
            let target = verdict.entry.host.map { "→ \($0)" } ?? ""
            console.out("  \(mark(verdict.entry.errorCode == nil)) \(verdict.entry.raw ?? "(not a string)") \(target)")
            renderFindings(verdict.findings)
        }
        console.out("fetches, in start order:")
        for (position, fetch) in plan.fetches.enumerated() {
            console.out("  \(position + 1). \(pad(fetch.host, 32)) \(fetch.route.rawValue)  tier \(fetch.tier)  \(fetch.entries.joined(separator: ", "))")
        }
    }
}

/// Renders a fetch run piece by piece, so a streaming run prints each host as it is judged and
/// keeps only counters: ``begin(entries:hosts:appIDs:findings:)``, ``domain(_:)`` per host in start
/// order, ``finish(entries:summary:)``.
struct RunRenderer {
    /// Warning codes said once at the end instead of under every host.
    static let folded: Set<String> = ["custom-root"]

    let console: Console
    let hostWidth: Int
    private var renderer: HumanRenderer { HumanRenderer(console: console) }
    private var hostsSeen = 0
    private var foldedHosts: [String: (count: Int, names: [String], message: String)] = [:]

    init(console: Console, hostWidth: Int) {
        self.console = console
        self.hostWidth = hostWidth
    }

    /// The column width for a list of hosts.
    static func width(for hosts: [String]) -> Int {
        width(longest: hosts.map(\.count).max())
    }

    /// The column width when the longest host has `longest` characters (`nil`: no hosts).
    static func width(longest: Int?) -> Int {
        min(40, (longest ?? 10) + 2)
    }

    func begin(entries: Int, hosts: Int, appIDs: [String], findings: [Finding]) {
        let apps = appIDs.isEmpty ? "no app ID (association not judged)" : appIDs.joined(separator: ", ")
        console.out("\(entries) entries, \(hosts) hosts, app \(apps)")
        renderer.renderFindings(findings, indent: "  ")
    }

    mutating func domain(_ domain: DomainReport) {
        hostsSeen += 1
        let status = domain.httpStatus.map(String.init) ?? "---"
        let hostLabel = domain.route == .cdn ? "\(domain.host) (cdn)" : domain.host
        console.out("\(renderer.mark(domain.associated)) \(renderer.pad(hostLabel, hostWidth)) \(renderer.pad(status, 4)) \(renderer.pad(domain.code, 18)) \(domain.entries.joined(separator: ", "))")
        var rest = domain.findings.filter { !Self.folded.contains($0.code) }
        if domain.code != "ok" || domain.associated == false {
            let primary = rest.first { $0.code == domain.code && $0.severity == .error }
            console.out("    \(domain.reason)")
            if let fix = primary?.fix { console.out("    \(console.paint("fix:", .dim)) \(fix)") }
            if let primary { rest.removeAll { $0 == primary } }
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
        console.out("\(renderer.mark(false)) \(renderer.pad(verdict.entry.raw ?? "(not a string)", hostWidth)) \(renderer.pad("---", 4)) \(verdict.code)")
        renderer.renderFindings(verdict.findings)
    }

    /// A fetched entry's own (`entitlement-…`) findings, if any (after the unfetchable entries).
    func ownFindings(_ verdict: EntryVerdict) {
        let own = verdict.findings.filter { $0.code.hasPrefix("entitlement-") }
        if !own.isEmpty {
            console.out("  entry \(verdict.entry.raw ?? ""):")
            renderer.renderFindings(own)
        }
    }

    /// The warnings said once and the closing line.
    func finish(summary s: RunSummary) {
        for (code, hosts) in foldedHosts.sorted(by: { $0.key < $1.key }) {
            let which = hosts.count == hostsSeen ? "every host"
                : hosts.names.joined(separator: ", ") + (hosts.count > hosts.names.count ? " and \(hosts.count - hosts.names.count) more" : "")
            console.out("\(console.paint("warning", .yellow)) \(code) (\(which)): \(hosts.message)")
        }
        var line = "\(s.associated) of \(s.entries) entries associate"
        if s.failed > 0 { line += ", " + console.paint("\(s.failed) fail", .red) }
        if s.unjudged > 0 { line += ", \(s.unjudged) not judged" }
        if s.warnings > 0 { line += ", \(s.warnings) warning\(s.warnings == 1 ? "" : "s")" }
        console.out(line)
    }
}
