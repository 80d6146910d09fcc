internal import CCurl
import Glibc

/// The loop run by one of the threads of a ``CurlClient``; each owns its own multi and easy handles.
///
/// Drains its ``Mailbox`` (starts and cancels) into its queue, hands queued transfers to curl while
/// it can take a download slot from the client's ``SlotPool`` (the `--concurrency` limit holds
/// over all loops), and drives curl through its socket interface: curl tells the loop which
/// sockets to watch and when its timer is due (callbacks in the C shim keep an epoll set), the
/// loop sleeps in `epoll_wait` until a socket is ready, the timer is due or another thread writes
/// the loop's eventfd (a caller with work, or a loop handing over a slot), and then runs
/// `curl_multi_socket_action` for each ready socket and for the timer. So a wake-up costs what
/// its ready sockets need, not a pass over every transfer (`curl_multi_perform`) and a `poll` of
/// every socket (`curl_multi_poll`), which through network latency, with one event per wake-up,
/// grew with the concurrency. Finished transfers are completed from `curl_multi_info_read`, and
/// queued ones start at once in their place. The multi and easy handles never leave this thread;
/// only the share handle (DNS and TLS session caches, with locks) is used by every loop of the
/// client.
final class MultiLoop {
    private let index: Int
    private let group: LoopGroup
    private let mailbox: Mailbox
    private let multi: UnsafeMutableRawPointer
    /// The epoll set, eventfd and timer curl's socket and timer callbacks keep (C shim).
    private let events: UnsafeMutablePointer<ccurl_events>
    /// Ready sockets and their `CURL_CSELECT_*` masks, filled by each wait.
    private let readySockets: UnsafeMutablePointer<Int32>
    private let readyMasks: UnsafeMutablePointer<Int32>
    /// Sockets taken from one wait at most (more stay ready for the next: level-triggered).
    private static let readyCapacity: Int32 = 256
    private let share: UnsafeMutableRawPointer?
    private var transfers: [UInt64: Transfer] = [:]
    /// Started by callers but not yet handed to curl, oldest first: a transfer starts only with a
    /// download slot, and the next one starts on this thread the moment one finishes (no hop
    /// through the caller's threads); its timeouts start only then.
    private var queued: [(id: UInt64, request: TransferRequest, completion: TransferCompletion)] = []
    private var queueHead = 0
    /// How many transfers this loop runs now, below its download slots, by how busy it is.
    private var pacer: StartPacer
    /// This thread's running and runnable time, for the pacer.
    private let schedule: ThreadSchedule
    /// The idle connections this loop keeps for reuse.
    private let idleKept: Int
    /// The `CURLMOPT_MAXCONNECTS` set now: libcurl counts the connections in use against it too,
    /// and closes the oldest idle one past it.
    private var connectionCap: Int
    /// The monotonic time the loop last looked at the clock while it ran: each wake-up and each
    /// pass over curl's finished transfers. See ``restartAfterPause(now:)``.
    private var lastLook: UInt64
    /// How many times each transfer started again after a pause (only those that did).
    private var pauseRestarts: [UInt64: Int] = [:]
    /// When ``nudgeConnects(now:)`` last looked (monotonic nanoseconds).
    private var lastNudge: UInt64 = 0
    /// Transfers whose open-socket callback refused an address, not yet run again
    /// (``runRefused()``).
    private var refusedAddress: [UInt64] = []
    /// How often the loop looks at connections being made while transfers run, and the shortest
    /// connect it nudges.
    static let nudgeInterval: UInt64 = 250_000_000

    private init(index: Int, group: LoopGroup, multi: UnsafeMutableRawPointer, events: UnsafeMutablePointer<ccurl_events>,
                 maxConnections: Int, idleKept: Int) {
        self.index = index
        self.events = events
        readySockets = .allocate(capacity: Int(Self.readyCapacity))
        readyMasks = .allocate(capacity: Int(Self.readyCapacity))
        self.idleKept = idleKept
        connectionCap = idleKept
        self.group = group
        self.mailbox = group.mailboxes[index]
        self.multi = multi
        self.share = group.caches.handle
        schedule = ThreadSchedule()
        let now = Self.monotonicNanoseconds()
        pacer = StartPacer(ceiling: maxConnections > 0 ? maxConnections : Int.max / 2, now: now, wanted: schedule.wanted())
        lastLook = now
    }

