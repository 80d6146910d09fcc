import Foundation
import IDNA

// The `entitlement` and `host` steps of a diagnosis.

extension Diagnoser.Walk {
    mutating func entitlementStep() {
        var details: [String] = []
        if let service = entry.service { details.append("service: \(service.name)\(service.isKnown ? "" : " (unknown to Apple)")") }
        if let domain = entry.domain { details.append("domain: \(domain)") }
        if entry.isWildcard, let host = entry.host {
            details.append("wildcard: covers every subdomain of \(host), not \(host) itself")
        }
        if let host = entry.host, host.split(separator: ".").contains(where: { $0.hasPrefix("xn--") }) {
            details.append("Punycode: \(host) (\(IDNAForm.unicode(host)))")
        }
        switch entry.mode {
        case .developer?, .developerManaged?:
            details.append("mode: \(entry.mode!.rawValue) — only devices in developer mode; direct fetch, any valid certificate accepted")
        case .managed?:
            details.append("mode: managed — only MDM-managed devices; direct fetch, a system-trusted certificate required")
        case nil:
            details.append("mode: none — devices on iOS 14+/macOS 11+ get the file through Apple's CDN")
        }
        let errors = entry.findings.filter { $0.severity == .error }
        let warnings = entry.findings.filter { $0.severity == .warning }
        let raw = entry.raw ?? "(not a string)"
        if let first = errors.first {
            add(DiagnosisStep(step: "entitlement", title: "Entitlement entry", status: .failed, code: first.code,
                              summary: "\(raw): \(first.message)", details: details, findings: entry.findings,
                              fix: first.fix ?? entry.normalized.map { "write '\($0)'" }))
        } else if let first = warnings.first {
            add(DiagnosisStep(step: "entitlement", title: "Entitlement entry", status: .warned, code: first.code,
                              summary: "\(raw): \(first.message)", details: details, findings: entry.findings, fix: first.fix))
        } else {
            add(DiagnosisStep(step: "entitlement", title: "Entitlement entry", status: .passed,
                              summary: "\(raw) is well formed", details: details, findings: entry.findings))
        }
    }

    mutating func hostStep(host: String, diagnoser: Diagnoser) {
        var details: [String] = []
        let originURL = AASAFetcher.wellKnownURL(host)
        let cdnURL = CDNFetcher(transport: diagnoser.cdnTransport, options: diagnoser.options, base: diagnoser.cdnBase).url(for: host)
        let summary: String
        switch effectiveRoute {
        case .origin:
            summary = "\(host): the device fetches \(originURL)"
            if entry.mode != nil {
                details.append("?mode= entries are fetched from the origin directly, never through Apple's CDN")
                if diagnoser.route != .origin { details.append("--route \(diagnoser.route.rawValue) does not apply to this entry") }
            } else {
                details.append("iOS 14+/macOS 11+ devices read \(cdnURL) instead (--route cdn or both to check it)")
            }
        case .cdn:
            summary = "\(host): the device fetches \(cdnURL) (Apple's CDN)"
            details.append("the CDN fetches \(originURL) on its own schedule")
        case .both:
            summary = "\(host): the origin \(originURL), then Apple's CDN \(cdnURL)"
        }
        if entry.isWildcard { details.append("\(entry.domain ?? "") is served by the file of \(host)") }
        if diagnoser.options.extraCAFile != nil { details.append("--cacert \(diagnoser.options.extraCAFile!) is trusted besides the system store") }
        add(DiagnosisStep(step: "host", title: "Host fetched", status: .passed, summary: summary, details: details))
    }
}

/// The Unicode form of a Punycode host, for display only.
enum IDNAForm {
    static func unicode(_ host: String) -> String {
        (try? IDNA.toUnicode(host)) ?? host
    }
}
