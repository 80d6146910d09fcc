import CurlTransport
import Foundation

// The `tls` and `http` steps of a diagnosis: the download itself, on the origin route.

extension Diagnoser.Walk {
    /// TLS and HTTP: the download itself, certificates collected; the legacy root path after a 404.
    /// - Returns: as ``originSteps(host:diagnoser:)``.
    mutating func downloadSteps(host: String, userAgent: String, diagnoser: Diagnoser) async -> (result: HostFetchResult?, userAgentURL: String?, userAgent: String) {
        let options = diagnoser.options
        var fetchOptions = options
        fetchOptions.userAgent = userAgent
        fetchOptions.collectCertificates = true
        var fetcher = AASAFetcher(transport: diagnoser.transport, options: fetchOptions)
        let wellKnown = AASAFetcher.wellKnownURL(host)
        var attempts: [FetchAttempt] = []
        var outcome = await fetcher.fetchWithRetries(url: wellKnown, attempts: &attempts)
        var tlsStep: DiagnosisStep?

        if case .failure(let failure) = outcome, Self.isTLS(failure) {
            // Look at what the certificate says, without trusting it.
            var probeOptions = fetchOptions
            probeOptions.verifyPeer = false
            let probe = AASAFetcher(transport: diagnoser.transport, options: probeOptions)
            var probeAttempts: [FetchAttempt] = []
            let seen = await probe.fetchWithRetries(url: wellKnown, attempts: &probeAttempts)
            var certificates: [PeerCertificate] = []
            if case .response(let response, _) = seen { certificates = response.certificates }
            var details = Self.describe(certificates)
            let problem = certificates.first.flatMap { CertificateCheck.problem($0, host: host, now: Date()) }
            if developerMode, failure.kind == .tlsUntrusted, problem == nil, case .response = seen {
                details.append("developer mode: the chain is not trusted, but a device in developer mode accepts any valid certificate")
                tlsStep = DiagnosisStep(step: "tls", title: "TLS", status: .warned, code: "tls-untrusted",
                                        summary: "untrusted certificate accepted by developer-mode rules: \(failure.message)",
                                        details: details, fix: "release builds (without ?mode=developer) need a certificate from a publicly trusted CA")
                fetcher = probe
                outcome = seen
                attempts += probeAttempts
            } else {
                // The device's verdict is libcurl's (the chain first: an untrusted chain fails
                // before its dates are looked at), as in fetch; what the certificate itself says
                // is a detail. In developer mode the chain does not count, so the certificate's
                // own problem is the verdict.
                let code = developerMode ? problem?.code ?? failure.kind.rawValue : failure.kind.rawValue
                let kind = TransferFailureKind(rawValue: code) ?? failure.kind
                var summary = AASAFetcher.describe(failure, host: host, options: options)
                if let problem, problem.code != failure.kind.rawValue {
                    if developerMode { summary = problem.message } else { details.append("the certificate itself: \(problem.message)") }
                }
                if developerMode { details.append("developer mode accepts an untrusted chain, but never an expired, not yet valid or wrongly named certificate") }
                add(DiagnosisStep(step: "tls", title: "TLS", status: .failed, code: code, summary: summary,
                                  details: details, fix: AASAFetcher.fix(for: kind)))
                return (nil, nil, userAgent)
            }
        }

        switch outcome {
        case .failure(let failure):
            let step = Self.phase(of: failure)
            // Only a handshake libcurl timed is said to have completed.
            if step == "http", !failure.kind.isRunFailure, failure.reached == .secured {
                add(DiagnosisStep(step: "tls", title: "TLS", status: .passed,
                                  summary: "the handshake completed (the transfer failed afterwards, so no certificate details)"))
            }
            add(DiagnosisStep(step: step, title: step == "http" ? "HTTP" : step.uppercased(), status: .failed, code: failure.kind.rawValue,
                              summary: AASAFetcher.describe(failure, host: host, options: options),
                              details: attempts.map(Self.describe), fix: AASAFetcher.fix(for: failure.kind)))
            return (nil, step == "http" ? wellKnown : nil, userAgent)
        case .response(let response, let reliesOnExtraCA), .notModified(let response, let reliesOnExtraCA):
            add(tlsStep ?? Self.tlsStep(response, reliesOnExtraCA: reliesOnExtraCA, developerMode: developerMode, caFile: options.extraCAFile))
        }

        var url = wellKnown
        var httpDetails: [String] = []
        if case .response(let response, _) = outcome, response.status == 404 {
            let legacy = AASAFetcher.legacyRootURL(host)
            let fallback = await fetcher.fetchWithRetries(url: legacy, attempts: &attempts)
            if fetcher.evaluate(fallback, host: host, url: legacy).code == "ok" {
                outcome = fallback
                url = legacy
            } else if case .response(let other, _) = fallback {
                httpDetails.append("the legacy root path \(legacy) answers HTTP \(other.status) too")
            } else if case .failure(let other) = fallback {
                httpDetails.append("the legacy root path \(legacy) failed too: \(other.kind.rawValue)")
            }
        }
        var result = fetcher.evaluate(outcome, host: host, url: url)
        if url != wellKnown {
            result.findings.insert(AASAFetcher.legacyRootPathWarning(host: host), at: 0)
        }
        result.attempts = attempts
        guard case .response(let response, _) = outcome else { return (result, url, userAgent) }
        httpDetails.insert("GET \(url) → HTTP \(response.status) (HTTP/\(response.httpVersion), User-Agent \(userAgent))", at: 0)
        if let location = result.redirectLocation { httpDetails.append("Location: \(location)") }
        httpDetails.append("Content-Type: \(response.header("Content-Type") ?? "(none)")")
        httpDetails.append("Content-Encoding: \(response.header("Content-Encoding") ?? "none")")
        httpDetails.append("size: \(response.body.count) bytes decoded" + (response.header("Content-Length").map { ", Content-Length \($0)" } ?? ", no Content-Length"))
        if attempts.count > 1 { httpDetails.append("requests: " + attempts.map(Self.describe).joined(separator: "; ")) }
        let httpCodes: Set<String> = ["http-redirect", "http-client-error", "http-server-error", "http-unexpected-status"]
        if httpCodes.contains(result.code) {
            let finding = result.findings.first { $0.code == result.code }
            add(DiagnosisStep(step: "http", title: "HTTP", status: .failed, code: result.code, summary: result.reason,
                              details: httpDetails, findings: result.findings.filter { $0.severity != .info }, fix: finding?.fix))
            return (result, url, userAgent)
        }
        let warnings = result.findings.filter { ["content-type", "signed-file", "legacy-root-path"].contains($0.code) }
        if let first = warnings.first {
            add(DiagnosisStep(step: "http", title: "HTTP", status: .warned, code: first.code, summary: first.message,
                              details: httpDetails, findings: warnings, fix: first.fix))
        } else {
            add(DiagnosisStep(step: "http", title: "HTTP", status: .passed,
                              summary: "HTTP \(response.status), \(response.header("Content-Type") ?? "no Content-Type"), \(response.body.count) bytes",
                              details: httpDetails))
        }
        return (result, url, userAgent)
    }

    /// The step a transfer failure belongs to, by how far the transfer got (libcurl's connect and
    /// handshake times), not by libcurl's words: a timeout or a break before any connection is the
    /// name's (a lookup that timed out) or the connect's, after the connection and before the
    /// handshake ended TLS's, after it HTTP's. (The words made a slow name server an HTTP timeout
    /// after a handshake said to have completed.)
    static func phase(of failure: TransferFailure) -> String {
        switch failure.kind {
        case .dnsFailure, .privateAddress: return "dns"
        case .connectFailure: return "tcp"
        case .timeout, .transferFailure:
            if failure.response != nil || failure.reached == .secured { return "http" }
            if failure.reached == .connected { return "tls" }
            return failure.message.lowercased().contains("resolv") ? "dns" : "tcp"
        case .tlsUntrusted, .tlsExpired, .tlsNotYetValid, .tlsHostnameMismatch, .tlsFailure: return "tls"
        case .tooLarge, .invalidRequest, .invalidResponse, .headersTooLarge, .descriptorsExhausted, .threadsExhausted, .cancelled: return "http"
        }
    }

    static func describe(_ attempt: FetchAttempt) -> String {
        "\(attempt.url): \(attempt.outcome) in \(attempt.milliseconds) ms"
    }
}
