import Synchronization

/// A request to stop a long-running job (SIGINT/SIGTERM/SIGHUP in `refresh`): jobs check it
/// between steps, abandon in-flight downloads when it fires, and sleep through it without waiting.
public final class StopSignal: Sendable {
    private struct State {
        var stopped = false
        var handlers: [(id: UInt64, run: @Sendable () -> Void)] = []
        var nextID: UInt64 = 0
    }

    /// A handler registered with ``whenStopped(_:)``, to remove with ``removeHandler(_:)``.
    public struct Handler: Sendable, Hashable {
        fileprivate let id: UInt64
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
            return state.handlers.map(\.run)
        }
        for handler in handlers { handler() }
    }

    /// Runs `handler` when the signal fires (at once when it already has).
    @discardableResult
    public func whenStopped(_ handler: @escaping @Sendable () -> Void) -> Handler {
        let (runNow, id) = state.withLock { state -> (Bool, UInt64) in
            state.nextID += 1
            if state.stopped { return (true, state.nextID) }
            state.handlers.append((state.nextID, handler))
            return (false, state.nextID)
        }
        if runNow { handler() }
        return Handler(id: id)
    }

    /// Forgets a handler that is no longer needed (long-running loops register one per step).
    public func removeHandler(_ handler: Handler) {
        state.withLock { state in state.handlers.removeAll { $0.id == handler.id } }
    }

    /// Sleeps for `duration`, returning early when the signal fires. Returns whether it fired.
    @discardableResult
    public func sleep(for duration: Duration) async -> Bool {
        let sleeper = Task { try? await Task.sleep(for: duration) }
        let handler = whenStopped { sleeper.cancel() }
        await sleeper.value
        removeHandler(handler)
        return isStopped
    }
}
