/// How many transfers one loop runs at once below the `--concurrency` limit, by how busy its thread
/// is.
///
/// Most of a host's time is network latency, so a crawl needs many transfers in flight to keep a
/// loop working. But once the loop's thread wants the CPU all the time (its CPU is the bottleneck,
/// as on a fast network), more transfers in flight add no speed: they wait for the thread, each
/// holding its TLS state (about 70 KiB) and growing older against its timeouts. So the loop
/// measures, over short windows, the share of wall time its thread was running or waiting to run
/// (`/proc/thread-self/schedstat`; without it, the time spent outside `epoll_wait`), smooths
/// it, and keeps a target. While the target binds and the thread has idle time, the target grows:
/// by a quarter while the thread is idle most of the time (a crawl waiting on the network ramps up
/// within a fraction of a second), and by a 32nd once the thread is busy more than
/// ``fastGrowBelow`` of the time. Near that point more transfers seldom bring more speed: on a
/// machine whose cores are all taken (by the loops and the server, on loopback), a loop waits now
/// and then on the other side, and growing by a quarter each time made spikes of 50 to 70 transfers
/// per loop where 10 to 20 did as much. The band starts at 75 %, not lower: from 60 %, a crawl
/// through 50 ms of latency at C = 1,024 ran about an eighth fewer hosts/s, as fewer transfers in
/// flight meant fewer events per wake-up and so a busier thread. The target shrinks by an eighth
/// while the thread is busy nearly all the time, never below ``floor``. The download slots
/// (`--concurrency`) stay the upper bound; a queued transfer waits as a plain value until the loop
/// can start it, and its timeouts start only then. HTTP/2 requests (the CDN's streams over one
/// connection, capped by their fetcher) are not paced.
///
/// An idle thread is not always a sign that more transfers would help: when the other side is the
/// bottleneck (one server for every host, or a server short of CPU, as on loopback), the loop waits
/// on it however many transfers it runs, and each one more only waits longer. So the pacer also
/// checks that growing paid. By Little's law the transfers finished per second are the transfers
/// running over the time each takes; the pacer measures that time as the median of the transfers
/// that succeeded in an epoch (``epochWindows`` windows). A failed transfer does not count: a host
/// that never answers holds its slot until its timeout, and a crawl with such hosts (a share of
/// any real one) would otherwise read as a slower pace, and its rate as one that did not follow the
/// transfers running. Every epoch the pacer compares the transfers run on average and that time
/// with the latest epoch far enough back for the transfers started since to have finished at that
/// epoch's pace (one and a half times its time). When running grew by a quarter or more and the
/// rate it implies rose by less than a quarter of that (each transfer took about as much longer as
/// more ran), the target goes back to what ran then and may not pass it for ``capHold`` (doubling
/// while growing keeps failing to pay), after which it probes again. A crawl through network
/// latency passes this test as it ramps up, hosts that time out included, since the others' time
/// does not change with the target.
struct StartPacer {
    /// The fewest transfers a loop may always run (or the slot limit, when lower).
    static let floor = 8
    /// The length of one measuring window, in nanoseconds.
    static let window: UInt64 = 20_000_000
    /// Smoothed busy share below which the target grows (when it binds).
    static let growBelow = 0.85
    /// Smoothed busy share below which the target grows by a quarter; from it up to ``growBelow``,
    /// by a 32nd (at least one).
    static let fastGrowBelow = 0.75
    /// Smoothed busy share from which the target shrinks.
    static let shrinkFrom = 0.95
    /// Weight of the newest window in the smoothed share.
    static let smoothing = 0.5
    /// Windows per epoch of the rate check.
    static let epochWindows = 5
    /// Epochs kept for the rate check (how far back it can compare).
    static let epochsKept = 16
    /// Transfers that succeeded an epoch needs for its time to count in the check.
    static let minimumSuccesses = 24
    /// The most transfer times an epoch keeps (a bound on memory; far more than finish in it).
    static let timesKept = 4096
    /// How long the target may not pass a cap set because growing did not pay (doubled while
    /// growing keeps failing, at most ``maximumCapHold``), in nanoseconds.
    static let capHold: UInt64 = 2_000_000_000
    /// The longest hold of a cap.
    static let maximumCapHold: UInt64 = 32_000_000_000

    /// Transfers the loop may run now.
    private(set) var target: Int
    /// The smoothed busy share of the loop's thread.
    private(set) var busy = 0.0
    private let ceiling: Int
    private var windowStart: UInt64
    /// Wall time slept in `epoll_wait` this window.
    private var idle: UInt64 = 0
    /// The thread's running plus runnable time at the window's start, when the system tells it.
    private var wantedAtStart: UInt64?
    /// Whether the target held back a start during this window (so growing it would start more).
    private var bound = false
    /// How long the transfers that succeeded this epoch took (nanoseconds), transfers running
    /// summed over its windows, its windows and its start.
    private var epochTimes: [UInt64] = []
    private var epochRunning = 0
    private var epochWindowCount = 0
    private var epochStart: UInt64
    /// The last epochs, oldest first: transfers run on average, the median time in seconds of those
    /// that succeeded, and how many succeeded.
    private var epochs: [Epoch] = []
    private typealias Epoch = (running: Double, time: Double, successes: Int)
    /// The most the target may be while growing has not paid, until ``capUntil``.
    private(set) var cap: Int?
    private var capUntil: UInt64 = 0
    private var nextCapHold = StartPacer.capHold

