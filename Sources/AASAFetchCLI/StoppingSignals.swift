import Dispatch
import Foundation
import Synchronization

/// The signals that end a run early: an interrupt (SIGINT), a termination (SIGTERM) and a hang-up
/// (SIGHUP: the terminal or the SSH session that started the run went away). Each would otherwise
/// end the process at once, leaving a spool behind or leases held.
///
/// A signal the process inherits as ignored stays ignored: `nohup aasa-fetch …` keeps running
/// after a hang-up, and a job a script started in the background (`&`, SIGINT ignored) is not
/// stopped by the terminal's interrupt key.
///
/// How a signal is caught: ``install(_:)`` sets a handler of its own with `sigaction` before it
/// returns, and the handler only writes the signal's number to a pipe, which a dispatch source
/// reads. (Dispatch's own signal sources set the signal to be ignored first and take it over only
/// once a queue thread has registered them: a signal in between would be lost, and the run would
/// go on.)
enum StoppingSignals {
    static let numbers: [Int32] = [SIGINT, SIGTERM, SIGHUP]

    /// The handlers of one ``install(_:)``; ``cancel()`` gives each signal its default action back.
    final class Installed {
        fileprivate let numbers: [Int32]
        fileprivate let source: (any DispatchSourceRead)?

        fileprivate init(numbers: [Int32], source: (any DispatchSourceRead)?) {
            self.numbers = numbers
            self.source = source
        }

        /// Restores the default action of the signals this installation caught.
        func cancel() {
            for number in numbers { signal(number, SIG_DFL) }
            source?.cancel()
        }
    }

    /// Routes every stopping signal that is not ignored to `handler` (on a global queue), in place
    /// of its default action, from the moment this returns. Without a descriptor left for the
    /// pipe, the signals keep their default action (they end the process at once).
    static func install(_ handler: @escaping @Sendable (Int32) -> Void) -> Installed {
        let pipe = SignalPipe.shared
        guard pipe.read >= 0 else { return Installed(numbers: [], source: nil) }
        let caught = numbers.filter { number in
            var previous = sigaction()
            sigaction(number, nil, &previous)
            if unsafeBitCast(previous.__sigaction_handler.sa_handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self) {
                return false
            }
            var action = sigaction()
            action.__sigaction_handler.sa_handler = writeSignalNumber
            action.sa_flags = SA_RESTART
            sigemptyset(&action.sa_mask)
            return sigaction(number, &action, nil) == 0
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: pipe.read, queue: .global())
        source.setEventHandler {
            var bytes = [UInt8](repeating: 0, count: 16)
            let count = read(pipe.read, &bytes, bytes.count)
            for number in bytes.prefix(max(0, count)) where caught.contains(Int32(number)) {
                handler(Int32(number))
            }
        }
        source.resume()
        return Installed(numbers: caught, source: source)
    }
}

/// The pipe the signal handler writes to: created once, both ends close-on-exec, the write end
/// non-blocking (a handler must never block; a full pipe already holds a stop).
private struct SignalPipe: Sendable {
    /// The read end (the write end is ``signalPipeWriteEnd``, for the handler).
    let read: Int32

    static let shared: SignalPipe = {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return SignalPipe(read: -1) }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        signalPipeWriteEnd.store(ends[1], ordering: .releasing)
        return SignalPipe(read: ends[0])
    }()
}

/// The write end for the handler: an atomic, set (by `SignalPipe.shared`) before any handler is
/// installed, so the handler only loads it.
private let signalPipeWriteEnd = Atomic<Int32>(-1)

/// The signal handler: async-signal-safe, it only writes the signal's number to the pipe.
private let writeSignalNumber: @convention(c) (Int32) -> Void = { number in
    let saved = errno
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(signalPipeWriteEnd.load(ordering: .acquiring), &byte, 1)
    errno = saved
}
