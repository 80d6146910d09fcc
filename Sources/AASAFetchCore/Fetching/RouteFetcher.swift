import CurlTransport
import Synchronization

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
    /// once (and at most ``CDNFetcher/maxStreams`` of them using the CDN: a host waiting for a
    /// stream holds back the hosts after it, so start order is kept), and hands each host on to
    /// `handle` as it finishes, in completion order
    /// (``HostFetchResult/startOrder`` is the position in which `next` gave it). A plan in memory,
    /// a run spool's cursor and a refresh's claimed batch all feed it, so a route is fetched the
    /// same way everywhere. Keeps nothing once `handle` returns.
    public func fetchEach(next: () -> RunFetch?, handle: (FetchedHost) async -> Void) async {
        let limit = max(1, AASAFetcher.admissionLimit(concurrency: origin.options.concurrency))
        // Not an AsyncStream: its iteration ends when the task is cancelled, and a cancelled
        // window still hands over every host it started.
        let sink = EventQueue<WindowEvent>()
        let inFlight = InFlight()
        var position = 0
        var admitted = 0
        var exhausted = false
        // Hosts under way that use the CDN, and the next host when it waits for a CDN stream.
        var onCDN = 0
        var held: RunFetch?

        // Starts hosts while the window has room: each first request goes to the transport as a
        // plain value (no task); a `--route both` host, whose two fetches run at once, gets a task.
        func admit() {
            // A cancelled window starts nothing new; what runs finishes (cancelled) and is handed over.
            while admitted < limit, !exhausted, !Task.isCancelled {
                guard let unit = held ?? next() else {
                    exhausted = true
                    return
                }
                let viaCDN = Self.usesCDN(unit)
                guard !viaCDN || onCDN < CDNFetcher.maxStreams else {
                    held = unit
                    return
                }
                held = nil
                if viaCDN { onCDN += 1 }
                let order = position
                position += 1
                admitted += 1
                if let (request, transport) = firstRequest(unit) {
                    let started = ContinuousClock.now
                    let ticket = transport.start(request) { result in
                        sink.push(.answered(order, unit, (result, AASAFetcher.milliseconds(ContinuousClock.now - started))))
                    }
                    inFlight.add(order, .transfer(ticket, transport))
                } else {
                    inFlight.add(order, .task(Task { sink.push(.fetched(order, unit, await self.fetch(unit, startOrder: order))) }))
                }
            }
        }

        await withTaskCancellationHandler {
            admit()
            while admitted > 0 {
                let event = await sink.next()
                let fetched: FetchedHost
                let unit: RunFetch
                switch event {
                case .answered(let order, let answeredUnit, let answer):
                    inFlight.remove(order)
                    guard let settled = settle(answeredUnit, startOrder: order, answered: answer) else {
                        // Another request is due (a retry, the legacy path…): the rest in a task.
                        inFlight.add(order, .task(Task {
                            sink.push(.fetched(order, answeredUnit, await self.finish(answeredUnit, startOrder: order, answered: answer)))
                        }))
                        continue
                    }
                    fetched = settled
                    unit = answeredUnit
                case .fetched(let order, let fetchedUnit, let result):
                    inFlight.remove(order)
                    fetched = result
                    unit = fetchedUnit
                }
                admitted -= 1
                if Self.usesCDN(unit) { onCDN -= 1 }
                admit()
                await handle(fetched)
            }
        } onCancel: {
            inFlight.cancelAll()
        }
    }

    /// What the window hears from a host: the answer to its first request, or its whole result.
    private enum WindowEvent: Sendable {
        case answered(Int, RunFetch, AASAFetcher.Answer)
        case fetched(Int, RunFetch, FetchedHost)
    }

    /// Whether a unit takes a stream of the CDN's connection (its own fetch, or its comparison).
    private static func usesCDN(_ unit: RunFetch) -> Bool {
        unit.planned.route == .cdn || unit.comparison?.route == .cdn
    }

    /// The first request of a unit that the window starts without a task, and the transport of
    /// its route (`refresh` has a client of its own for the CDN); `nil` for a `--route both` unit.
    private func firstRequest(_ unit: RunFetch) -> (TransferRequest, any HTTPTransferring)? {
        guard unit.comparison == nil else { return nil }
        switch unit.planned.route {
        case .origin: return (origin.firstRequest(host: unit.planned.host, conditional: unit.conditional), origin.transport)
        case .cdn: return (cdn.firstRequest(host: unit.planned.host, conditional: unit.conditional), cdn.requester.transport)
        }
    }

    /// The unit's result when the answer to its first request decides it; `nil` when another request is due.
    private func settle(_ unit: RunFetch, startOrder: Int, answered: AASAFetcher.Answer) -> FetchedHost? {
        let host = unit.planned.host
        let result = switch unit.planned.route {
        case .origin: origin.settle(host: host, startOrder: startOrder, conditional: unit.conditional, answered: answered)
        case .cdn: cdn.settle(host: host, startOrder: startOrder, conditional: unit.conditional, answered: answered)
        }
        return result.map { FetchedHost(result: $0) }
    }

    /// The rest of a unit's fetch after the answer to its first request.
    private func finish(_ unit: RunFetch, startOrder: Int, answered: AASAFetcher.Answer) async -> FetchedHost {
        let host = unit.planned.host
        return switch unit.planned.route {
        case .origin: FetchedHost(result: await origin.fetch(host: host, startOrder: startOrder, conditional: unit.conditional, answered: answered))
        case .cdn: FetchedHost(result: await cdn.fetch(host: host, startOrder: startOrder, conditional: unit.conditional, answered: answered))
        }
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

/// The hosts a window has under way, so that cancelling the window cancels each: a transfer by
/// its ticket, a host that needs more than one request by its task.
private final class InFlight: Sendable {
    enum Work: Sendable {
        case transfer(TransferTicket, any HTTPTransferring)
        case task(Task<Void, Never>)
    }

    private let state = Mutex<(work: [Int: Work], cancelled: Bool)>(([:], false))

    /// Adds a host's work; cancels it at once when the window is cancelled already.
    func add(_ order: Int, _ work: Work) {
        let cancelled = state.withLock { state in
            if !state.cancelled { state.work[order] = work }
            return state.cancelled
        }
        if cancelled { cancel(work) }
    }

    /// Forgets a host's work (it has answered).
    func remove(_ order: Int) {
        _ = state.withLock { $0.work.removeValue(forKey: order) }
    }

    /// Cancels everything under way and whatever is added later.
    func cancelAll() {
        let work = state.withLock { state in
            state.cancelled = true
            defer { state.work = [:] }
            return Array(state.work.values)
        }
        for item in work { cancel(item) }
    }

    private func cancel(_ work: Work) {
        switch work {
        case .transfer(let ticket, let transport): transport.cancel(ticket)
        case .task(let task): task.cancel()
        }
    }
}

/// A queue of values pushed from any thread and taken by one consumer, which waits for the next
/// one whether or not its task is cancelled.
private final class EventQueue<Element: Sendable>: Sendable {
    private struct State: ~Copyable {
        var buffer: [Element] = []
        var head = 0
        var waiter: CheckedContinuation<Element, Never>?
    }

    private let state = Mutex(State())

    /// Hands `element` to the waiting consumer, or keeps it for the next ``next()``.
    func push(_ element: Element) {
        let waiter = state.withLock { state -> CheckedContinuation<Element, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.buffer.append(element)
            return nil
        }
        waiter?.resume(returning: element)
    }

    /// The oldest element not taken yet, waiting for one if there is none. One consumer at a time.
    func next() async -> Element {
        if let element = state.withLock({ Self.take(&$0) }) { return element }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Element, Never>) in
            let element = state.withLock { state -> Element? in
                guard let element = Self.take(&state) else {
                    state.waiter = continuation
                    return nil
                }
                return element
            }
            if let element { continuation.resume(returning: element) }
        }
    }

    private static func take(_ state: inout State) -> Element? {
        guard state.head < state.buffer.count else { return nil }
        let element = state.buffer[state.head]
        state.head += 1
        if state.head == state.buffer.count {
            state.buffer.removeAll(keepingCapacity: true)
            state.head = 0
        } else if state.head >= 1024, state.head * 2 >= state.buffer.count {
            // Never drained to empty: drop what was taken so the buffer stays as long as what waits.
            state.buffer.removeFirst(state.head)
            state.head = 0
        }
        return element
    }
}