    /// - Parameters:
    ///   - ceiling: The most the loop may ever run (its download slots).
    ///   - now: The monotonic clock, in nanoseconds.
    ///   - wanted: The thread's time running or waiting to run so far, in nanoseconds, or `nil`.
    init(ceiling: Int, now: UInt64, wanted: UInt64? = nil) {
        self.ceiling = max(1, ceiling)
        target = min(Self.floor, self.ceiling)
        windowStart = now
        epochStart = now
        wantedAtStart = wanted
    }

    /// A transfer the loop ran finished: it succeeded after `nanoseconds`, or it failed (`nil`).
    mutating func finished(taking nanoseconds: UInt64?) {
        guard let nanoseconds, epochTimes.count < Self.timesKept else { return }
        epochTimes.append(nanoseconds)
    }

    /// Whether the loop, running `running` transfers, may start one more.
    mutating func mayStart(running: Int) -> Bool {
        if running < target { return true }
        bound = true
        return false
    }

    /// The loop slept `nanoseconds` in `epoll_wait`.
    mutating func waited(_ nanoseconds: UInt64) {
        idle &+= nanoseconds
    }

    /// Whether the current window is over at `now` (then call ``tick(now:wanted:)``).
    func windowOver(now: UInt64) -> Bool {
        now < windowStart || now - windowStart >= Self.window
    }

    /// Closes the window when it is over and adjusts the target from the thread's busy share:
    /// `wanted` (running or runnable time so far) when given, else the wall time not slept.
    /// `running`: the transfers the loop runs now (for the rate check; `nil`: no check).
    mutating func tick(now: UInt64, wanted: UInt64? = nil, running: Int? = nil) {
        guard windowOver(now: now) else { return }
        if let running {
            epochRunning += running
            epochWindowCount += 1
            if epochWindowCount >= Self.epochWindows {
                closeEpoch(now: now)
            }
        }
        if cap != nil, now >= capUntil {
            cap = nil
        }
        defer {
            windowStart = now
            idle = 0
            bound = false
            wantedAtStart = wanted
        }
        guard now > windowStart else { return }
        let elapsed = Double(now - windowStart)
        let share: Double
        if let wanted, let start = wantedAtStart, wanted >= start {
            share = min(1, Double(wanted - start) / elapsed)
        } else {
            share = 1 - min(1, Double(idle) / elapsed)
        }
        busy = Self.smoothing * share + (1 - Self.smoothing) * busy
        if busy < Self.growBelow {
            if bound {
                let step = busy < Self.fastGrowBelow ? max(2, target / 4) : max(1, target / 32)
                target = min(ceiling, cap ?? ceiling, target + step)
            }
        } else if busy >= Self.shrinkFrom {
            target = max(min(Self.floor, ceiling), target - max(1, target / 8))
        }
    }

    /// Ends an epoch: records it and, when the target grew without the rate following, caps it.
    private mutating func closeEpoch(now: UInt64) {
        defer {
            epochTimes.removeAll(keepingCapacity: true)
            epochRunning = 0
            epochWindowCount = 0
            epochStart = now
        }
        guard now > epochStart, epochWindowCount > 0 else { return }
        var median = 0.0
        if !epochTimes.isEmpty {
            epochTimes.sort()
            median = Double(epochTimes[epochTimes.count / 2]) / 1e9
        }
        let current: Epoch = (running: Double(epochRunning) / Double(epochWindowCount), time: median,
                              successes: epochTimes.count)
        epochs.append(current)
        if epochs.count > Self.epochsKept {
            epochs.removeFirst(epochs.count - Self.epochsKept)
        }
        // While a cap holds, the transfers started before it finish and running falls to it:
        // nothing grew, so nothing is judged (and the hold is not extended).
        guard cap == nil, current.successes >= Self.minimumSuccesses, current.time > 0 else { return }
        // The latest epoch long enough ago for the transfers started since to have finished at its
        // pace (one and a half times its transfers' time), at least two epochs.
        let epochSeconds = Double(Self.window) * Double(Self.epochWindows) / 1e9
        var earlier: Epoch?
        for back in stride(from: 2, to: epochs.count, by: 1) {
            let then = epochs[epochs.count - 1 - back]
            guard then.successes >= Self.minimumSuccesses, then.running > 0, then.time > 0 else { continue }
            if Double(back) * epochSeconds >= 1.5 * then.time {
                earlier = then
                break
            }
        }
        guard let then = earlier else { return }
        let grown = current.running / then.running
        guard grown >= 1.25 else { return }
        // Little's law: finished per second = running ÷ time.
        let gained = grown * then.time / current.time
        if gained - 1 < 0.25 * (grown - 1) {
            let limit = min(ceiling, max(min(Self.floor, ceiling), Int(then.running.rounded(.up))))
            cap = limit
            capUntil = now &+ nextCapHold
            nextCapHold = min(Self.maximumCapHold, nextCapHold * 2)
            target = min(target, limit)
        } else {
            nextCapHold = Self.capHold
        }
    }
}
