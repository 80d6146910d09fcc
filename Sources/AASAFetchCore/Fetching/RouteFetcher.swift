/// Fetches each planned host over its own route, in one window: `.origin` fetches through
/// ``AASAFetcher`` (`.well-known`, legacy path, retries, `--cacert` fallback), `.cdn` fetches
/// through ``CDNFetcher`` (`{base}{host}` over HTTP/2). Every fetch run (each route, a plan in memory or a spool) and
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

    /// Fetches one host of a run: its verdict fetch and, at the same time, its comparison fetch
    /// (`--route both`), so the pair is handed on together.
    public func fetch(_ unit: RunFetch, startOrder: Int) async -> FetchedHost {
        guard let comparison = unit.comparison else {
            return FetchedHost(result: await fetch(unit.planned, startOrder: startOrder, conditional: unit.conditional))
        }
        async let compared = fetch(comparison, startOrder: startOrder)
        let result = await fetch(unit.planned, startOrder: startOrder, conditional: unit.conditional)
        return FetchedHost(result: result, comparison: await compared)
    }

    /// The fetch stage of every run: pulls hosts one at a time from `next` (in start order, as
    /// slots free up; `nil` ends the input), fetches each over its route with at most
    /// ``AASAFetcher/admissionLimit(concurrency:)`` of the origin options' concurrency admitted at
    /// once, and hands each host on to `handle` as it finishes, in completion order
    /// (``HostFetchResult/startOrder`` is the position in which `next` gave it). A plan in memory,
    /// a run spool's cursor and a refresh's claimed batch all feed it, so a route is fetched the
    /// same way everywhere. Keeps nothing once `handle` returns.
    public func fetchEach(next: () -> RunFetch?, handle: (FetchedHost) async -> Void) async {
        var position = 0
        await SlidingWindow.run(next: { () -> (unit: RunFetch, position: Int)? in
            guard let unit = next() else { return nil }
            defer { position += 1 }
            return (unit, position)
        }, limit: AASAFetcher.admissionLimit(concurrency: origin.options.concurrency), work: { item in
            await self.fetch(item.unit, startOrder: item.position)
        }, handle: handle)
    }

    /// Fetches every planned host in plan order through ``fetchEach(next:handle:)`` and hands
    /// each result to `handle` as it finishes (``HostFetchResult/startOrder`` is its position in `fetches`).
    ///
    /// - Parameter conditions: per host and route, a stored approved file to ask for conditionally.
    public func fetchEach(
        _ fetches: [PlannedFetch], conditions: [HostKey: ConditionalRequest] = [:], handle: (HostFetchResult) async -> Void
    ) async {
        var position = 0
        await fetchEach(next: { () -> RunFetch? in
            guard position < fetches.count else { return nil }
            let planned = fetches[position]
            position += 1
            return RunFetch(planned: planned, conditional: conditions[HostKey(host: planned.host, route: planned.route)])
        }, handle: { fetched in await handle(fetched.result) })
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

/// One host of a run as the fetch stage admits it: the fetch whose result decides, its
/// conditional request (refresh), and with `--route both` the CDN fetch compared with it.
public struct RunFetch: Sendable {
    /// The fetch whose result is judged and recorded.
    public var planned: PlannedFetch
    /// The stored validators and file, for a conditional request.
    public var conditional: ConditionalRequest?
    /// With `--route both`: the CDN fetch of the same host, compared by meaning.
    public var comparison: PlannedFetch?

    /// Creates a unit.
    public init(planned: PlannedFetch, conditional: ConditionalRequest? = nil, comparison: PlannedFetch? = nil) {
        self.planned = planned
        self.conditional = conditional
        self.comparison = comparison
    }
}

/// What the fetch stage hands on for one host: its result and, with `--route both`, the CDN's
/// answer for comparison (both kept only until the host is judged).
public struct FetchedHost: Sendable {
    /// The result of ``RunFetch/planned``.
    public var result: HostFetchResult
    /// The result of ``RunFetch/comparison``.
    public var comparison: HostFetchResult?

    /// Creates one.
    public init(result: HostFetchResult, comparison: HostFetchResult? = nil) {
        self.result = result
        self.comparison = comparison
    }
}
