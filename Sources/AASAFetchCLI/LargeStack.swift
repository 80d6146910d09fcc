import CurlTransport
import Dispatch

/// Runs work whose depth of recursion its input decides on a thread of its own with a stack of
/// ``bytes``, and waits for it. The threads of the concurrency runtime may have only 2 MiB (under
/// a small `ulimit -s`, or `ulimit -v`; see `StackLimit` and `AddressSpace`), and a parser that
/// recurses once a level needs more for the deepest documents its library accepts.
enum LargeStack {
    /// The stack of the thread: reserved, and touched only as deep as the work goes (2.5 MiB for
    /// the deepest YAML config). Twice glibc's default, so no thread it would otherwise run on
    /// has as much.
    static let bytes = 16 << 20

    /// `body`'s result, computed on the large stack; on the calling thread when no thread can be
    /// started (a limit on threads), as it would have been.
    static func run<T>(_ body: @escaping @Sendable () -> T) -> T {
        let box = LargeStackResult<T>()
        let done = DispatchSemaphore(value: 0)
        let error = CurlClient.startThread(stackSize: bytes) {
            box.value = body()
            done.signal()
        }
        guard error == 0 else { return body() }
        done.wait()
        return box.value!
    }
}

/// Where a ``LargeStack`` thread leaves its result; read only after the thread signalled.
private final class LargeStackResult<T>: @unchecked Sendable {
    var value: T?
}
