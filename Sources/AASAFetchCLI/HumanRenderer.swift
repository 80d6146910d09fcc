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

    private func renderFindings(_ findings: [Finding], skipping skipped: String? = nil, indent: String = "    ") {
        for finding in findings where finding.code != skipped {
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

    /// Renders a fetch run.
    func renderRun(_ report: RunReport) {
        let apps = report.appIDs.isEmpty ? "no app ID (association not judged)" : report.appIDs.joined(separator: ", ")
        console.out("\(report.summary.entries) entries, \(report.summary.domains) hosts, app \(apps)")
        renderFindings(report.findings, indent: "  ")
        let hostWidth = min(40, (report.domains.map(\.host.count).max() ?? 10) + 2)
        for domain in report.domains {
            let status = domain.httpStatus.map(String.init) ?? "---"
            console.out("\(mark(domain.associated)) \(pad(domain.host, hostWidth)) \(pad(status, 4)) \(pad(domain.code, 18)) \(domain.entries.joined(separator: ", "))")
            if domain.code != "ok" || domain.associated == false {
                console.out("    \(domain.reason)")
            }
            // The domain's findings; its first error is the reason line already.
            let firstError = domain.findings.first { $0.severity == .error }
            renderFindings(domain.findings.filter { $0 != firstError || domain.code == "ok" && domain.associated != false })
            if let firstError, let fix = firstError.fix {
                console.out("    \(console.paint("fix:", .dim)) \(fix)")
            }
        }
        let unfetched = report.entries.filter { !$0.entry.isFetchable }
        for verdict in unfetched {
            console.out("\(mark(false)) \(pad(verdict.entry.raw ?? "(not a string)", hostWidth)) \(pad("---", 4)) \(verdict.code)")
            renderFindings(verdict.findings)
        }
        for verdict in report.entries where verdict.entry.isFetchable {
            let extra = verdict.findings.filter { $0.code.hasPrefix("entitlement-") || $0.code == "custom-root" }
            if !extra.isEmpty {
                console.out("  entry \(verdict.entry.raw ?? ""):")
                renderFindings(extra)
            }
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
            let ok = verdict.entry.errorCode == nil
            let target = verdict.entry.host.map { "→ \($0)" } ?? ""
            console.out("  \(mark(ok ? true : false)) \(verdict.entry.raw ?? "(not a string)") \(target)")
            renderFindings(verdict.findings)
        }
        console.out("fetches, in start order:")
        for (position, fetch) in plan.fetches.enumerated() {
            console.out("  \(position + 1). \(pad(fetch.host, 32)) \(fetch.route.rawValue)  tier \(fetch.tier)  \(fetch.entries.joined(separator: ", "))")
        }
    }
}
