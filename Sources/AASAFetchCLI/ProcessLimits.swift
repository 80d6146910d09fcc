import CurlTransport
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

    /// Address space one download may take at its peak under an address-space limit (its TLS
    /// state and buffers, curl's handle and connection; about 80 KiB measured, with room).
    static let addressSpacePerDownload = 128 << 10
    /// Address space kept for the rest of a run beyond what is mapped when it starts: the Swift
    /// heap, the store's and the spool's page caches, record batches, output buffers.
    static let reservedAddressSpace = 16 << 20

    /// Address space mapped now (`VmSize` of `/proc/self/status`), in bytes; `nil` when unknown.
    static var addressSpaceInUse: Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmSize:") }),
              let kibibytes = Int(line.dropFirst("VmSize:".count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        else { return nil }
        return kibibytes << 10
    }

    /// The most downloads that fit in an address-space limit of `limit` bytes with `used` bytes
    /// mapped already and `loops` curl loops to start (each with its thread's stack); 0 or less
    /// when not even one fits.
    static func fittingConcurrency(addressLimit limit: Int, used: Int, loops: Int) -> Int {
        (limit - used - reservedAddressSpace - max(1, loops) * AddressSpace.limitedThreadStack) / addressSpacePerDownload
    }

    /// Threads the concurrency runtime starts before a command can run (one per core, and the
    /// ones it keeps for blocking work), counted at ``AddressSpace/limitedThreadStack`` each.
    static let runtimeThreads = 4

    /// At the start of the process: the failure to end it with when an address-space limit
    /// leaves less room than the runtime's first threads and ``reservedAddressSpace`` need (the
    /// runtime would retry creating a thread forever, or an allocation would fail); `nil` when
    /// there is room or no limit.
    static func addressSpaceShortageAtStart() -> CommandFailure? {
        guard let limit = AddressSpace.limit.map({ Int(clamping: $0) }), let used = addressSpaceInUse else { return nil }
        let needed = used + reservedAddressSpace + runtimeThreads * AddressSpace.limitedThreadStack
        guard limit < needed else { return nil }
        return addressSpaceExhausted(limit: limit, used: used, needed: needed)
    }

    private static func addressSpaceExhausted(limit: Int, used: Int, needed: Int) -> CommandFailure {
        CommandFailure(code: "address-space-exhausted",
                       message: "the address-space limit is \(limit >> 20) MiB (ulimit -v) and \(used >> 20) MiB are mapped already; this needs at least \((needed + (1 << 20) - 1) >> 20) MiB: raise or remove the limit")
    }

    private static let noted = Mutex(false)

    /// `requested` lowered to what the open-file limit and the address-space limit allow with
    /// `loops` curl loops; says so once on standard error.
    /// - Throws: `address-space-exhausted` when the address-space limit leaves no room for one
    ///   download (a run would end in a failed allocation, which a Swift program cannot survive).
    static func concurrency(_ requested: Int, loops: Int, console: Console) throws(CommandFailure) -> Int {
        var result = requested
        var reason: String?
        if let limit = descriptorLimit {
            let fitting = fittingConcurrency(limit: limit, open: openDescriptors ?? 16, loops: loops)
            if fitting < result {
                result = fitting
                reason = "the open-file limit is \(limit) (ulimit -n) and each download needs up to \(descriptorsPerDownload) descriptors; raise the hard limit to run more at once"
            }
        }
        if let limit = AddressSpace.limit.map({ Int(clamping: $0) }), let used = addressSpaceInUse {
            let fitting = fittingConcurrency(addressLimit: limit, used: used, loops: loops)
            guard fitting >= 1 else {
                let needed = used + reservedAddressSpace + max(1, loops) * AddressSpace.limitedThreadStack + addressSpacePerDownload
                throw addressSpaceExhausted(limit: limit, used: used, needed: needed)
            }
            if fitting < result {
                result = fitting
                reason = "the address-space limit is \(limit >> 20) MiB (ulimit -v) and each download may take \(addressSpacePerDownload >> 10) KiB of it; raise the limit to run more at once"
            }
        }
        guard let reason else { return requested }
        let first = noted.withLock { noted in
            defer { noted = true }
            return !noted
        }
        if first {
            console.err("aasa-fetch: note: --concurrency \(requested) lowered to \(result): \(reason)")
        }
        return result
    }
}
