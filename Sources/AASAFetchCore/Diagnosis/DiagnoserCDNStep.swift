import Foundation

// The `cdn` step of a diagnosis: Apple's CDN's answer, compared by meaning with the origin's.

extension Diagnoser.Walk {
    /// The CDN step: fetches the CDN's copy; with `origin` compares it by meaning.
    /// - Returns: the CDN result (for `--route cdn`, the one the body steps judge).
    mutating func cdnStep(host: String, service: Service, origin: HostFetchResult?, diagnoser: Diagnoser) async -> HostFetchResult? {
        let result: HostFetchResult
        if let seen = diagnoser.memo.cdn(host) {
            result = seen
        } else {
            let fetcher = CDNFetcher(transport: diagnoser.cdnTransport, options: diagnoser.options, base: diagnoser.cdnBase)
            result = await fetcher.fetch(host: host)
            diagnoser.memo.keep(cdn: result, for: host)
        }
        let headers = result.cdn
        // A transfer that failed after a whole header block keeps that status: the failure first.
        let outcome: String
        if let attempt = result.attempts.last, attempt.code != "ok" {
            outcome = attempt.outcome
        } else {
            outcome = result.httpStatus.map { "HTTP \($0)" } ?? result.code
        }
        var details = ["GET \(result.url) → " + outcome
            + (headers.map { $0.httpVersion.isEmpty ? "" : " over HTTP/\($0.httpVersion)" } ?? "")]
        if let headers {
            if let reason = headers.failureReason {
                details.append("Apple-Failure-Reason: \(reason)" + (headers.swcError.map { " (code \($0)" + (headers.originStatus.map { ", origin status \($0))" } ?? ")") } ?? ""))
            }
            if let decoded = headers.failureDetails {
                details.append("Apple-Failure-Details: " + decoded.keys.sorted().map { "\($0) = \(decoded[$0] ?? "")" }.joined(separator: "; "))
            } else if let raw = headers.failureDetailsRaw {
                details.append("Apple-Failure-Details: \(raw)")
            }
            if let from = headers.from { details.append("Apple-From: \(from)") }
            if let direct = headers.tryDirect { details.append("Apple-Try-Direct: \(direct)") }
            if let format = headers.originFormat { details.append("Apple-Origin-Format: \(format)") }
            details.append(headers.cacheSummary)
        }
        let listed = result.document.map { $0.appIDs(for: service) }
        let cdnAssociated: Bool? = listed.map { ids in appIDs.isEmpty ? nil : appIDs.allSatisfy(ids.contains) } ?? false

        var changes: [AASAChange]?
        if let origin, let originDocument = origin.document, let cdnDocument = result.document {
            changes = AASADiff.changes(from: cdnDocument, to: originDocument)
        }
        let record = CDNRecord(result: result, associated: cdnAssociated, changes: changes)
        diagnosis.cdn = record
        let primary = result.findings.first { $0.severity == .error }

        if result.code.hasPrefix("cdn-") {
            add(DiagnosisStep(step: "cdn", title: "Apple CDN", status: .failed, code: result.code, summary: result.reason,
                              details: details, findings: result.findings, fix: primary?.fix))
            return nil
        }
        guard let origin else {
            // --route cdn: the body steps judge the CDN's copy.
            add(DiagnosisStep(step: "cdn", title: "Apple CDN", status: .passed, summary: "the CDN answers 200", details: details))
            return result
        }
        if result.code != "ok" {
            add(DiagnosisStep(step: "cdn", title: "Apple CDN", status: .failed, code: result.code,
                              summary: "the CDN's copy is unusable: \(result.reason)", details: details,
                              findings: result.findings, fix: primary?.fix))
            return result
        }
        if let changes, !changes.isEmpty {
            let originAssociated = appIDs.isEmpty ? nil : Optional(appIDs.allSatisfy(origin.document?.appIDs(for: service).contains ?? { _ in false }))
            let comparison = RoutedRun.compare(origin: origin, originAssociated: originAssociated, cdn: result, cdnAssociated: cdnAssociated)
            let finding = comparison.findings.first
            details += changes.map { "differs: \($0.description)" }
            let blocking = cdnAssociated == false
            add(DiagnosisStep(step: "cdn", title: "Apple CDN", status: blocking ? .failed : .warned, code: "cdn-stale",
                              summary: (finding?.message ?? "the CDN's copy differs from the origin's file")
                                + (blocking ? "; the CDN's copy does not list the app, so devices do not associate yet" : ""),
                              details: details, findings: comparison.findings, fix: finding?.fix))
            return result
        }
        add(DiagnosisStep(step: "cdn", title: "Apple CDN", status: .passed,
                          summary: "the CDN serves a copy that means the same as the origin's file", details: details))
        return result
    }
}