    /// The monotonic clock in nanoseconds: the shim's, the one curl's timer is kept in.
    private static func monotonicNanoseconds() -> UInt64 {
        UInt64(ccurl_monotonic_ns())
    }

    /// The most idle connections one loop keeps: its share of `maxConnections` (`0`: no limit),
    /// at most ``maxIdleConnections``.
    static func idleConnectionsKept(maxConnections: Int, loops: Int) -> Int {
        let share = maxConnections > 0 ? (maxConnections + max(1, loops) - 1) / max(1, loops) : maxIdleConnections
        return max(1, min(maxIdleConnections, share))
    }

    /// The cap of ``idleConnectionsKept(maxConnections:loops:)``.
    static let maxIdleConnections = 32

    /// Runs loop `index` of `group` on the calling thread until the client shuts down.
    static func run(index: Int, group: LoopGroup, maxConnections: Int, maxConnectionsPerHost: Int) {
        let mailbox = group.mailboxes[index]
        guard CurlGlobal.isInitialized else {
            closeAsNotStarted(index, group, failure: startupFailure("libcurl could not be initialised (curl_global_init returned \(CurlGlobal.initResult))"))
            group.loopExited()
            return
        }
        guard let multi = curl_multi_init() else {
            // libcurl makes its wake-up socket pair here, so a want of descriptors can fail it.
            closeAsNotStarted(index, group, failure: startupFailure("libcurl could not create a multi handle"))
            group.loopExited()
            return
        }
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, max(0, maxConnections))
        // Idle connections the loop keeps for reuse. Without a cap libcurl keeps up to four per
        // transfer ever added, each with its TLS state: at high concurrency that is most of the
        // memory, while the reuse that matters (a host's second request after a 404, a retry, the
        // CDN's one HTTP/2 connection) follows its first request at once.
        let idleKept = Self.idleConnectionsKept(maxConnections: maxConnections, loops: group.mailboxes.count)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, idleKept)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, max(0, maxConnectionsPerHost))
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_PIPELINING, ccurl_pipe_multiplex)
        guard let events = ccurl_events_create(multi) else {
            // Judged by the error itself: once the multi handle's descriptors are closed below, a
            // probe would find room again.
            let error = errno
            let reason = "the curl loop could not create its epoll set: \(String(cString: strerror(error)))"
            _ = curl_multi_cleanup(multi)
            let kind: TransferFailureKind = error == EMFILE || error == ENFILE ? .descriptorsExhausted : .invalidRequest
            closeAsNotStarted(index, group, failure: TransferFailure(kind: kind, message: reason))
            group.loopExited()
            return
        }

        let loop = MultiLoop(index: index, group: group, multi: multi, events: events, maxConnections: maxConnections, idleKept: idleKept)
        mailbox.publish(waker: LoopWaker(descriptor: ccurl_events_wake_fd(events)))
        loop.runUntilStopped()
        loop.tearDown()
    }

    /// A loop that cannot start: `descriptors-exhausted` when this process is out of descriptors
    /// now (a run error: the hosts are not to blame), else `invalid-request`.
    private static func startupFailure(_ reason: String) -> TransferFailure {
        TransferFailure(kind: Transfer.descriptorsExhausted() ? .descriptorsExhausted : .invalidRequest, message: reason)
    }

    /// A loop whose thread could not be started: closed as a loop that cannot start is (what is
    /// given to it goes to a loop that runs, or fails with `failure`), and counted as exited.
    static func notStarted(index: Int, group: LoopGroup, failure: TransferFailure) {
        closeAsNotStarted(index, group, failure: failure)
        group.loopExited()
        group.mailboxes[index].markThreadExited()
    }

    /// Closes the mailbox of loop `index`, which could not start, and gives what was queued on it
    /// to the loops that run (``LoopGroup/forward(_:from:)``); with none running, those transfers
    /// and the ones given to it later fail with `failure` (``Mailbox/reserve()``).
    private static func closeAsNotStarted(_ index: Int, _ group: LoopGroup, failure: TransferFailure) {
        for waiter in group.markFailedToStart(loop: index, with: failure) {
            waiter.resume()
        }
    }

    private func runUntilStopped() {
        while true {
            let (commands, stop) = mailbox.takeCommands()
            for command in commands {
                switch command {
                case .start(let id, let request, let completion):
                    if request.after != nil {
                        // A follow-up goes first, while the connection it can reuse is still kept
                        // (into the spent entry before the head when there is one).
                        if queueHead > 0 {
                            queueHead -= 1
                            queued[queueHead] = (id, request, completion)
                        } else {
                            queued.insert((id, request, completion), at: 0)
                        }
                    } else {
                        queued.append((id, request, completion))
                    }
                case .cancel(let id):
                    cancel(id: id)
                }
            }
            if stop {
                return
            }
            // Transfers added get curl's timer at 0: running it starts them before the wait.
            startQueued()
            keepIdleConnections()
            runTimerIfDue()
            drainMessages()
            if startQueued() {
                keepIdleConnections()
                runTimerIfDue()
                drainMessages()
            }
            runRefused()
            let sleeping = Self.monotonicNanoseconds()
            // While transfers run, a wake-up at least every nudge interval (see nudgeConnects).
            let ready = ccurl_events_wait(events, transfers.isEmpty ? 1000 : Int32(Self.nudgeInterval / 1_000_000), readySockets, readyMasks, Self.readyCapacity)
            let awake = Self.monotonicNanoseconds()
            pacer.waited(awake &- sleeping)
            restartAfterPause(now: awake)
            if ready < 0 {
                usleep(10_000)  // epoll_wait itself failed: do not spin; transfers still time out
            } else if ready > 0 {
                keepIdleConnections()
                for slot in 0..<Int(ready) {
                    act(on: readySockets[slot], mask: readyMasks[slot])
                }
            }
            nudgeConnects(now: awake)
            runTimerIfDue()
            drainMessages()
            if pacer.windowOver(now: awake) {
                pacer.tick(now: awake, wanted: schedule.wanted(), running: transfers.count)
            }
        }
    }

    /// Lets curl act on one ready socket (`CURL_SOCKET_TIMEOUT`: on its expired timers).
    private func act(on socket: Int32, mask: Int32) {
        var running: Int32 = 0
        _ = curl_multi_socket_action(multi, socket, mask, &running)
        if events.pointee.failed_count > 0 {
            failUnwatched()
        }
    }

    /// Runs the transfers whose address was just refused, and what that starts, until none is
    /// left (each round tries the next address of each: a host has at most as many rounds as
    /// addresses, and a bound stops a pathological list).
    private func runRefused() {
        var rounds = 0
        while !refusedAddress.isEmpty, rounds < 256 {
            rounds += 1
            let refused = refusedAddress
            refusedAddress.removeAll(keepingCapacity: true)
            for id in refused { transfers[id]?.runSoon() }
            runTimerIfDue()
            drainMessages()
        }
    }

    /// Lets curl look again at the connections being made for longer than ``nudgeInterval``.
    ///
    /// libcurl 7.88 moves on to a host's next address when the current one has not connected
    /// within its share of the connect timeout, but in the socket interface it checks that only
    /// when the socket or a timer of the transfer wakes it, and no timer is set for that share:
    /// a first address that never answers held the transfer until the whole connect timeout ran
    /// out, the good second address untried (`curl`, which runs every transfer at least once a
    /// second, tried it after 2.5 s). Running the transfer again (``Transfer/runSoon()``) runs its
    /// connect step, which checks its share. Costs one look every interval, only while
    /// connections are being made. (Acting on its socket with no event did not move it on.)
    ///
    /// A refused address (private or reserved) fails before any socket exists, and libcurl 7.88
    /// waits in the same way before it tries the next one (200 ms, then half of the connect time
    /// left: 20 refused addresses ahead of an allowed one made a `timeout`): ``runRefused()``
    /// runs such a transfer again at once.
    private func nudgeConnects(now: UInt64) {
        guard now &- lastNudge >= Self.nudgeInterval else { return }
        // Sockets opened since `now` was read (in the socket actions before this) are younger
        // than it: the time is read again so that none looks older than it is.
        let now = Self.monotonicNanoseconds()
        lastNudge = now
        for transfer in transfers.values where transfer.stillConnecting() && now &- transfer.connectingSince >= Self.nudgeInterval {
            transfer.runSoon()
        }
    }

    private func runTimerIfDue() {
        if ccurl_events_timer_due(events) != 0 {
            act(on: ccurl_socket_bad, mask: 0)
        }
    }

    /// Fails the transfers whose socket could not be added to the epoll set: they would wait for
    /// events that never come, until their timeout.
    private func failUnwatched() {
        var handles = [UnsafeMutableRawPointer?](repeating: nil, count: Int(CCURL_EVENTS_FAILED_MAX))
        var error: Int32 = 0
        let count = handles.withUnsafeMutableBufferPointer {
            ccurl_events_take_failed(events, $0.baseAddress, Int32($0.count), &error)
        }
        let failure = TransferFailure(
            kind: .descriptorsExhausted,
            message: "epoll_ctl could not watch the transfer's socket: \(String(cString: strerror(error)))"
                + (error == ENOSPC ? " (the system's fs.epoll.max_user_watches)" : ""))
        for easy in handles.prefix(Int(count)) {
            guard let easy, let transfer = transfers.values.first(where: { $0.handle == easy }) else { continue }
            complete(transfer, result: .failure(failure), added: true)
        }
    }

    /// Hands queued transfers to curl while the pacer lets the loop run more (HTTP/1.1) and a
    /// download slot is free; returns whether it started any.
    @discardableResult
    private func startQueued() -> Bool {
        var started = false
        // HTTP/2 requests (the CDN's streams, capped by their fetcher) share one connection: the
        // pacer, which saves TLS connections, does not hold them back.
        while queueHead < queued.count, !Self.paced(queued[queueHead].request) || pacer.mayStart(running: transfers.count),
              group.slots.acquire(loop: index) {
            let next = queued[queueHead]
            queueHead += 1
            if !start(id: next.id, request: next.request, completion: next.completion) {
                releaseSlot()
            }
            started = true
        }
        if queueHead == queued.count {
            queued.removeAll(keepingCapacity: queued.count <= 1024)
            queueHead = 0
            // Nothing left to start: slots another loop handed over go back (or on to a loop in line).
            wake(group.slots.idle(loop: index))
        } else if queueHead >= 16, queueHead * 2 >= queued.count {
            // A spent entry still holds its request and completion (and what that captured: the
            // host's plan): drop them once they are half the queue (amortised O(1) per entry).
            // Waiting for a full queue kept nearly every host of a paced run until its end.
            queued.removeFirst(queueHead)
            queueHead = 0
        }
        return started
    }

    /// Sets `CURLMOPT_MAXCONNECTS` to the transfers running plus ``idleKept``. libcurl counts the
    /// connections in use against that limit as well, so a fixed limit kept no idle connection
    /// once as many transfers ran: the one a 404 came over was closed at once, and the legacy
    /// request after it made a new TLS handshake.
    private func keepIdleConnections() {
        let cap = transfers.count + idleKept
        guard cap != connectionCap else { return }
        connectionCap = cap
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, cap)
    }

    /// Whether the pacer decides when `request` starts: every request but HTTP/2 ones.
    private static func paced(_ request: TransferRequest) -> Bool {
        request.httpVersion != .http2
    }

    private func releaseSlot() {
        // A slot is kept for this loop's next transfer only when the pacer lets it start one.
        let startsNext = queueHead < queued.count && (!Self.paced(queued[queueHead].request) || transfers.count < pacer.target)
        if let next = group.slots.release(loop: index, hasQueued: startsNext) {
            wake([next])
        }
    }

    private func wake(_ loops: [Int]) {
        for loop in loops where loop != index {
            group.mailboxes[loop].wake()
        }
    }

    /// Hands a transfer to curl; returns `false` when it failed at once (its completion has run).
    private func start(id: UInt64, request: TransferRequest, completion: @escaping TransferCompletion) -> Bool {
        guard let transfer = Transfer(id: id, request: request, completion: completion) else {
            finish(id: id, completion: completion, result: .failure(
                TransferFailure(kind: Transfer.descriptorsExhausted() ? .descriptorsExhausted : .invalidRequest,
                                message: "libcurl could not create an easy handle")))
            return false
        }
        do throws(TransferFailure) {
            try transfer.configure(share: share)
        } catch {
            complete(transfer, result: .failure(error), added: false)
            return false
        }
        guard let easy = transfer.handle else { return false }
        let code = curl_multi_add_handle(multi, easy)
        guard code == CURLM_OK else {
            let message = curl_multi_strerror(code).map { String(cString: $0) } ?? "error \(code.rawValue)"
            complete(transfer, result: .failure(
                TransferFailure(kind: Transfer.descriptorsExhausted() ? .descriptorsExhausted : .invalidRequest,
                                curlCode: Int(code.rawValue), message: "curl_multi_add_handle: \(message)")),
                added: false)
            return false
        }
        transfers[id] = transfer
        transfer.onRefusedAddress = { [unowned self] in refusedAddress.append(id) }
        mailbox.noteStarted()
        return true
    }

    private func cancel(id: UInt64) {
        if let transfer = transfers[id] {
            complete(transfer, result: .failure(Mailbox.cancelledFailure), added: true)
        } else if let index = queued[queueHead...].firstIndex(where: { $0.id == id }) {
            let waiting = queued.remove(at: index)
            finish(id: id, completion: waiting.completion, result: .failure(Mailbox.cancelledFailure))
        }  // else already finished
    }

    /// A gap longer than this between two looks at the clock (``lastLook``) means the process did
    /// not run: the loop waits at most 1 s, and a pass of its work takes milliseconds.
    static let pauseGap: UInt64 = 3_000_000_000
    /// How many times one transfer starts again after pauses, at most; a later pause lets its
    /// timeouts stand (a thread starved again and again is the machine's state, not an accident).
    static let restartsAfterPause = 2

    /// Starts every running transfer again when the process stood still (SIGSTOP, a debugger, a
    /// paused virtual machine, a starved thread) for longer than ``pauseGap``: curl's timeouts
    /// count the monotonic clock, which ran on, and so did the server's patience; without this the
    /// transfers would fail as `timeout` or a reset connection and the hosts be blamed for time
    /// this process did not run. Called before curl acts on anything after a wake-up, and before
    /// each pass over finished transfers (a pause inside the loop's work). The transfers go back to
    /// the head of the queue with their request and completion, and start with fresh timeouts.
    private func restartAfterPause(now: UInt64) {
        defer { lastLook = now }
        guard now &- lastLook > Self.pauseGap, !transfers.isEmpty else { return }
        var again: [(id: UInt64, request: TransferRequest, completion: TransferCompletion)] = []
        for transfer in transfers.values.sorted(by: { $0.id < $1.id }) {
            let restarts = pauseRestarts[transfer.id, default: 0]
            guard restarts < Self.restartsAfterPause, let completion = transfer.completion else { continue }
            pauseRestarts[transfer.id] = restarts + 1
            if let easy = transfer.handle {
                _ = curl_multi_remove_handle(multi, easy)
            }
            transfer.completion = nil
            transfer.cleanup()
            transfers.removeValue(forKey: transfer.id)
            pacer.finished(taking: nil)
            again.append((transfer.id, transfer.request, completion))
        }
        guard !again.isEmpty else { return }
        queued.replaceSubrange(queueHead..<queueHead, with: again)
        for _ in again {
            releaseSlot()
        }
    }

    private func drainMessages() {
        restartAfterPause(now: Self.monotonicNanoseconds())
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard ccurl_msg_kind(message) == CURLMSG_DONE, let easy = ccurl_msg_easy(message) else { continue }
            let code = ccurl_msg_result(message)
            var userData: UnsafeMutableRawPointer?
            guard ccurl_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &userData) == CURLE_OK,
                let transfer = Transfer.from(userData), transfers[transfer.id] === transfer
            else {
                // Not one of ours (cannot happen): detach it so the loop does not spin on it.
                _ = curl_multi_remove_handle(multi, easy)
                continue
            }
            let result = transfer.outcome(code).map { response in
                var response = response
                response.place = TransferPlace(loop: index)
                return response
            }
            complete(transfer, result: result, added: true)
        }
    }

    /// Detaches and frees the transfer, gives back its download slot, then runs its completion
    /// (exactly once, no lock held).
    private func complete(_ transfer: Transfer, result: Result<TransferResponse, TransferFailure>, added: Bool) {
        if added, let easy = transfer.handle {
            _ = curl_multi_remove_handle(multi, easy)
        }
        transfer.cleanup()
        if transfers.removeValue(forKey: transfer.id) != nil {
            // The time of a transfer that failed (a timeout, a refused connection) tells nothing
            // of the pace of the others.
            if case .success(let response) = result {
                pacer.finished(taking: UInt64(min(max(0, response.timings.total), 1e6) * 1e9))
            } else {
                pacer.finished(taking: nil)
            }
            releaseSlot()
        }
        let completion = transfer.completion
        transfer.completion = nil
        if let completion {
            finish(id: transfer.id, completion: completion, result: result)
        }
    }

    private func finish(id: UInt64, completion: TransferCompletion, result: Result<TransferResponse, TransferFailure>) {
        if !pauseRestarts.isEmpty {
            pauseRestarts[id] = nil
        }
        mailbox.finished(id: id)
        completion(result)
    }

    private func tearDown() {
        schedule.close()
        let (commands, waiters) = mailbox.close()
        for case .start(let id, _, let completion) in commands {
            finish(id: id, completion: completion, result: .failure(Mailbox.shutDownFailure))
        }
        for waiting in queued[queueHead...] {
            finish(id: waiting.id, completion: waiting.completion, result: .failure(Mailbox.shutDownFailure))
        }
        queued = []
        queueHead = 0
        for transfer in Array(transfers.values) {
            complete(transfer, result: .failure(Mailbox.shutDownFailure), added: true)
        }
        wake(group.slots.idle(loop: index))
        _ = curl_multi_cleanup(multi)
        ccurl_events_destroy(events)
        readySockets.deallocate()
        readyMasks.deallocate()
        // The last loop out frees the share handle, before any shutdown waiter resumes.
        group.loopExited()
        for waiter in waiters {
            waiter.resume()
        }
    }
}

