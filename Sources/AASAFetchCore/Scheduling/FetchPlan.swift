/// Where a file is downloaded from.
public enum Route: String, Sendable, Codable, Hashable, CaseIterable {
    /// `https://HOST/.well-known/apple-app-site-association` directly.
    case origin
    /// Apple's CDN, `https://app-site-association.cdn-apple.com/a/v1/HOST`.
    case cdn
}

/// One download of the plan: a host, the route, its priority tier and the entries it serves.
public struct PlannedFetch: Sendable, Hashable, Codable {
    /// The ASCII host fetched.
    public var host: String
    /// The route.
    public var route: Route
    /// The priority tier (0 first).
    public var tier: Int
    /// Positions in ``FetchPlan/entries`` of the entries this download serves (not their
    /// ``AssociatedDomainEntry/index``: a plan may be built from a filtered list).
    public var entryIndexes: [Int]

    /// Creates a planned fetch.
    public init(host: String, route: Route, tier: Int, entryIndexes: [Int]) {
        self.host = host
        self.route = route
        self.tier = tier
        self.entryIndexes = entryIndexes
    }
}

/// The downloads a run makes, in the order they start: one per distinct host, by tier and then
/// entitlement order.
public struct FetchPlan: Sendable, Hashable {
    /// The parsed entries, fetchable or not.
    public var entries: [AssociatedDomainEntry]
    /// The downloads in start order.
    public var fetches: [PlannedFetch]

    /// Builds the plan for parsed entries. Each distinct host is fetched once however many
    /// entries (services, wildcards, modes) need it. A fetch's ``PlannedFetch/entryIndexes`` are
    /// positions in `entries`, whatever the entries' own indexes (`match` plans only the
    /// `applinks` entries of a list).
    public init(entries: [AssociatedDomainEntry], prioritizer: DomainPrioritizer, route: Route = .origin) {
        self.entries = entries
        var order: [String] = []
        var byHost: [String: [Int]] = [:]
        for (position, entry) in entries.enumerated() {
            guard let host = entry.host else { continue }
            if byHost[host] == nil { order.append(host) }
            byHost[host, default: []].append(position)
        }
        let unsorted = order.enumerated().map { position, host in
            (position, PlannedFetch(host: host, route: route, tier: prioritizer.tier(of: host), entryIndexes: byHost[host] ?? []))
        }
        fetches = unsorted.sorted { ($0.1.tier, $0.0) < ($1.1.tier, $1.0) }.map(\.1)
    }
}
