import Synchronization

/// A request to stop a long-running job (SIGINT/SIGTERM in `refresh --watch`): jobs check it
/// between steps, abandon in-flight downloads when it fires, and sleep through it without waiting.
public final class StopSignal: Sendable {
    private struct State {
        var stopped = false
        var handlers: [@Sendable () -> Void] = []
    }

    private let state = Mutex(State())

    /// Creates a signal that has not fired.
    public init() {}

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { state.withLock { $0.stopped } }

    /// Fires the signal: runs every registered handler once. Later calls do nothing.
    public func stop() {
        let handlers: [@Sendable () -> Void] = state.withLock { state in
            guard !state.stopped else { return [] }
            state.stopped = true
            defer { state.handlers = [] }
            return state.handlers
        }
        for handler in handlers { handler() }
    }

    /// Runs `handler` when the signal fires (at once when it already has).
    public func whenStopped(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.stopped { return true }
            state.handlers.append(handler)
            return false
        }
        if runNow { handler() }
    }

    /// Sleeps for `duration`, returning early when the signal fires. Returns whether it fired.
    @discardableResult
    public func sleep(for duration: Duration) async -> Bool {
        let sleeper = Task { try? await Task.sleep(for: duration) }
        whenStopped { sleeper.cancel() }
        await sleeper.value
        return isStopped
    }
}
