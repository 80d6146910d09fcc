import CurlTransport

/// One route's downloader as the run's fetch stage (``RouteFetcher``) drives it: the origin
/// (``AASAFetcher``) or Apple's CDN (``CDNFetcher``). The window sends a host's first request
/// itself, without a task; ``settle(host:startOrder:conditional:answered:)`` then decides the
/// host from that answer alone, the same way on every route, or leaves it to the route's
/// ``fetch(host:startOrder:conditional:answered:)``.
protocol RouteSide: Sendable {
    /// The fetcher whose transport, options and retry rules the route's requests use.
    var requester: AASAFetcher { get }
    /// The URL of a host's first request.
    func firstURL(for host: String) -> String
    /// The host's result from the outcome of its first request, when that outcome decides it
    /// alone on this route; `nil` when the route has another request to make.
    func decided(_ outcome: AASAFetcher.Outcome, host: String, url: String) -> HostFetchResult?
    /// The host's whole fetch, going on from `answered` (the answer to its first request) when given.
    func fetch(host: String, startOrder: Int, conditional: ConditionalRequest?, answered: AASAFetcher.Answer?) async -> HostFetchResult
}

extension RouteSide {
    /// The first request of a host's fetch, with the `--cacert` CA first and `conditional`'s validators.
    func firstRequest(host: String, conditional: ConditionalRequest?) -> TransferRequest {
        let url = firstURL(for: host)
        return requester.transferRequest(url: url, caFile: requester.options.extraCAFile,
                                         headers: conditional?.applying(to: url, maxSize: requester.options.maxSize)?.requestHeaders ?? [])
    }

    /// The host's result when the answer to ``firstRequest(host:conditional:)`` decides it alone,
    /// exactly as ``fetch(host:startOrder:conditional:answered:)`` would give it; `nil` when another
    /// request is due (the `--cacert` fallback, a retry, or the route's own next request).
    func settle(host: String, startOrder: Int, conditional: ConditionalRequest?, answered: AASAFetcher.Answer) -> HostFetchResult? {
        let url = firstURL(for: host)
        var attempts: [FetchAttempt] = []
        guard let outcome = requester.settledOutcome(url: url, attempts: &attempts, conditional: conditional, answered: answered),
              var result = decided(outcome, host: host, url: url) else { return nil }
        result.attempts = attempts
        result.startOrder = startOrder
        return result
    }
}
