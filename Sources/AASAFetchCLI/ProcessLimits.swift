import Foundation
import Synchronization

/// The process's open-file limit and what it allows: every download holds descriptors, and a run
/// that runs out of them must not blame the hosts (`descriptors-exhausted` is a run error).
enum ProcessLimits {
    /// Descriptors one download may hold at once: its socket, a second one while both address
    /// families race (happy eyeballs), and the resolver's socket while the name resolves.
    static let descriptorsPerDownload = 3
    /// Descriptors kept for everything else: the store (database, WAL, shared memory), the run
    /// spool, CA files read during handshakes, the standard streams.
    static let reservedDescriptors = 32
    /// Descriptors each curl loop holds for as long as it runs: the two ends of the wake-up socket
    /// pair libcurl makes with every multi handle, the loop's epoll set and wake-up eventfd (it
    /// drives curl through its socket interface), and its thread's `/proc/thread-self/schedstat`
    /// (read by its start pacer).
    static let descriptorsPerLoop = 5

    /// Raises the soft limit of open files (`RLIMIT_NOFILE`) to the hard one (at most 1,048,576,
    /// Linux's usual `nr_open`), so `--concurrency` is not cut by a low default soft limit.
    static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let target = min(limit.rlim_max, 1 << 20)
        guard limit.rlim_cur < target else { return }
        limit.rlim_cur = target
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    /// The soft limit of open files now, `nil` when unknown or unlimited.
    static var descriptorLimit: Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }
        return Int(clamping: limit.rlim_cur)
    }

    /// Descriptors open now (`/proc/self/fd`), `nil` when unknown.
    static var openDescriptors: Int? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return nil }
        return max(0, names.count - 1)  // the listing's own descriptor
    }

    /// The most downloads that fit in `limit` descriptors with `open` already in use and `loops`
    /// curl loops running.
    static func fittingConcurrency(limit: Int, open: Int, loops: Int) -> Int {
        max(1, (limit - open - reservedDescriptors - descriptorsPerLoop * max(1, loops)) / descriptorsPerDownload)
    }

    private static let noted = Mutex(false)

    /// `requested` lowered to what the open-file limit allows with `loops` curl loops; says so once
    /// on standard error.
    static func concurrency(_ requested: Int, loops: Int, console: Console) -> Int {
        guard let limit = descriptorLimit else { return requested }
        let fitting = fittingConcurrency(limit: limit, open: openDescriptors ?? 16, loops: loops)
        guard fitting < requested else { return requested }
        let first = noted.withLock { noted in
            defer { noted = true }
            return !noted
        }
        if first {
            console.err("aasa-fetch: note: --concurrency \(requested) lowered to \(fitting): the open-file limit is \(limit) (ulimit -n) and each download needs up to \(descriptorsPerDownload) descriptors; raise the hard limit to run more at once")
        }
        return fitting
    }
}
