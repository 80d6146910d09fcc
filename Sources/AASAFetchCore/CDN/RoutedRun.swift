/// Which route a run downloads from (`--route`).
public enum RouteChoice: String, Sendable, Codable, Hashable, CaseIterable {
    /// Every host from its origin (the default).
    case origin
    /// Plain entries through Apple's CDN; `?mode=developer`/`managed` entries from the origin.
    case cdn
    /// The origin decides; plain entries are also fetched through the CDN and compared by meaning.
    case both
}

/// Apple's CDN's answer for one host, as the `cdn` sub-record of a domain record.
///
/// JSON shape (every key present): `{"url", "code", "associated", "reason", "httpStatus",
/// "appIDs": {service: [id]}, "headers": CDNHeaders, "changes": [AASAChange] | null, "findings", "attempts"}`.
/// `changes` is set only with `--route both` when both sides delivered a file: what the origin's
/// file has that the CDN's copy lacks (from the CDN copy to the origin file), empty when they mean the same.
public struct CDNRecord: Sendable, Encodable {
    /// The CDN URL fetched.
    public var url: String
    /// `ok`, or the CDN side's first failure code (`cdn-origin-failure`, `cdn-not-found`, `app-not-listed`, …).
    public var code: String
    /// Whether the CDN's copy associates the app (`nil` when no app ID is known).
    public var associated: Bool?
    /// One line on the CDN's answer.
    public var reason: String
    /// The CDN's HTTP status.
    public var httpStatus: Int?
    /// The app IDs the CDN's copy lists, per service.
    public var appIDs: [String: [String]]
    /// The CDN's headers, decoded (`nil` when no answer came).
    public var headers: CDNHeaders?
    /// With `--route both`: the differences from the CDN's copy to the origin's file.
    public var changes: [AASAChange]?
    /// Findings about the CDN's answer.
    public var findings: [Finding]
    /// Every request made to the CDN.
    public var attempts: [FetchAttempt]

    /// Builds the record from the CDN side's domain record and result.
    public init(domain: DomainReport, result: HostFetchResult?, changes: [AASAChange]? = nil) {
        url = domain.url
        code = domain.code
        associated = domain.associated
        reason = domain.reason
        httpStatus = domain.httpStatus
        appIDs = domain.appIDs
        headers = result?.cdn
        self.changes = changes
        findings = domain.findings
        attempts = domain.attempts
    }

    /// Builds the record straight from a CDN result (for `diagnose`).
    public init(result: HostFetchResult, associated: Bool?, changes: [AASAChange]?) {
        url = result.url
        code = result.code
        self.associated = associated
        reason = result.reason
        httpStatus = result.httpStatus
        var byService: [String: [String]] = [:]
        for service in result.document?.services ?? [] {
            byService[service.name] = result.document?.appIDs(for: service)
        }
        appIDs = byService
        headers = result.cdn
        self.changes = changes
        findings = result.findings
        attempts = result.attempts
    }
}

/// How a run's plan is split over the chosen route, and how `--route both` compares a host's two
/// answers. The run itself is the one pipeline of every fetch (`RouteFetcher.fetchEach(next:handle:)`,
/// then the judge and the sinks, host by host in start order).
public enum RoutedRun {
    /// Splits a plan by route. `?mode=developer`/`managed` entries always go to the origin; with
    /// `cdn` a host with both kinds of entries is fetched once per route; with `both` the verdict
    /// plan stays the origin's and the CDN fetches are returned for comparison.
    public static func split(_ plan: FetchPlan, route: RouteChoice) -> (plan: FetchPlan, comparison: [PlannedFetch]) {
        func isDirect(_ index: Int) -> Bool { plan.entries[index].mode != nil }
        switch route {
        case .origin:
            return (plan, [])
        case .cdn:
            var routed = plan
            routed.fetches = plan.fetches.flatMap { fetch -> [PlannedFetch] in
                let viaCDN = fetch.entryIndexes.filter { !isDirect($0) }
                let direct = fetch.entryIndexes.filter(isDirect)
                var split: [PlannedFetch] = []
                if !viaCDN.isEmpty { split.append(PlannedFetch(host: fetch.host, route: .cdn, tier: fetch.tier, entryIndexes: viaCDN)) }
                if !direct.isEmpty { split.append(PlannedFetch(host: fetch.host, route: .origin, tier: fetch.tier, entryIndexes: direct)) }
                return split
            }
            return (routed, [])
        case .both:
            let comparison = plan.fetches.compactMap { fetch -> PlannedFetch? in
                let viaCDN = fetch.entryIndexes.filter { !isDirect($0) }
                return viaCDN.isEmpty ? nil : PlannedFetch(host: fetch.host, route: .cdn, tier: fetch.tier, entryIndexes: viaCDN)
            }
            return (plan, comparison)
        }
    }

