import Foundation

// The `user-agent` step of a diagnosis: the same URL for Apple's crawler, a device and a browser.

extension Diagnoser.Walk {
    mutating func userAgentStep(url: String, mattering: String, diagnoser: Diagnoser) async {
        var options = diagnoser.options
        options.verifyPeer = developerMode ? false : options.verifyPeer
        let agents = [("aasa-bot", diagnoser.options.userAgent), ("device", Diagnoser.deviceUserAgent),
                      ("browser", Diagnoser.browserUserAgent)]
        let key = "\(url) \(options.verifyPeer)"
        let probes: [UserAgentProbe]
        if let seen = diagnoser.memo.userAgents(key) {
            probes = seen
        } else {
            probes = await UserAgentCheck.probe(url: url, agents: agents, options: options, transport: diagnoser.transport)
            diagnoser.memo.keep(userAgents: probes, for: key)
        }
        diagnosis.userAgents = probes
        let details = probes.map { "\($0.userAgent) → \($0.outcome)" }
        let fix = UserAgentCheck.fix
        switch UserAgentCheck.verdict(probes, mattering: mattering) {
        case .same:
            diagnosis.steps.append(DiagnosisStep(step: "user-agent", title: "User agents", status: .passed,
                                                 summary: "every user agent gets the same answer (\(probes.first?.outcome ?? "none"))",
                                                 details: details))
        case .blocked(let message):
            let step = DiagnosisStep(step: "user-agent", title: "User agents", status: .failed, code: "user-agent-blocked",
                                     summary: message, details: details,
                                     findings: [.error("user-agent-blocked", message, location: url, fix: fix)], fix: fix)
            // The step once (it was appended twice when no http step had failed: `--route cdn`).
            // Added, it ends the walk unless an earlier step did.
            add(step)
            // The user-agent check explains the HTTP failure: it is the more precise code.
            if let index = diagnosis.steps.firstIndex(where: { $0.step == "http" && $0.status == .failed }) {
                diagnosis.steps[index].code = "user-agent-blocked"
                diagnosis.steps[index].fix = fix
                diagnosis.steps[index].findings.append(.error("user-agent-blocked", message, location: url, fix: fix))
                if diagnosis.failedStep == "http" { diagnosis.code = "user-agent-blocked" }
            }
        case .differs:
            diagnosis.steps.append(DiagnosisStep(step: "user-agent", title: "User agents", status: .warned, code: "user-agent-differs",
                                                 summary: "the origin answers user agents differently: " + details.joined(separator: "; "),
                                                 details: details, fix: fix))
        }
    }
}
