import Dispatch
import Foundation

/// The signals that end a run early: an interrupt (SIGINT), a termination (SIGTERM) and a hang-up
/// (SIGHUP: the terminal or the SSH session that started the run went away). Each would otherwise
/// end the process at once, leaving a spool behind or leases held.
///
/// A signal the process inherits as ignored stays ignored: `nohup aasa-fetch …` keeps running
/// after a hang-up, and a job a script started in the background (`&`, SIGINT ignored) is not
/// stopped by the terminal's interrupt key.
enum StoppingSignals {
    static let numbers: [Int32] = [SIGINT, SIGTERM, SIGHUP]

    /// Routes every stopping signal that is not ignored to `handler` (on a global queue), in place
    /// of its default action. Cancelling a returned source gives its signal its default action back.
    static func install(_ handler: @escaping @Sendable (Int32) -> Void) -> [any DispatchSourceSignal] {
        numbers.compactMap { number in
            let previous = signal(number, SIG_IGN)
            if unsafeBitCast(previous, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self) { return nil }
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { handler(number) }
            source.setCancelHandler { signal(number, SIG_DFL) }
            source.resume()
            return source
        }
    }
}
