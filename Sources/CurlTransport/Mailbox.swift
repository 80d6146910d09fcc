internal import CCurl
import Synchronization

/// The eventfd that wakes a loop sleeping in `epoll_wait`, reachable from other threads.
///
/// Written only while holding the mailbox lock and only while the loop has published it (the
/// loop withdraws it under the same lock before closing the descriptor).
struct LoopWaker: Sendable {
    let descriptor: Int32
}

/// Work posted to a loop thread.
enum LoopCommand: Sendable {
    /// Start a transfer.
    case start(id: UInt64, request: TransferRequest, completion: TransferCompletion)
    /// Cancel a running transfer.
    case cancel(id: UInt64)
}

/// The lock-guarded inbox between callers of ``CurlClient`` and one of its loop threads.
final class Mailbox: Sendable {
    private enum Phase {
        case reserved, queued, active, cancelledEarly
        /// Queued when the loop failed to start: being given to another loop.
        case forwarding
        /// Cancelled while being given to another loop.
        case forwardingCancelled
    }

    private enum Lifecycle {
        case running, stopping, stopped
    }

    private struct State {
        var nextID: UInt64 = 1
        var phases: [UInt64: Phase] = [:]
        var commands: [LoopCommand] = []
        var lifecycle = Lifecycle.running
        var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
        var waker: LoopWaker?
        /// Why the loop could not start: every transfer given to it fails with this.
        var startupFailure: TransferFailure?
        var threadExited = false
        /// Transfers handed to curl by this loop so far (for tests of the spread over loops).
        var started = 0
        /// Where the transfers queued here when the loop failed to start went (their loop and
        /// identifier there), so that cancelling them with their first ticket still works.
        var forwarded: [UInt64: (loop: Int, id: UInt64)] = [:]

        func wake() {
            if let waker {
                ccurl_events_wake(waker.descriptor)
            }
        }
    }

    private let state = Mutex(State())

    static let cancelledFailure = TransferFailure(kind: .cancelled, message: "the transfer was cancelled")
    static let shutDownFailure = TransferFailure(kind: .cancelled, message: "the client was shut down")

    // MARK: - Caller side

    /// Reserves an identifier for a new `perform` call, or returns the failure to throw at once.
    func reserve() -> Result<UInt64, TransferFailure> {
        state.withLock { state in
            guard state.lifecycle == .running else {
                if let failure = state.startupFailure {
                    return .failure(failure)
                }
                return .failure(Self.shutDownFailure)
            }
            let id = state.nextID
            state.nextID += 1
            state.phases[id] = .reserved
            return .success(id)
        }
    }

    /// Transfers reserved and not yet finished (waiting anywhere or running): the loop's load;
    /// `nil` when the loop could not start (``close(startupFailure:)`` with a failure), so a
    /// client with other loops sends it nothing more.
    var load: Int? {
        state.withLock { $0.startupFailure == nil ? $0.phases.count : nil }
    }

    /// Transfers this loop has handed to curl so far.
    var startedCount: Int {
        state.withLock { $0.started }
    }

    /// Wakes the loop (another loop handed it a download slot).
    func wake() {
        state.withLock { $0.wake() }
    }

    /// Queues the start of a reserved transfer and wakes the loop; fails it at once when it was
    /// cancelled first or the client is stopping.
    /// - Returns: `false`, without running `completion`, when the loop closed between the
    ///   reservation and this call because it could not start (out of descriptors, say): the
    ///   caller gives the transfer to another loop (``LoopGroup/loop(forAffinity:)`` no longer
    ///   picks this one), which fails it with the startup failure when none runs.
    func submit(id: UInt64, request: TransferRequest, completion: @escaping TransferCompletion) -> Bool {
        enum Outcome {
            case queued, failed(TransferFailure), loopNotStarted
        }
        let outcome = state.withLock { state -> Outcome in
            guard state.lifecycle != .stopped || state.startupFailure == nil else {
                return .loopNotStarted
            }
            guard state.phases[id] == .reserved else {
                state.phases[id] = nil
                return .failed(state.lifecycle == .running ? Self.cancelledFailure : Self.shutDownFailure)
            }
            guard state.lifecycle == .running else {
                state.phases[id] = nil
                return .failed(Self.shutDownFailure)
            }
            state.phases[id] = .queued
            state.commands.append(.start(id: id, request: request, completion: completion))
            state.wake()
            return .queued
        }
        switch outcome {
        case .queued:
            return true
        case .failed(let failure):
            completion(.failure(failure))
            return true
        case .loopNotStarted:
            return false
        }
    }