/// The calling thread's time on a CPU plus its time waiting in the run queue
/// (`/proc/thread-self/schedstat`, opened once by the thread it describes).
final class ThreadSchedule {
    private var descriptor: Int32

    /// Opens the calling thread's schedstat; ``wanted()`` is `nil` when the system does not tell.
    init() {
        descriptor = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)
    }

    /// Nanoseconds the thread ran or waited to run, so far.
    func wanted() -> UInt64? {
        guard descriptor >= 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 96)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return Self.parse(buffer[..<count])
    }

    /// The sum of the first two numbers of a schedstat line ("RUN WAIT SLICES").
    static func parse(_ line: ArraySlice<UInt8>) -> UInt64? {
        var numbers: [UInt64] = []
        var value: UInt64 = 0
        var digits = false
        for byte in line {
            if byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                let (times, overflowA) = value.multipliedReportingOverflow(by: 10)
                let (sum, overflowB) = times.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
                if overflowA || overflowB { return nil }
                value = sum
                digits = true
            } else {
                if digits { numbers.append(value) }
                if numbers.count == 2 { break }
                value = 0
                digits = false
            }
        }
        if digits, numbers.count < 2 { numbers.append(value) }
        guard numbers.count == 2 else { return nil }
        let (total, overflow) = numbers[0].addingReportingOverflow(numbers[1])
        return overflow ? nil : total
    }

    func close() {
        if descriptor >= 0 {
            _ = Glibc.close(descriptor)
            descriptor = -1
        }
    }
}
