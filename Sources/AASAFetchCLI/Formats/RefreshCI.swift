import AASAFetchCore

/// `refresh` in a CI format (`--format github|sarif|junit`, one pass): one case per host and
/// route fetched (group `refresh`, named `HOST` or `HOST (cdn)`), failed when its download failed
/// or an association of it broke. Its problems are its changes, most serious first: `broke` and
/// `association-lost` (errors), a failed download without a change (an error: still failing),
/// `changed`, `approved`, `association-gained` (notices). Hosts have no local file: problems point
/// at the host's URL (SARIF's artifact). Hosts taken over after a lapsed lease and hosts abandoned
/// by a stop are warnings of the run; the tally is the human summary line.
enum RefreshCI {
    /// Writes `report` to `writer`; `cdnBase` gives the URL of hosts refreshed through the CDN.
    static func render(_ report: RefreshReport, cdnBase: String, to writer: inout any CIWriter) {
        writer.begin(command: "refresh")
        var loose: [CIProblem] = []
        if !report.leaseLost.isEmpty {
            loose.append(CIProblem(
                code: "lease-lost", severity: .warning,
                message: "\(AASAFetchCommand.Refresh.leaseLostText(report)): \(report.leaseLost.map(\.description).joined(separator: ", "))",
                fix: "if leases lapse, raise --lease", location: CILocation()))
        }
        if report.abandoned > 0 {
            loose.append(CIProblem(
                code: "stopped", severity: .warning,
                message: "the refresh was stopped; \(Plural.count(report.abandoned, "host", "hosts")) in flight abandoned and released",
                fix: nil, location: CILocation()))
        }
        writer.loose(loose)
        writer.suite("refresh", report.hosts.map { host in Self.testCase(host, cdnBase: cdnBase) })
        let count = report.changes.count
        writer.finish(summary: "\(Plural.count(report.hosts.count, "host")) fetched, \(Plural.count(count, "change"))"
                      + (report.broken ? ", association broken" : ""))
    }

    /// The case of one host fetched.
    static func testCase(_ host: RefreshedHost, cdnBase: String) -> CICase {
        let name = host.key.description
        let url = host.key.route == .cdn ? CDNFetcher.url(for: host.key.host, base: cdnBase) : AASAFetcher.wellKnownURL(host.key.host)
        let at = CILocation(url: url)
        var problems: [CIProblem] = []
        for event in host.events {
            let detail = event.detail
            switch event.kind {
            case .broke:
                problems.append(CIProblem(code: detail.code ?? host.code, severity: .error,
                                          message: "\(name) broke: \(detail.reason ?? host.reason); the last approved file is kept",
                                          fix: host.fix, location: at))
            case .associationLost:
                let fix = detail.appID.map { NotificationEvent.listFix(appID: $0, service: detail.service ?? .applinks) }
                problems.append(CIProblem(code: "app-not-listed", severity: .error,
                                          message: "\(name) association-lost: \(detail.reason ?? "")" + (detail.entry.map { " (\($0))" } ?? ""),
                                          fix: fix, location: at))
            case .failed:
                problems.append(CIProblem(code: detail.code ?? host.code, severity: .error,
                                          message: "\(name) failed: \(detail.reason ?? host.reason)" + (detail.previousCode.map { " (was \($0))" } ?? ""),
                                          fix: host.fix, location: at))
            case .changed:
                let changes = (detail.changes ?? []).map(\.description).joined(separator: "; ")
                problems.append(CIProblem(code: "changed", severity: .info, message: "\(name) changed: \(changes)", fix: nil, location: at))
            case .approved:
                let was = detail.previousCode.map { " (was \($0))" } ?? " (first approved file)"
                problems.append(CIProblem(code: "approved", severity: .info, message: "\(name) approved\(was)", fix: nil, location: at))
            case .associationGained:
                problems.append(CIProblem(code: "association-gained", severity: .info,
                                          message: "\(name) association-gained: \(detail.reason ?? "")" + (detail.entry.map { " (\($0))" } ?? ""),
                                          fix: nil, location: at))
            }
        }
        let failing = host.outcome == .transient || host.outcome == .denied
        if failing && !problems.contains(where: { $0.severity == .error }) {
            // Still failing, as before: no change recorded, but the host does not associate.
            problems.append(CIProblem(code: host.code, severity: .error,
                                      message: "\(name) still fails: \(host.reason) (\(Plural.count(host.consecutiveFailures, "failure")) in a row)",
                                      fix: host.fix, location: at))
        }
        // Most serious first, each severity in the order of the events.
        problems = [Severity.error, .warning, .info].flatMap { severity in problems.filter { $0.severity == severity } }
        let outcome: CICase.Outcome = if let first = problems.first, first.severity == .error {
            .failed(code: first.code)
        } else {
            .passed
        }
        return CICase(suite: "refresh", name: name, outcome: outcome, time: nil, problems: problems)
    }
}
