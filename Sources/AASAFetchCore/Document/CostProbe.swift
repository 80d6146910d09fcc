import Synchronization

/// Counts units of work (key comparisons, hash lookups, details visited) while a test looks, so
/// that how the cost of parsing, linting and diffing grows with the input is checked without
/// timing anything. Outside such a test no counter is installed and counting is a task-local read.
enum CostProbe {
    /// A running total.
    final class Counter: Sendable {
        private let total = Atomic<Int>(0)

        /// The units counted so far.
        var units: Int { total.load(ordering: .relaxed) }

        func add(_ n: Int) { total.add(n, ordering: .relaxed) }
    }

    /// The counter of the current task, when a test installed one.
    @TaskLocal static var counter: Counter?

    /// Adds `n` units to the installed counter, if any.
    static func count(_ n: Int) {
        counter?.add(n)
    }

    /// The units `body` counts.
    static func measure(_ body: () throws -> Void) rethrows -> Int {
        let counter = Counter()
        try $counter.withValue(counter) { try body() }
        return counter.units
    }
}
