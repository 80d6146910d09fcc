import CurlTransport
import Foundation

/// How a download is classified for the refresh schedule.
public enum RefreshOutcome: String, Sendable, Hashable, Codable {
    /// A file that decoded (`ok`), with a 200.
    case approved
    /// A 304 answer to a conditional request: the stored approved file stands.
    case notModified = "not-modified"
    /// A failure that may go away by itself: 5xx, 429, timeouts, connection, DNS and transfer failures.
    case transient
    /// Any other failure: redirects, 4xx, TLS, a body that is not an association file, too large.
    case denied
}

/// When a host is checked again, and what recording a download changes. Pure: the
/// current time is passed in, so tests use any clock.
///
/// - approved (200 or 304): after the response's `max-age` (`Cache-Control`) bounded to
///   ``minimumAge``…``maximumAge``, ``defaultAge`` when absent;
/// - transient failure: after ``transientRetry`` for the first ``transientRetries`` failures in a
///   row, then after ``longRetry``;
/// - denied: after ``deniedRetry``.
///
/// A failure never erases the last approved body or its validators.
public struct RefreshPolicy: Sendable, Hashable {
    /// The shortest approved lifetime (1 h).
    public var minimumAge: TimeInterval = 3600
    /// The longest approved lifetime (7 d).
    public var maximumAge: TimeInterval = 7 * 86400
    /// The approved lifetime without `max-age` (24 h).
    public var defaultAge: TimeInterval = 86400
    /// The pause after a transient failure (3 h).
    public var transientRetry: TimeInterval = 3 * 3600
    /// How many transient failures in a row get ``transientRetry`` (8).
    public var transientRetries: Int = 8
    /// The pause after that (24 h).
    public var longRetry: TimeInterval = 86400
    /// The pause after a denied answer (24 h).
    public var deniedRetry: TimeInterval = 86400

    /// The documented refresh policy.
    public init() {}

    /// Failure codes that are transient (429 keeps `http-client-error` but is transient): the
    /// network's, and the CDN's when it could not be reached (`cdn-unreachable`).
    public static let transientCodes: Set<String> = [
        "dns-failure", "connect-failure", "timeout", "transfer-failure", "http-server-error", "cdn-unreachable",
    ]

    /// Classifies a download. A CDN answer of 5xx (`cdn-http-error`) is transient as an
    /// origin's is.
    public func classify(_ result: HostFetchResult) -> RefreshOutcome {
        if result.code == "ok" { return result.httpStatus == 304 ? .notModified : .approved }
        if Self.transientCodes.contains(result.code) || result.httpStatus == 429 { return .transient }
        if result.code == "cdn-http-error", let status = result.httpStatus, (500...599).contains(status) { return .transient }
        return .denied
    }