    /// Cancels a transfer wherever it is: before submission, queued, or running in curl.
    /// - Returns: The loop and identifier to cancel instead, when the transfer was given to
    ///   another loop because this one could not start (``LoopGroup/cancel(loop:id:)`` follows it).
    func cancel(id: UInt64) -> (loop: Int, id: UInt64)? {
        enum Step {
            case none, fail(TransferCompletion), follow(loop: Int, id: UInt64)
        }
        let step: Step = state.withLock { state in
            if let target = state.forwarded[id] {
                return .follow(loop: target.loop, id: target.id)
            }
            switch state.phases[id] {
            case .reserved:
                state.phases[id] = .cancelledEarly
                return .none
            case .queued:
                state.phases[id] = nil
                guard let index = state.commands.firstIndex(where: { command in
                    if case .start(let queuedID, _, _) = command { return queuedID == id }
                    return false
                }) else { return .none }
                let command = state.commands.remove(at: index)
                if case .start(_, _, let completion) = command { return .fail(completion) }
                return .none
            case .active:
                state.commands.append(.cancel(id: id))
                state.wake()
                return .none
            case .forwarding:
                state.phases[id] = .forwardingCancelled
                return .none
            case .cancelledEarly, .forwardingCancelled, nil:
                return .none
            }
        }
        switch step {
        case .none:
            return nil
        case .fail(let completion):
            completion(.failure(Self.cancelledFailure))
            return nil
        case .follow(let loop, let id):
            return (loop, id)
        }
    }

    /// Asks the loop to stop and waits until it has failed every transfer and freed every handle.
    func shutdown() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let alreadyStopped = state.withLock { state -> Bool in
                switch state.lifecycle {
                case .stopped:
                    return true
                case .running, .stopping:
                    state.lifecycle = .stopping
                    state.shutdownWaiters.append(waiter)
                    state.wake()
                    return false
                }
            }
            if alreadyStopped {
                waiter.resume()
            }
        }
    }

    /// Asks the loop to stop without waiting (used from `deinit`).
    func requestStop() {
        state.withLock { state in
            if state.lifecycle == .running {
                state.lifecycle = .stopping
                state.wake()
            }
        }
    }

    /// Whether the loop thread has returned (after ``shutdown()``).
    var threadExited: Bool {
        state.withLock { $0.threadExited }
    }

    // MARK: - Loop side

    /// Records that the loop thread is returning; nothing touches curl after this.
    func markThreadExited() {
        state.withLock { $0.threadExited = true }
    }

    /// Makes the loop's wake-up descriptor reachable for wake-ups.
    func publish(waker: LoopWaker) {
        state.withLock { state in
            state.waker = waker
            state.wake()  // commands may have been queued before the handle existed
        }
    }

    /// Takes every queued command, marking started transfers active.
    func takeCommands() -> (commands: [LoopCommand], stop: Bool) {
        state.withLock { state in
            let commands = state.commands
            state.commands = []
            for case .start(let id, _, _) in commands {
                state.phases[id] = .active
            }
            return (commands, state.lifecycle != .running)
        }
    }

    /// Counts a transfer handed to curl.
    func noteStarted() {
        state.withLock { $0.started += 1 }
    }

    /// Forgets a transfer that finished (its completion is about to run).
    func finished(id: UInt64) {
        state.withLock { state in
            state.phases[id] = nil
        }
    }

    /// Whether transfer `id`, queued when this loop failed to start, may still be given to another
    /// loop (`false`: it was cancelled meanwhile).
    func mayForward(id: UInt64) -> Bool {
        state.withLock { state in
            guard state.phases[id] == .forwarding else {
                state.phases[id] = nil
                return false
            }
            return true
        }
    }

    /// Records where transfer `id` went; returns `false` when it was cancelled while it was being
    /// given there (the caller cancels it on its new loop).
    func forwarded(id: UInt64, to target: (loop: Int, id: UInt64)) -> Bool {
        state.withLock { state in
            let cancelled = state.phases[id] == .forwardingCancelled
            state.phases[id] = nil
            if !cancelled { state.forwarded[id] = target }
            return !cancelled
        }
    }

    /// Marks the client stopped, withdraws the wake-up descriptor and returns what is left to fail
    /// and the shutdown waiters to resume.
    func close(startupFailure: TransferFailure? = nil) -> (
        commands: [LoopCommand], waiters: [CheckedContinuation<Void, Never>]
    ) {
        state.withLock { state in
            state.lifecycle = .stopped
            state.startupFailure = startupFailure
            state.waker = nil
            state.phases = [:]
            let commands = state.commands
            state.commands = []
            if startupFailure != nil {
                for case .start(let id, _, _) in commands {
                    state.phases[id] = .forwarding
                }
            }
            let waiters = state.shutdownWaiters
            state.shutdownWaiters = []
            return (commands, waiters)
        }
    }
}
