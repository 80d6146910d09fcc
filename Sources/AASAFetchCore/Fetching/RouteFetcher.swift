/// Fetches each planned host over its own route, in one window: `.origin` fetches through
/// ``AASAFetcher`` (`.well-known`, legacy path, retries, `--cacert` fallback), `.cdn` fetches
/// through ``CDNFetcher`` (`{base}{host}` over HTTP/2). Streaming runs (`--route cdn`) and
/// `refresh` (every stored route) dispatch here, so a route is fetched the same way everywhere.
public struct RouteFetcher: Sendable {
    /// The origin route.
    public let origin: AASAFetcher
    /// The CDN route.
    public let cdn: CDNFetcher

    /// Creates a fetcher over both routes.
    public init(origin: AASAFetcher, cdn: CDNFetcher) {
        self.origin = origin
        self.cdn = cdn
    }

    /// Fetches one planned host over its route; with `conditional`, the requests carry its
    /// validators and a 304 is judged on the stored file.
    public func fetch(_ planned: PlannedFetch, startOrder: Int = 0, conditional: ConditionalRequest? = nil) async -> HostFetchResult {
        switch planned.route {
        case .origin: await origin.fetch(host: planned.host, startOrder: startOrder, conditional: conditional)
        case .cdn: await cdn.fetch(host: planned.host, startOrder: startOrder, conditional: conditional)
        }
    }

    /// Fetches every planned host in plan order, at most the origin options' concurrency (times
    /// ``AASAFetcher/admissionDepth``) admitted at once over both routes, and hands each result to
    /// `handle` as it finishes (``HostFetchResult/startOrder`` is its position in `fetches`).
    ///
    /// - Parameter conditions: per host and route, a stored approved file to ask for conditionally.
    public func fetchEach(
        _ fetches: [PlannedFetch], conditions: [HostKey: ConditionalRequest] = [:], handle: (HostFetchResult) async -> Void
    ) async {
        await SlidingWindow.run(count: fetches.count, limit: origin.options.concurrency * AASAFetcher.admissionDepth, work: { position in
            let planned = fetches[position]
            return await self.fetch(planned, startOrder: position, conditional: conditions[HostKey(host: planned.host, route: planned.route)])
        }, handle: handle)
    }

    /// ``fetchEach(_:conditions:handle:)`` keeping the results, in plan order; `progress` is called
    /// after each host with the count done. A result missing because the run was cancelled is `cancelled`.
    public func fetchAll(
        _ fetches: [PlannedFetch], conditions: [HostKey: ConditionalRequest] = [:],
        progress: @escaping @Sendable (Int, HostFetchResult) -> Void = { _, _ in }
    ) async -> [HostFetchResult] {
        var results: [HostFetchResult?] = Array(repeating: nil, count: fetches.count)
        var done = 0
        await fetchEach(fetches, conditions: conditions) { result in
            results[result.startOrder] = result
            done += 1
            progress(done, result)
        }
        return results.enumerated().map { position, result in
            let planned = fetches[position]
            return result ?? HostFetchResult(
                host: planned.host, route: planned.route, url: planned.route == .cdn ? cdn.url(for: planned.host) : "",
                code: "cancelled", reason: "the run was cancelled", startOrder: position)
        }
    }
}
