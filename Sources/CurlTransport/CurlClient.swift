internal import CCurl
import Foundation

/// Identifies a transfer started with ``HTTPTransferring/start(_:completion:)``, to cancel it.
public struct TransferTicket: Hashable, Sendable {
    /// The loop the transfer was given to.
    let loop: Int
    /// The transfer's identifier on that loop (0: it never reached a loop).
    let id: UInt64
    /// The task running it, for transports without a queue of their own (the default `start`).
    let task: Task<Void, Never>?

    init(loop: Int, id: UInt64, task: Task<Void, Never>? = nil) {
        self.loop = loop
        self.id = id
        self.task = task
    }
}

/// Performs HTTPS GET transfers with libcurl's multi interface over one or more loop threads.
///
/// Each loop is an OS thread that owns its own multi handle and the easy handle of every transfer
/// it runs, drives curl through its socket interface (`curl_multi_socket_action` on the sockets an
/// epoll set reports ready), and gets its work through a lock-guarded inbox and an eventfd, so
/// callers never block a thread of the cooperative pool. A new
/// transfer goes to the loop with the fewest transfers waiting or running, unless its
/// ``TransferRequest/affinity`` (or, for HTTP/2 and clients with a per-host limit, its host) ties
/// it to one loop; HTTP/2 transfers to one host share a connection. The loops share one DNS cache
/// and one TLS session cache, and at most `maxConnections` transfers run at once over all of them.
/// Call ``shutdown()`` before the process exits.
public final class CurlClient: HTTPTransferring, Sendable {
    private let group: LoopGroup

    /// The number of loops when none is asked for: one per core this process may use (``CPUBudget``).
    public static var defaultThreads: Int { CPUBudget.cores }

    /// The most loops a client runs.
    public static let maxThreads = 64

    /// Starts a client and its loop threads.
    /// - Parameters:
    ///   - maxConnections: Most transfers running at once over every loop (each loop's
    ///     `CURLMOPT_MAX_TOTAL_CONNECTIONS` too); further transfers wait in their loop's queue and
    ///     start in order on that loop's thread as others finish (their timeouts start then).
    ///   - maxConnectionsPerHost: Most connections to one host at once
    ///     (`CURLMOPT_MAX_HOST_CONNECTIONS`); 0, the default, sets no limit. With a limit, the
    ///     transfers to one host all run on one loop, so the limit holds for the client. libcurl
    ///     counts a transfer sent elsewhere by `connectTo` against the *target*, so any limit here
    ///     would also cap every host of a run sent to one staging server; a caller never needs two
    ///     connections to one host anyway (one download per host at a time; HTTP/2 transfers wait
    ///     for the shared connection with `CURLOPT_PIPEWAIT`).
    ///   - threads: Loop threads (1 … ``maxThreads``); `nil` is ``defaultThreads``.
    public convenience init(maxConnections: Int = 32, maxConnectionsPerHost: Int = 0, threads: Int? = nil) {
        self.init(maxConnections: maxConnections, maxConnectionsPerHost: maxConnectionsPerHost, threads: threads, threadStarter: { _, body in Self.startThread(body) })
    }

    /// ``init(maxConnections:maxConnectionsPerHost:threads:)`` with the function that starts loop
    /// N's thread and returns 0 or `pthread_create`'s error (for tests of a loop that cannot start).
    package init(maxConnections: Int, maxConnectionsPerHost: Int, threads: Int?,
                 threadStarter: (_ loop: Int, _ body: @escaping @Sendable () -> Void) -> Int32) {
        let count = min(Self.maxThreads, max(1, threads ?? Self.defaultThreads))
        let group = LoopGroup(loops: count, maxConnections: maxConnections, perHostLimit: maxConnectionsPerHost > 0)
        self.group = group
        for index in 0..<count {
            let error = threadStarter(index) {
                // The name profilers and /proc/PID/task/*/comm show; Linux keeps 15 characters.
                ccurl_name_current_thread("aasa-curl-\(index)")
                MultiLoop.run(index: index, group: group, maxConnections: maxConnections, maxConnectionsPerHost: maxConnectionsPerHost)
                group.mailboxes[index].markThreadExited()
            }
            if error != 0 {
                // Out of threads (`ulimit -u`, a cgroup's `pids.max`): the loop is closed as one
                // that could not start, so the others take its work, or every transfer fails
                // with this run error instead of waiting for a loop that never runs.
                let kind: TransferFailureKind = error == EAGAIN ? .threadsExhausted : .invalidRequest
                let failure = TransferFailure(kind: kind, message: "curl loop \(index) could not start its thread: \(String(cString: strerror(error)))")
                MultiLoop.notStarted(index: index, group: group, failure: failure)
            }
        }
    }

