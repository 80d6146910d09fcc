import CurlTransport
import Foundation

// What the `tls` step says about certificates, and the checks developer mode still makes.

extension Diagnoser.Walk {
    static func isTLS(_ failure: TransferFailure) -> Bool {
        switch failure.kind {
        case .tlsUntrusted, .tlsExpired, .tlsNotYetValid, .tlsHostnameMismatch, .tlsFailure: true
        default: false
        }
    }

    static func describe(_ certificates: [PeerCertificate]) -> [String] {
        guard !certificates.isEmpty else { return ["no certificate details (the server did not complete a handshake)"] }
        var lines: [String] = []
        for (index, certificate) in certificates.enumerated() {
            lines.append("certificate \(index): \(certificate.subject) — issued by \(certificate.issuer)")
            lines.append("  valid from \(certificate.notBefore) until \(certificate.notAfter)")
            if !certificate.subjectAltNames.isEmpty { lines.append("  names: \(certificate.subjectAltNames.joined(separator: ", "))") }
        }
        lines.append("chain ends at: \(certificates.last?.issuer ?? "")")
        return lines
    }

    static func tlsStep(_ response: TransferResponse, reliesOnExtraCA: Bool, developerMode: Bool, caFile: String?) -> DiagnosisStep {
        var details = describe(response.certificates)
        details.append(reliesOnExtraCA ? "trusted through --cacert \(caFile ?? "")" : "trusted by the system store")
        details.append("protocol: HTTP/\(response.httpVersion) over TLS; handshake done \(Int(response.timings.tlsHandshake * 1000)) ms after start")
        let leaf = response.certificates.first
        let customRoot = reliesOnExtraCA && !developerMode
        let customRootSummary = "the certificate is trusted only through --cacert; a device accepts that only for ?mode=developer entries"
        let customRootFix = "use a certificate from a publicly trusted CA, or ?mode=developer entries while testing"
        if let leaf, let end = CertificateCheck.date(leaf.notAfter) {
            let days = Int(end.timeIntervalSinceNow / 86_400)
            if days < 14 {
                let summary = "the certificate expires in \(days) day\(days == 1 ? "" : "s") (\(leaf.notAfter))"
                // Both warnings when both apply (the --cacert one was lost).
                let findings: [Finding] = customRoot
                    ? [.warning("tls-expires-soon", summary, fix: "renew the certificate before it expires"),
                       .warning("custom-root", customRootSummary, fix: customRootFix)]
                    : []
                return DiagnosisStep(step: "tls", title: "TLS", status: .warned, code: "tls-expires-soon",
                                     summary: summary + (customRoot ? "; and " + customRootSummary : ""),
                                     details: details, findings: findings, fix: "renew the certificate before it expires")
            }
        }
        if customRoot {
            return DiagnosisStep(step: "tls", title: "TLS", status: .warned, code: "custom-root",
                                 summary: customRootSummary, details: details, fix: customRootFix)
        }
        let names = leaf.map { $0.subjectAltNames.joined(separator: ", ") } ?? ""
        return DiagnosisStep(step: "tls", title: "TLS", status: .passed,
                             summary: "valid certificate" + (names.isEmpty ? "" : " for \(names)") + (leaf.map { ", until \($0.notAfter)" } ?? ""),
                             details: details)
    }
}

/// The checks a device in developer mode still makes on an untrusted certificate: its dates and its names.
enum CertificateCheck {
    /// Parses libcurl's certificate dates (`Jan  1 00:00:00 2026 GMT` or `2026-01-01 00:00:00 GMT`).
    static func date(_ text: String) -> Date? {
        let collapsed = text.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        for format in ["MMM d HH:mm:ss yyyy zzz", "yyyy-MM-dd HH:mm:ss zzz", "MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: collapsed) { return date }
        }
        return nil
    }

    /// Whether a DNS name on a certificate covers `host` (one leading `*` label at most).
    static func nameMatches(_ name: String, host: String) -> Bool {
        let name = name.lowercased()
        let host = host.lowercased()
        if name == host { return true }
        guard name.hasPrefix("*.") else { return false }
        let suffix = name.dropFirst(1)
        guard host.hasSuffix(suffix) else { return false }
        return !host.dropLast(suffix.count).contains(".") && host.count > suffix.count
    }

    /// The first problem of a leaf certificate for `host`: expired, not yet valid, wrong name.
    static func problem(_ certificate: PeerCertificate, host: String, now: Date) -> (code: String, message: String)? {
        if let end = date(certificate.notAfter), end < now {
            return ("tls-expired", "the certificate expired on \(certificate.notAfter)")
        }
        if let start = date(certificate.notBefore), start > now {
            return ("tls-not-yet-valid", "the certificate is valid only from \(certificate.notBefore)")
        }
        var names = certificate.subjectAltNames
        if names.isEmpty, let range = certificate.subject.range(of: "CN=") {
            names = [String(certificate.subject[range.upperBound...].prefix { $0 != "," && $0 != "/" })]
        }
        if !names.contains(where: { nameMatches($0, host: host) }) {
            return ("tls-hostname-mismatch", "the certificate names \(names.joined(separator: ", ")), not \(host)")
        }
        return nil
    }
}
