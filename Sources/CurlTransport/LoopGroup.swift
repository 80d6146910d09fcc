internal import CCurl
import Synchronization

/// The download slots of a ``CurlClient``: at most `limit` transfers run at once over all its loops.
///
/// A loop takes a slot before it hands a queued transfer to curl and gives it back when the
/// transfer leaves curl. A loop that finds no slot free is put in line. A slot given back goes to
/// the loop in line that holds the fewest (it is woken) when the loop giving it back has nothing
/// queued, holds more than that loop, or that loop holds none; otherwise the loop giving it back
/// keeps it for its own next transfer. So the slots settle evenly over busy loops without a
/// wake-up per transfer, and no loop in line waits while another keeps more than its share.
/// With one loop this is exactly a count of running transfers against the limit.
final class SlotPool: Sendable {
    private struct State {
        var used = 0
        /// Slots each loop holds: its running transfers and the slots handed to it, not yet taken.
        var held: [Int]
        /// Slots handed to a loop that has not taken them yet, per loop.
        var granted: [Int]
        /// Loops that found no slot.
        var waiting: [Int] = []

        /// Hands a slot that `giver` gave back to the loop in line that holds the fewest, when
        /// `giver` should let it go; returns that loop.
        mutating func handOver(from giver: Int, giverHasWork: Bool) -> Int? {
            guard let position = waiting.indices.filter({ waiting[$0] != giver }).min(by: { held[waiting[$0]] < held[waiting[$1]] })
            else { return nil }
            let taker = waiting[position]
            guard !giverHasWork || held[taker] < held[giver] || held[taker] == 0 else { return nil }
            waiting.remove(at: position)
            granted[taker] += 1
            held[taker] += 1
            return taker
        }
    }

    private let limit: Int
    private let state: Mutex<State>

    /// - Parameters:
    ///   - limit: Most transfers running at once (0 or less: no limit).
    ///   - loops: The number of loops.
    init(limit: Int, loops: Int) {
        self.limit = limit > 0 ? limit : Int.max
        state = Mutex(State(held: Array(repeating: 0, count: loops), granted: Array(repeating: 0, count: loops)))
    }

    /// Takes a slot for `loop`, or puts the loop in line and returns `false`.
    func acquire(loop: Int) -> Bool {
        state.withLock { state in
            if state.granted[loop] > 0 || state.used < limit {
                if !state.waiting.isEmpty {
                    state.waiting.removeAll { $0 == loop }
                }
                if state.granted[loop] > 0 {
                    state.granted[loop] -= 1
                } else {
                    state.used += 1
                    state.held[loop] += 1
                }
                return true
            }
            if !state.waiting.contains(loop) {
                state.waiting.append(loop)
            }
            return false
        }
    }

    /// `loop` gives back a slot; `hasQueued` tells whether it has transfers waiting to start.
    /// Returns the loop that now holds the slot and must be woken, if another one does.
    func release(loop: Int, hasQueued: Bool) -> Int? {
        state.withLock { state in
            state.held[loop] -= 1
            if let taker = state.handOver(from: loop, giverHasWork: hasQueued) {
                return taker
            }
            if hasQueued {
                // Kept for this loop's next transfer: no other loop can take it meanwhile.
                state.granted[loop] += 1
                state.held[loop] += 1
            } else {
                state.used -= 1
            }
            return nil
        }
    }

    /// `loop` has nothing left to start: takes it out of line and gives back the slots it was
    /// handed but did not use. Returns the loops those slots went to (to wake).
    func idle(loop: Int) -> [Int] {
        state.withLock { state in
            state.waiting.removeAll { $0 == loop }
            var woken: [Int] = []
            while state.granted[loop] > 0 {
                state.granted[loop] -= 1
                state.held[loop] -= 1
                if let taker = state.handOver(from: loop, giverHasWork: false) {
                    woken.append(taker)
                } else {
                    state.used -= 1
                }
            }
            return woken
        }
    }

    /// Slots in use now (taken or handed over), for tests.
    var inUse: Int {
        state.withLock { $0.used }
    }
}

/// The thread-safe share handle of a client's loops: one DNS cache and one TLS session cache for
/// every loop, locked by the C callbacks of `ccurl_locked_share_create`.
///
/// `@unchecked Sendable` because it wraps a C pointer: libcurl serialises every use of the share
/// through those callbacks, and the handle is freed only after the last loop has freed its easy
/// handles (``LoopGroup/loopExited()``).
final class SharedCaches: @unchecked Sendable {
    private let locked: UnsafeMutablePointer<ccurl_locked_share>?

    init() {
        locked = CurlGlobal.isInitialized ? ccurl_locked_share_create(1) : nil
    }

    /// The `CURLSH` handle for `CURLOPT_SHARE`, `nil` when it could not be made (transfers still work).
    var handle: UnsafeMutableRawPointer? {
        locked.flatMap { ccurl_locked_share_handle($0) }
    }

    /// Frees the share handle. Call once, after every easy handle that used it is gone.
    func destroy() {
        ccurl_locked_share_destroy(locked)
    }
}

