import AASAFetchCore

/// Concise human output for runs and plans. Colour only when standard output is a terminal.
struct HumanRenderer {
    let console: Console

    private func mark(_ associated: Bool?) -> String {
        switch associated {
        case true?: console.paint("✔", .green)
        case false?: console.paint("✘", .red)
        case nil: console.paint("?", .yellow)
        }
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    private func renderFindings(_ findings: [Finding], indent: String = "    ") {
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
        let apps = report.appIDs.isEmpty ? "no app ID (association not judged)" : report.appIDs.joined(separator: ", ")
        console.out("\(report.summary.entries) entries, \(report.summary.domains) hosts, app \(apps)")
        renderFindings(report.findings, indent: "  ")
        let folded: Set<String> = ["custom-root"]
        let hostWidth = min(40, (report.domains.map(\.host.count).max() ?? 10) + 2)
        for domain in report.domains {
            let status = domain.httpStatus.map(String.init) ?? "---"
            let hostLabel = domain.route == .cdn ? "\(domain.host) (cdn)" : domain.host
            console.out("\(mark(domain.associated)) \(pad(hostLabel, hostWidth)) \(pad(status, 4)) \(pad(domain.code, 18)) \(domain.entries.joined(separator: ", "))")
            var rest = domain.findings.filter { !folded.contains($0.code) }
            if domain.code != "ok" || domain.associated == false {
                let primary = rest.first { $0.code == domain.code && $0.severity == .error }
                console.out("    \(domain.reason)")
                if let fix = primary?.fix { console.out("    \(console.paint("fix:", .dim)) \(fix)") }
                if let primary { rest.removeAll { $0 == primary } }
            }
            renderFindings(rest)
        }
        let hostWidthForEntries = hostWidth
        for verdict in report.entries where !verdict.entry.isFetchable {
            console.out("\(mark(false)) \(pad(verdict.entry.raw ?? "(not a string)", hostWidthForEntries)) \(pad("---", 4)) \(verdict.code)")
            renderFindings(verdict.findings)
        }
        for verdict in report.entries where verdict.entry.isFetchable {
            let own = verdict.findings.filter { $0.code.hasPrefix("entitlement-") }
            if !own.isEmpty {
                console.out("  entry \(verdict.entry.raw ?? ""):")
                renderFindings(own)
            }
        }
        for code in folded.sorted() {
            let hosts = report.domains.filter { $0.findings.contains { $0.code == code } }
            guard let example = hosts.first?.findings.first(where: { $0.code == code }) else { continue }
            let which = hosts.count == report.domains.count ? "every host" : hosts.map(\.host).joined(separator: ", ")
            console.out("\(console.paint("warning", .yellow)) \(code) (\(which)): \(example.message)")
        }
        let s = report.summary
        var line = "\(s.associated) of \(s.entries) entries associate"
        if s.failed > 0 { line += ", " + console.paint("\(s.failed) fail", .red) }
        if s.unjudged > 0 { line += ", \(s.unjudged) not judged" }
        if s.warnings > 0 { line += ", \(s.warnings) warning\(s.warnings == 1 ? "" : "s")" }
        console.out(line)
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