    /// The `max-age` of a `Cache-Control` header value, in seconds, when present and valid.
    public static func maxAge(cacheControl: String?) -> TimeInterval? {
        guard let cacheControl else { return nil }
        for directive in cacheControl.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, parts[0].lowercased() == "max-age" else { continue }
            let value = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            guard !value.isEmpty, value.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { continue }
            // Digits too many for an integer are the largest age (RFC 9111 §1.2.2: 2^31 s), not absent.
            return TimeInterval(Int(value) ?? Int(Int32.max))
        }
        return nil
    }

    /// The lifetime of an approved response with these headers. Several `Cache-Control` lines
    /// make one list, as RFC 9110 §5.3 reads them.
    public func approvedLifetime(headers: [HTTPHeader]) -> TimeInterval {
        let lines = headers.filter { $0.name.equalsIgnoringASCIICase("cache-control") }.map(\.value)
        let cacheControl = lines.isEmpty ? nil : lines.joined(separator: ", ")
        guard let age = Self.maxAge(cacheControl: cacheControl) else { return defaultAge }
        return min(max(age, minimumAge), maximumAge)
    }

    /// `now` plus `delay`, rounded up to a whole second. Times are shown and taken (`--now`) in
    /// whole seconds: a next check kept with its fraction was shown as `10:01:00Z` and was not
    /// due at `--now 10:01:00Z`.
    static func checkTime(_ now: Date, after delay: TimeInterval) -> Date {
        Date(timeIntervalSince1970: (now.timeIntervalSince1970 + delay).rounded(.up))
    }

    /// The pause after a failure, given the failures in a row including this one.
    public func failureDelay(_ outcome: RefreshOutcome, consecutiveFailures: Int) -> TimeInterval {
        switch outcome {
        case .transient: consecutiveFailures <= transientRetries ? transientRetry : longRetry
        case .denied: deniedRetry
        case .approved, .notModified: defaultAge
        }
    }

    /// What recording `result` changes for a host in state `previous` (`nil`: never fetched),
    /// at `now`, for the entries and apps that need it.
    ///
    /// - Parameters:
    ///   - result: the download (a 304 comes back from ``AASAFetcher`` as `ok` with status 304 and the stored body).
    ///   - previous: the stored state before it.
    ///   - needs: the entries and app IDs that need this host, for `association-lost`/`-gained`.
    ///   - now: the current time.
    /// - Returns: the update to record; `nil` for a run error (``HostFetchResult/isRunError``: a
    ///   cancelled download, a descriptor shortage), which is never recorded.
    public func update(for result: HostFetchResult, previous: HostState?, needs: [EntryNeed], now: Date) -> HostUpdate? {
        guard !result.isRunError else { return nil }
        let key = HostKey(host: result.host, route: result.route)
        let outcome = classify(result)
        let stored = StoredResult(
            code: result.code, reason: result.reason, httpStatus: result.httpStatus, url: result.url,
            headers: result.headers, body: result.body, fetchedAt: now
        )
        var events: [HistoryEvent] = []
        func event(_ kind: HistoryKind, _ detail: HistoryDetail) {
            events.append(HistoryEvent(key: key, at: now, kind: kind, detail: detail))
        }
        let previousCode = previous?.lastResult?.code
        let wasApproved = previous?.isApproved ?? false

        switch outcome {
        case .approved, .notModified:
            let body = result.body ?? []
            let oldDocument = previous?.approvedDocument
            if !wasApproved {
                event(.approved, HistoryDetail(code: "ok", previousCode: previousCode, reason: result.reason, httpStatus: result.httpStatus))
            }
            if let oldDocument, let newDocument = result.document, previous?.approvedBody != body {
                let changes = AASADiff.changes(from: oldDocument, to: newDocument)
                if !changes.isEmpty {
                    event(.changed, HistoryDetail(httpStatus: result.httpStatus, changes: changes))
                }
                for need in needs where !need.appID.isEmpty {
                    let before = oldDocument.appIDs(for: need.service).contains(need.appID)
                    let after = newDocument.appIDs(for: need.service).contains(need.appID)
                    if before && !after {
                        event(.associationLost, HistoryDetail(
                            reason: "\(need.appID) is no longer listed for \(need.service.name) in the file of \(key.host)",
                            appID: need.appID, entry: need.entry, service: need.service))
                    } else if !before && after {
                        event(.associationGained, HistoryDetail(
                            reason: "\(need.appID) is now listed for \(need.service.name) in the file of \(key.host)",
                            appID: need.appID, entry: need.entry, service: need.service))
                    }
                }
            }
            var validators = CacheValidators(headers: result.headers)
            if outcome == .notModified, let kept = previous?.validators {
                validators.etag = validators.etag ?? kept.etag
                validators.lastModified = validators.lastModified ?? kept.lastModified
            }
            var update = HostUpdate(
                key: key, result: stored, approvedBody: body, validators: validators, consecutiveFailures: 0,
                nextCheck: Self.checkTime(now, after: approvedLifetime(headers: result.headers)), outcome: outcome, events: events
            )
            update.judgedAgainst = previous?.lastResult?.fetchedAt
            update.downloadedAt = result.finishedAt
            return update
        case .transient, .denied:
            // Saturating: the count read from a store can be anything (a tampered file).
            let failures = min(max(previous?.consecutiveFailures ?? 0, 0), Int.max - 1) + 1
            let detail = HistoryDetail(code: result.code, previousCode: previousCode, reason: result.reason, httpStatus: result.httpStatus)
            if wasApproved {
                event(.broke, detail)
            } else if previousCode != result.code {
                event(.failed, detail)
            }
            var update = HostUpdate(
                key: key, result: stored, approvedBody: nil, validators: nil, consecutiveFailures: failures,
                nextCheck: Self.checkTime(now, after: failureDelay(outcome, consecutiveFailures: failures)), outcome: outcome, events: events
            )
            update.judgedAgainst = previous?.lastResult?.fetchedAt
            update.downloadedAt = result.finishedAt
            return update
        }
    }
}
