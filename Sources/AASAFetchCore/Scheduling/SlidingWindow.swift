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
        await withTaskGroup(of: Result.self) { group in
            var next = 0
            func admit() {
                let position = next
                group.addTask { await work(position) }
                next += 1
            }
            while next < count, next < max(1, limit) { admit() }
            for await result in group {
                if next < count { admit() }
                await handle(result)
            }
        }
    }
}