/// What the loops of one ``CurlClient`` share: their mailboxes (so that one loop can wake
/// another), the download slots and the caches.
package final class LoopGroup: Sendable {
    let mailboxes: [Mailbox]
    let slots: SlotPool
    let caches: SharedCaches
    /// Whether the client limits connections per host (its transfers to one host share a loop).
    let perHostLimit: Bool
    private let running: Atomic<Int>

    package init(loops: Int, maxConnections: Int, perHostLimit: Bool = false) {
        self.perHostLimit = perHostLimit
        mailboxes = (0..<loops).map { _ in Mailbox() }
        slots = SlotPool(limit: maxConnections, loops: loops)
        caches = SharedCaches()
        running = Atomic(loops)
    }

    /// Closes loop `index` as one that could not start (its epoll set, multi handle or thread
    /// could not be made): what was queued on it goes to the loops that run
    /// (``forward(_:from:)``), and later transfers pass it over, or fail with `failure` when no
    /// loop runs.
    /// - Returns: The callers waiting for its shutdown, to resume.
    @discardableResult
    package func markFailedToStart(loop index: Int, with failure: TransferFailure) -> [CheckedContinuation<Void, Never>] {
        let (commands, waiters) = mailboxes[index].close(startupFailure: failure)
        forward(commands, from: index)
        return waiters
    }

    /// Called by each loop once it has freed its multi handle; the last one frees the share handle.
    func loopExited() {
        if running.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            caches.destroy()
        }
    }

    /// Gives a transfer to its loop (``loop(for:)``) and returns its ticket; `completion` gets a
    /// failure at once when no loop takes it. A loop that closed because it could not start
    /// between the choice and the hand-over is passed over for the next choice, which no longer
    /// picks it; each such try closes a loop for good, so there are at most as many as loops.
    func dispatch(_ request: TransferRequest, completion: @escaping TransferCompletion) -> TransferTicket {
        for _ in 0...mailboxes.count {
            let loop = loop(for: request)
            switch mailboxes[loop].reserve() {
            case .success(let id):
                if mailboxes[loop].submit(id: id, request: request, completion: completion) {
                    return TransferTicket(loop: loop, id: id)
                }
            case .failure(let failure):
                completion(.failure(failure))
                return TransferTicket(loop: loop, id: 0)
            }
        }
        completion(.failure(Mailbox.shutDownFailure))  // not reached: see above
        return TransferTicket(loop: 0, id: 0)
    }

    /// Cancels transfer `id` of loop `loop`, following it to the loop it was given to when its
    /// first one could not start.
    func cancel(loop: Int, id: UInt64) {
        var target: (loop: Int, id: UInt64)? = (loop, id)
        for _ in 0...mailboxes.count {
            guard let next = target, mailboxes.indices.contains(next.loop) else { return }
            target = mailboxes[next.loop].cancel(id: next.id)
        }
    }

    /// Gives the transfers queued on loop `index` when it failed to start to the loops that run
    /// (or fails them with its startup failure when none does), keeping their first tickets
    /// good for cancelling.
    func forward(_ commands: [LoopCommand], from index: Int) {
        let mailbox = mailboxes[index]
        for case .start(let id, let request, let completion) in commands {
            guard mailbox.mayForward(id: id) else {
                completion(.failure(Mailbox.cancelledFailure))
                continue
            }
            let ticket = dispatch(request, completion: completion)
            if ticket.id != 0, !mailbox.forwarded(id: id, to: (ticket.loop, ticket.id)) {
                cancel(loop: ticket.loop, id: ticket.id)
            }
        }
    }

    /// The loop for a request: the one it follows up on (``TransferRequest/after``), else the one
    /// of its affinity key, else the least loaded.
    func loop(for request: TransferRequest) -> Int {
        if let after = request.after, mailboxes.indices.contains(after.loop) { return after.loop }
        return loop(forAffinity: request.affinityKey(perHostLimit: perHostLimit))
    }

    /// The loop for a new transfer: the one for its affinity key when it has one, else the one
    /// with the fewest transfers waiting or running. A loop that could not start (out of
    /// descriptors, say) gets nothing while another one runs: a keyed transfer goes to the next
    /// loop that did, the same one for the key every time. With none running, the transfer goes
    /// where it would have and fails with that loop's startup failure.
    package func loop(forAffinity key: String?) -> Int {
        let count = mailboxes.count
        guard count > 1 else { return 0 }
        if let key {
            let home = Self.loopIndex(forKey: key, loops: count)
            guard mailboxes[home].load == nil else { return home }
            return (1..<count).lazy.map { (home + $0) % count }.first { self.mailboxes[$0].load != nil } ?? home
        }
        var best = 0
        var bestLoad = Int.max
        for (index, mailbox) in mailboxes.enumerated() {
            guard let load = mailbox.load else { continue }
            if load < bestLoad {
                best = index
                bestLoad = load
                if load == 0 { break }
            }
        }
        return best
    }

    /// The loop of an affinity key: FNV-1a of its bytes modulo the number of loops, so the same
    /// key always reaches the same loop (and its connection cache) for the client's lifetime.
    package static func loopIndex(forKey key: String, loops: Int) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return Int(hash % UInt64(max(1, loops)))
    }
}

extension TransferRequest {
    /// The key that keeps this request on one loop: ``affinity`` when set; otherwise, for an
    /// HTTP/2 request or a client with a per-host connection limit, the URL's host (so the
    /// requests to one host share one connection cache, and the limit counts all of them).
    func affinityKey(perHostLimit: Bool) -> String? {
        if let affinity { return affinity }
        guard perHostLimit || httpVersion == .http2 else { return nil }
        return Self.authority(of: url)
    }

    /// The `host[:port]` part of an absolute URL (lower-cased), or the URL itself when it has none.
    static func authority(of url: String) -> String {
        // Byte by byte: every delimiter is ASCII, and this runs for every transfer started.
        let bytes = Array(url.utf8)
        var start = 0
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")), bytes[colon...].starts(with: "://".utf8) {
            start = colon + 3
        }
        let end = bytes[start...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.count
        if let at = bytes[start..<end].lastIndex(of: UInt8(ascii: "@")) { start = at + 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self).lowercased()
    }
}