    /// The judge's step for a CDN record: the `cdn` sub-record of a domain fetched through the CDN
    /// (`--route cdn`).
    public static func attachCDNRecord(to domain: inout DomainReport, result: HostFetchResult) {
        if domain.route == .cdn { domain.cdn = CDNRecord(domain: domain, result: result) }
    }

    /// The judge's step for `--route both`, once a host's two answers are in: attaches the CDN
    /// side (`cdnDomain`, judged on verdicts of its own so the CDN never changes the entries'
    /// verdicts) and the by-meaning comparison to the origin's domain record; `cdn-stale` and CDN
    /// failures are warnings, so the origin alone decides the verdict and the exit status.
    public static func attachComparison(
        to domain: inout DomainReport, origin: HostFetchResult, cdnDomain: DomainReport, cdnResult: HostFetchResult
    ) {
        let originResult = origin.route == .origin ? origin : nil
        let comparison = compare(origin: originResult, originAssociated: domain.associated,
                                 cdn: cdnResult, cdnAssociated: cdnDomain.associated)
        domain.cdn = CDNRecord(domain: cdnDomain, result: cdnResult, changes: comparison.changes)
        domain.findings += comparison.findings
    }

    /// Compares the origin's and the CDN's answers for one host by meaning.
    /// - Returns: the changes from the CDN copy to the origin file (when both delivered one) and
    ///   warning findings for the domain record.
    public static func compare(
        origin: HostFetchResult?, originAssociated: Bool?, cdn: HostFetchResult, cdnAssociated: Bool?
    ) -> (changes: [AASAChange]?, findings: [Finding]) {
        let cache = cdn.cdn?.cacheSummary ?? "no cache headers"
        let fix = "nothing to change on the server if the origin is right: the CDN refreshes about once a day and devices about once a week (reinstalling the app fetches again); test with ?mode=developer meanwhile"
        switch (origin?.document, cdn.document) {
        case (let originDocument?, let cdnDocument?):
            let changes = AASADiff.changes(from: cdnDocument, to: originDocument)
            guard !changes.isEmpty else { return ([], []) }
            var message = "Apple's CDN serves a copy that differs in meaning from the origin's file (\(changes.count) difference\(changes.count == 1 ? "" : "s"): \(changes[0].description)); \(cache)"
            if cdnAssociated == false, originAssociated == true {
                message += "; devices using the CDN do not associate until it refreshes"
            }
            return (changes, [.warning("cdn-stale", message, location: cdn.url, fix: fix)])
        case (nil, _?):
            let state = origin.map { $0.code } ?? "not fetched"
            return (nil, [.warning("cdn-stale",
                                   "Apple's CDN still serves a copy that the origin no longer delivers (origin: \(state)); devices keep it until the CDN refreshes; \(cache)",
                                   location: cdn.url, fix: "fix the origin before the CDN's copy expires")])
        case (_, nil):
            let primary = cdn.findings.first { $0.severity == .error }
            let message = "Apple's CDN has no usable copy: \(cdn.reason)"
            return (nil, [.warning(cdn.code, message, location: cdn.url, fix: primary?.fix)])
        }
    }
}
