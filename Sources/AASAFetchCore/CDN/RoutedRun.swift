/// Which route a run downloads from (`--route`).
public enum RouteChoice: String, Sendable, Codable, Hashable, CaseIterable {
    /// Every host from its origin (the default).
    case origin
    /// Plain entries through Apple's CDN; `?mode=developer`/`managed` entries from the origin.
    case cdn
    /// The origin decides; plain entries are also fetched through the CDN and compared by meaning.
    case both
}

/// Which of a host's entries one download serves, or one need scope covers.
public enum DownloadEntries: String, Sendable, Hashable, CaseIterable {
    /// Every entry of the host (the origin route; the origin side of `--route both`).
    case all
    /// The entries without a mode (`--route cdn`'s CDN download).
    case plain
    /// The `?mode=…` entries (`--route cdn`'s origin download).
    case moded

    /// Whether this download serves `entry`.
    public func includes(_ entry: AssociatedDomainEntry) -> Bool { includes(moded: entry.mode != nil) }

    /// Whether this download serves an entry with (`moded`) or without a mode.
    public func includes(moded: Bool) -> Bool {
        switch self {
        case .all: true
        case .plain: !moded
        case .moded: moded
        }
    }
}

/// One download of a host on a run's route: the route it is fetched on and the store keys it
/// by, the entries it serves, and whether the CDN's answer is fetched alongside and compared
/// (`--route both`). ``RouteChoice/downloads(servesPlain:servesModes:)`` makes them.
public struct RoutedDownload: Sendable, Hashable {
    /// The route the download is fetched on and the store keys it by.
    public var route: Route
    /// The host's entries it serves.
    public var entries: DownloadEntries
    /// Whether the CDN's answer is fetched alongside and compared (`--route both`).
    public var comparedWithCDN: Bool

    /// Creates a download.
    public init(route: Route, entries: DownloadEntries, comparedWithCDN: Bool) {
        self.route = route
        self.entries = entries
        self.comparedWithCDN = comparedWithCDN
    }
}

extension RouteChoice {
    /// The route rule, the one place it is written: the downloads of a host that serves entries
    /// without a mode (`servesPlain`) and with one (`servesModes`), in start order.
    /// - `origin`: one download from the origin, for every entry;
    /// - `cdn`: the plain entries through Apple's CDN, then the `?mode=` entries from the origin
    ///   (devices fetch those directly);
    /// - `both`: one download from the origin for every entry, compared with the CDN's answer when
    ///   the host has plain entries (the origin decides the verdicts).
    ///
    /// The in-memory plan (``RoutedRun/split(_:route:)``), the spooled list
    /// (``RunSpool/SpooledHost/downloads(on:)``, ``RunSpool/sizes(route:)``) and the store's needs
    /// (``needScopes``) all follow it.
    public func downloads(servesPlain: Bool, servesModes: Bool) -> [RoutedDownload] {
        switch self {
        case .origin:
            return [RoutedDownload(route: .origin, entries: .all, comparedWithCDN: false)]
        case .cdn:
            return (servesPlain ? [RoutedDownload(route: .cdn, entries: .plain, comparedWithCDN: false)] : [])
                + (servesModes ? [RoutedDownload(route: .origin, entries: .moded, comparedWithCDN: false)] : [])
        case .both:
            return [RoutedDownload(route: .origin, entries: .all, comparedWithCDN: servesPlain)]
        }
    }

    /// The needs a run on this route registers, so the ones whose set it replaces
    /// (``AssociationStore/retireNeeds(appIDs:scopes:registeredBefore:now:)``): each download's
    /// route with the kind of entries it serves. A `cdn` run so leaves the plain entries an
    /// `origin` run registered on the origin alone, and a `both` run the ones a `cdn` run
    /// registered on the CDN.
    public var needScopes: [NeedScope] {
        downloads(servesPlain: true, servesModes: true).map { NeedScope(route: $0.route, entries: $0.entries) }
    }
}

/// The needs of one route and one kind of entries (with a `?mode=` or without; or all).
public struct NeedScope: Sendable, Hashable {
    /// The route the needs are registered on.
    public var route: Route
    /// Which entries: those with a mode, those without, or all.
    public var entries: DownloadEntries

    /// Creates a scope.
    public init(route: Route, entries: DownloadEntries) {
        self.route = route
        self.entries = entries
    }
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
    /// Splits a plan by route with ``RouteChoice/downloads(servesPlain:servesModes:)``: each
    /// fetch becomes its downloads on `route` (with `cdn` a host with both kinds of entries is
    /// fetched once per route); with `both` the verdict plan stays the origin's and the CDN
    /// fetches are returned for comparison.
    public static func split(_ plan: FetchPlan, route: RouteChoice) -> (plan: FetchPlan, comparison: [PlannedFetch]) {
        var routed = plan
        routed.fetches = []
        var comparison: [PlannedFetch] = []
        for fetch in plan.fetches {
            let moded = fetch.entryIndexes.map { plan.entries[$0].mode != nil }
            let downloads = route.downloads(servesPlain: moded.contains(false), servesModes: moded.contains(true))
            for download in downloads {
                func served(_ kind: DownloadEntries) -> [Int] {
                    zip(fetch.entryIndexes, moded).filter { kind.includes(moded: $0.1) }.map(\.0)
                }
                routed.fetches.append(PlannedFetch(host: fetch.host, route: download.route, tier: fetch.tier, entryIndexes: served(download.entries)))
                if download.comparedWithCDN {
                    comparison.append(PlannedFetch(host: fetch.host, route: .cdn, tier: fetch.tier, entryIndexes: served(.plain)))
                }
            }
        }
        return (routed, comparison)
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
            // The fix of the finding that decided the CDN's code (not of the first error, which may
            // be a lint finding about something else).
            let primary = cdn.findings.first { $0.code == cdn.code } ?? cdn.findings.first { $0.severity == .error }
            // A warning with a `cdn-…` code, as every CDN warning: a copy the CDN serves that is
            // not usable (`invalid-json`, …) differs in meaning from the origin's file.
            let code = cdn.code.hasPrefix("cdn-") ? cdn.code : "cdn-stale"
            var message = "Apple's CDN has no usable copy: " + (code == cdn.code ? cdn.reason : "\(cdn.code): \(cdn.reason)")
            // A copy it serves (a 200 that is not a usable file) is cached as any other.
            if cdn.httpStatus == 200 { message += "; \(cache)" }
            return (nil, [.warning(code, message, location: cdn.url, fix: primary?.fix)])
        }
    }
}
