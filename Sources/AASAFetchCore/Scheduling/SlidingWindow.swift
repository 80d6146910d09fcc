/// Admission with a sliding window: starts `work(position)` for positions `0..<count` in order,
/// with at most `limit` running, starting the next one as soon as one finishes; hands each result
/// to `handle` in completion order and keeps none. Priority is kept by the order of admission.
public enum SlidingWindow {
    /// Runs the window. The next position is admitted before `handle` runs, so the window stays full.
    public static func run<Result: Sendable>(
        count: Int,
        limit: Int,
        work: @escaping @Sendable (Int) async -> Result,
        handle: (Result) async -> Void
    ) async {
        var position = 0
        await run(next: { () -> Int? in
            guard position < count else { return nil }
            defer { position += 1 }
            return position
        }, limit: limit, work: work, handle: handle)
    }

    /// Runs the window over items pulled one at a time from `next` (in admission order, as slots
    /// free up; `nil` ends the input), so the input need not be held whole: a paged cursor keeps
    /// the window full across its pages.
    public static func run<Item: Sendable, Result: Sendable>(
        next: () -> Item?,
        limit: Int,
        work: @escaping @Sendable (Item) async -> Result,
        handle: (Result) async -> Void
    ) async {
        await withTaskGroup(of: Result.self) { group in
            var exhausted = false
            func admit() {
                // A cancelled window starts nothing new; what runs finishes (cancelled) and is handed over.
                guard !exhausted, !Task.isCancelled else { return }
                guard let item = next() else {
                    exhausted = true
                    return
                }
                group.addTask { await work(item) }
            }
            for _ in 0..<max(1, limit) { admit() }
            for await result in group {
                admit()
                await handle(result)
            }
        }
    }
}
