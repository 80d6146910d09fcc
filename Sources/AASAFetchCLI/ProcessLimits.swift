import AASAFetchCore
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
    /// Descriptors a run needs beyond those open when it starts and those of its loops and one
    /// download, at the least: a CA file read during a handshake, the store's journal, a probe.
    static let minimumReservedDescriptors = 4

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

    /// The most curl loops (of `loops`) that fit in `limit` descriptors with `open` already in use,
    /// `extraLoops` one-loop clients besides, and room for one download: at least 1. A loop that
    /// starts takes descriptors for good, so at a tight limit more loops leave no room for the
    /// download itself, and a run fetched nothing at a limit at which fewer loops fetched all.
    static func fittingLoops(_ loops: Int, limit: Int, open: Int, extraLoops: Int) -> Int {
        let room = limit - open - minimumReservedDescriptors - descriptorsPerDownload
        return max(1, min(loops, room / descriptorsPerLoop - extraLoops))
    }

    /// The most curl loops (of `loops`) whose threads' stacks, beside `extraLoops` one-loop
    /// clients', leave room for one download in an address-space limit of `limit` bytes with
    /// `used` mapped already: at least 1 (with no room even then, the run is refused).
    static func fittingLoops(_ loops: Int, addressLimit limit: Int, used: Int, extraLoops: Int) -> Int {
        let stacks = (limit - used - reservedAddressSpace - addressSpacePerDownload) / AddressSpace.limitedThreadStack
        return max(1, min(loops, stacks - extraLoops))
    }

    /// What a run's limits are weighed against, measured once before a run (listing
    /// `/proc/self/fd`, reading `/proc/self/status`) and shared by ``loops(_:extraLoops:usage:console:)``
    /// and ``concurrency(_:loops:usage:console:)``.
    struct Usage {
        /// Descriptors open (16 when unknown); `nil` without an open-file limit.
        var openDescriptors: Int?
        /// Address space mapped, in bytes; `nil` without an address-space limit or when unknown.
        var addressSpaceInUse: Int?

        /// Measures what the limits in force need: nothing without them.
        static func now() -> Usage {
            Usage(openDescriptors: descriptorLimit == nil ? nil : (ProcessLimits.openDescriptors ?? 16),
                  addressSpaceInUse: AddressSpace.limit == nil ? nil : ProcessLimits.addressSpaceInUse)
        }
    }

    /// `loops` lowered to what the open-file limit (``fittingLoops(_:limit:open:extraLoops:)``)
    /// and the address-space limit (``fittingLoops(_:addressLimit:used:extraLoops:)``) allow;
    /// says so once on standard error.
    static func loops(_ loops: Int, extraLoops: Int, usage: Usage, console: Console) -> Int {
        var fitted = loops
        if let limit = descriptorLimit, let open = usage.openDescriptors {
            fitted = fittingLoops(fitted, limit: limit, open: open, extraLoops: extraLoops)
            if fitted < loops {
                note("--threads \(loops) lowered to \(fitted): the open-file limit is \(limit) (ulimit -n) and each curl loop keeps \(descriptorsPerLoop) descriptors open; raise the hard limit to run more at once",
                     once: "loops under a descriptor limit", console: console)
            }
        }
        if let limit = AddressSpace.limit.map({ Int(clamping: $0) }), let used = usage.addressSpaceInUse {
            let before = fitted
            fitted = fittingLoops(fitted, addressLimit: limit, used: used, extraLoops: extraLoops)
            // With no room even for one loop the run is refused (``concurrency(_:loops:usage:console:)``).
            if fitted < before, fittingConcurrency(addressLimit: limit, used: used, loops: fitted + extraLoops) >= 1 {
                note("--threads \(before) lowered to \(fitted): the address-space limit is \(limit >> 20) MiB (ulimit -v) and each curl loop's thread takes \(AddressSpace.limitedThreadStack >> 20) MiB of it for its stack; raise the limit to run more at once",
                     once: "loops under an address-space limit", console: console)
            }
        }
        return fitted
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

    // MARK: - Threads

    /// Threads besides the main thread and the curl loops that a command may start: the
    /// concurrency runtime's pool (one per core) and the threads it and the store keep for
    /// blocking work (six seen on 2 cores). Short of these, the runtime retries creating a thread
    /// forever, with signals blocked, so the process could not even be stopped with SIGTERM.
    static let runtimeThreadsNeeded = ProcessInfo.processInfo.activeProcessorCount + 4

    /// Threads this process runs now (`Threads:` of `/proc/self/status`), `nil` when unknown.
    static var threadsRunning: Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Threads:") })
        else { return nil }
        return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces))
    }

    /// `RLIMIT_NPROC` when it applies to this process: finite, and the real user is not root
    /// (whom Linux exempts). It counts every thread of every process of the user.
    static var processLimit: Int? {
        var limit = rlimit()
        guard getuid() != 0, getrlimit(Int32(__RLIMIT_NPROC.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }
        return Int(clamping: limit.rlim_cur)
    }

    /// The smallest `pids.max` of this process's cgroup and its ancestors (cgroup v2, or the v1
    /// `pids` controller), `nil` when none is set or none can be read. It counts every thread of
    /// the group: a container's `--pids-limit`, a systemd unit's `TasksMax`.
    static var pidsLimit: Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8) else { return nil }
        return pidsLimit(cgroups: text) { try? String(contentsOfFile: $0, encoding: .utf8) }
    }

    /// ``pidsLimit`` from the text of `/proc/self/cgroup`, reading each `pids.max` with `read`.
    static func pidsLimit(cgroups text: String, read: (String) -> String?) -> Int? {
        CgroupChain.smallest("pids.max", v1Controller: "pids", membership: text, read: read) {
            Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    /// Whether a limit on this process's threads is in sight (``processLimit``, ``pidsLimit``):
    /// read once, at start, so a run without one reads the cgroup files once.
    static let threadLimitInSight = processLimit != nil || pidsLimit != nil

    /// What limits this process's threads, for messages.
    static var threadLimitText: String {
        if let pids = pidsLimit { return "its cgroup's pids.max is \(pids)" }
        if let processes = processLimit { return "ulimit -u is \(processes)" }
        return "its limit on processes: ulimit -u, or a cgroup's pids.max"
    }

    /// Stack of each thread ``startableThreads(upTo:)`` starts: it only waits in `read`.
    static let probeStack = 64 << 10

    /// How many more threads this process can start now, up to `cap`: it starts them, each
    /// waiting on a pipe, and ends them again before it returns. Their stacks are slices of one
    /// mapping of its own, unmapped at the end (the C library would keep stacks it made in its
    /// cache). `cap` when the probe itself cannot be set up, or `pthread_create` fails for a
    /// reason other than `EAGAIN` (the only answer to a limit on threads).
    static func startableThreads(upTo cap: Int) -> Int {
        guard cap > 0 else { return 0 }
        let length = cap * probeStack
        guard let stacks = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0),
              stacks != MAP_FAILED else { return cap }
        defer { munmap(stacks, length) }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return cap }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var started: [pthread_t] = []
        started.reserveCapacity(cap)
        var otherError = false
        while started.count < cap {
            // Allocated, not `pthread_attr_t()`: which module's initializer that is depends on
            // the order the compiler meets the C headers (CCurl's shim includes pthread.h too).
            let attributes = UnsafeMutablePointer<pthread_attr_t>.allocate(capacity: 1)
            defer { attributes.deallocate() }
            pthread_attr_init(attributes)
            pthread_attr_setstack(attributes, stacks + started.count * probeStack, probeStack)
            var thread = pthread_t()
            let error = pthread_create(&thread, attributes, { end in
                var byte: UInt8 = 0
                _ = read(Int32(Int(bitPattern: end)), &byte, 1)  // until the write end is closed
                return nil
            }, UnsafeMutableRawPointer(bitPattern: Int(ends[0])))
            pthread_attr_destroy(attributes)
            guard error == 0 else {
                otherError = error != EAGAIN
                break
            }
            started.append(thread)
        }
        close(ends[1])
        for thread in started {
            pthread_join(thread, nil)
        }
        close(ends[0])
        return otherError ? cap : started.count
    }

    /// Descriptors the process needs free when it starts: the concurrency runtime's event
    /// descriptors (libdispatch traps, SIGILL, when it cannot open its epoll set) and a file or
    /// the store for the command.
    static let descriptorsNeededAtStart = 4

    /// At the start of the process, before the concurrency runtime starts: the failure to end it
    /// with when fewer than ``descriptorsNeededAtStart`` descriptors can be opened (`ulimit -n 4`
    /// crashed every command); `nil` when they can, or when `/dev/null` cannot be opened to tell.
    static func descriptorShortageAtStart() -> CommandFailure? {
        let room = SystemReason.descriptorsOpenable(upTo: descriptorsNeededAtStart)
        guard room < descriptorsNeededAtStart else { return nil }
        let limit = descriptorLimit.map { "ulimit -n \($0)" } ?? "the system's limit"
        return CommandFailure(
            code: "descriptors-exhausted",
            message: "this process can open only \(room) more \(room == 1 ? "file descriptor" : "file descriptors") (\(limit)) and needs at least \(descriptorsNeededAtStart) to start: raise the limit")
    }

    /// At the start of the process, before the concurrency runtime starts a thread: the failure to
    /// end it with when a limit on its threads leaves fewer than ``runtimeThreadsNeeded``; `nil`
    /// when there is room or no limit in sight (then nothing is probed).
    static func threadShortageAtStart() -> CommandFailure? {
        guard threadLimitInSight else { return nil }
        let room = startableThreads(upTo: runtimeThreadsNeeded)
        guard room < runtimeThreadsNeeded else { return nil }
        return threadsExhausted(room: room, needed: runtimeThreadsNeeded)
    }

    private static func threadsExhausted(room: Int, needed: Int) -> CommandFailure {
        CommandFailure(code: "threads-exhausted",
                       message: "this process can start only \(room) more \(room == 1 ? "thread" : "threads") (\(threadLimitText)) and needs at least \(needed): raise the limit")
    }

    /// `concurrency` downloads and `loops` curl loops (plus `extraLoops`, the one-loop clients a
    /// run may add) lowered to what a limit on threads allows, when one is in sight: besides the
    /// runtime's threads, every loop is a thread, and so is each name libcurl is resolving. Says
    /// so once on standard error.
    /// - Throws: `threads-exhausted` when not even one loop and one download fit.
    static func fitThreads(concurrency: Int, loops: Int, extraLoops: Int, console: Console) throws(CommandFailure) -> (concurrency: Int, loops: Int) {
        guard threadLimitInSight else { return (concurrency, loops) }
        let toCome = max(0, 1 + runtimeThreadsNeeded - (threadsRunning ?? 1))
        let wanted = toCome + extraLoops + loops + concurrency
        let room = startableThreads(upTo: wanted)
        guard room < wanted else { return (concurrency, loops) }
        let spare = room - toCome - extraLoops
        guard spare >= 2 else { throw threadsExhausted(room: room, needed: toCome + extraLoops + 2) }
        let fittedLoops = min(loops, max(1, spare / 4))
        let fitted = min(concurrency, spare - fittedLoops)
        let reason = "this process can start only \(room) more threads (\(threadLimitText)); each curl loop is a thread, and so is each name being resolved"
        if fitted < concurrency { note("--concurrency \(concurrency) lowered to \(fitted): \(reason)", once: "concurrency under a thread limit", console: console) }
        if fittedLoops < loops { note("--threads \(loops) lowered to \(fittedLoops): \(reason)", once: "loops under a thread limit", console: console) }
        return (fitted, fittedLoops)
    }

    private static let noted = Mutex<Set<String>>([])

    /// Writes `text` as a note on standard error, the first time a note of kind `key` comes.
    private static func note(_ text: String, once key: String, console: Console) {
        if noted.withLock({ $0.insert(key).inserted }) {
            console.err("aasa-fetch: note: \(text)")
        }
    }

    /// `requested` lowered to what the open-file limit and the address-space limit allow with
    /// `loops` curl loops; says so once on standard error.
    /// - Throws: `address-space-exhausted` when the address-space limit leaves no room for one
    ///   download (a run would end in a failed allocation, which a Swift program cannot survive).
    static func concurrency(_ requested: Int, loops: Int, usage: Usage, console: Console) throws(CommandFailure) -> Int {
        var result = requested
        var reason: String?
        if let limit = descriptorLimit, let open = usage.openDescriptors {
            let fitting = fittingConcurrency(limit: limit, open: open, loops: loops)
            if fitting < result {
                result = fitting
                reason = "the open-file limit is \(limit) (ulimit -n) and each download needs up to \(descriptorsPerDownload) descriptors; raise the hard limit to run more at once"
            }
        }
        if let limit = AddressSpace.limit.map({ Int(clamping: $0) }), let used = usage.addressSpaceInUse {
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
        note("--concurrency \(requested) lowered to \(result): \(reason)", once: "concurrency under a descriptor or address-space limit", console: console)
        return result
    }
}