    /// Starts `body` on a new detached thread with the process's default attributes (its stack
    /// size as ``AddressSpace/fitLimit()`` or ``StackLimit/fitLimit()`` set it), or a stack of
    /// `stackSize` bytes. Unlike Foundation's `Thread`, which ignores the result of
    /// `pthread_create`, a thread that cannot be made is reported.
    /// - Returns: 0, or the error of `pthread_create` (`EAGAIN` when this process may start no
    ///   more threads), or of `pthread_attr_setstacksize`.
    package static func startThread(stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) -> Int32 {
        final class Body: Sendable {
            let run: @Sendable () -> Void
            init(_ run: @escaping @Sendable () -> Void) { self.run = run }
        }
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        if let stackSize {
            let error = pthread_attr_setstacksize(&attributes, stackSize)
            if error != 0 {
                Unmanaged<Body>.fromOpaque(context).release()
                return error
            }
        }
        var thread = pthread_t()
        let error = pthread_create(&thread, &attributes, { context in
            Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        if error != 0 {
            Unmanaged<Body>.fromOpaque(context).release()
        }
        return error
    }

    deinit {
        for mailbox in group.mailboxes {
            mailbox.requestStop()
        }
    }

    /// The number of loop threads.
    public var threads: Int { group.mailboxes.count }

    /// Performs one GET and returns the response, whatever its HTTP status; redirects are reported
    /// in ``TransferResponse/redirectURL``, never followed.
    ///
    /// Cancelling the calling task removes the transfer and throws a failure of kind
    /// ``TransferFailureKind/cancelled``.
    /// - Parameter request: The request.
    /// - Returns: The complete response.
    /// - Throws: ``TransferFailure`` when no complete response arrived, classified by ``TransferFailureKind``.
    public func perform(_ request: TransferRequest) async throws(TransferFailure) -> TransferResponse {
        // As ``LoopGroup/dispatch(_:completion:)``: a loop that closed because it could not start
        // between the choice and the hand-over is passed over (at most once per loop).
        for _ in 0...group.mailboxes.count {
            let loop = group.loop(for: request)
            let id = try group.mailboxes[loop].reserve().get()
            let result = await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Result<TransferResponse, TransferFailure>?, Never>) in
                    if !group.mailboxes[loop].submit(id: id, request: request, completion: { continuation.resume(returning: $0) }) {
                        continuation.resume(returning: nil)
                    }
                }
            } onCancel: {
                group.cancel(loop: loop, id: id)
            }
            if let result {
                return try result.get()
            }
        }
        throw Mailbox.shutDownFailure  // not reached: see above
    }

    /// Starts one GET without a task: the request waits as a plain value in its loop's queue
    /// until a download slot is free, and `completion` gets the result, as ``perform(_:)`` returns
    /// or throws it.
    ///
    /// `completion` runs exactly once, on the loop thread that ran the transfer; for one that
    /// never ran, on the thread that ended it (the caller's, before this returns, when the client
    /// is shut down; the canceller's; or that of a loop that could not start). It must return
    /// quickly and never block, since no other transfer of that loop progresses meanwhile.
    /// - Parameters:
    ///   - request: The request.
    ///   - completion: Receives the response or the failure.
    /// - Returns: The ticket to give ``cancel(_:)``.
    @discardableResult
    public func start(_ request: TransferRequest, completion: @escaping TransferCompletion) -> TransferTicket {
        group.dispatch(request, completion: completion)
    }

    /// Cancels a transfer started with ``start(_:completion:)`` wherever it is (queued or
    /// running): its completion gets a failure of kind ``TransferFailureKind/cancelled``. Does
    /// nothing once the transfer has finished.
    public func cancel(_ ticket: TransferTicket) {
        guard ticket.id != 0, group.mailboxes.indices.contains(ticket.loop) else { return }
        group.cancel(loop: ticket.loop, id: ticket.id)
    }

    /// Whether every loop thread has finished (for tests of ``shutdown()``).
    package var loopThreadExited: Bool { group.mailboxes.allSatisfy(\.threadExited) }

    /// Transfers each loop has handed to curl so far (for tests of the spread over loops).
    package var transfersStartedPerLoop: [Int] { group.mailboxes.map(\.startedCount) }

    /// The loop that requests with this affinity key run on (for tests).
    package func loopIndex(forAffinity key: String) -> Int {
        LoopGroup.loopIndex(forKey: key, loops: group.mailboxes.count)
    }

    /// Download slots in use now (for tests of the limit over loops).
    package var slotsInUse: Int { group.slots.inUse }

    /// Fails every pending transfer with ``TransferFailureKind/cancelled``, frees every curl handle
    /// and stops every loop thread. Idempotent; later ``perform(_:)`` calls fail at once.
    public func shutdown() async {
        for mailbox in group.mailboxes {
            mailbox.requestStop()
        }
        for mailbox in group.mailboxes {
            await mailbox.shutdown()
        }
    }
}
