import Foundation
import ArgumentParser
import Synchronization

/// The process's standard output and standard error, written with `write(2)`: the one output path
/// of every command.
///
/// A write that fails never crashes the process (Foundation's `FileHandle.write` traps on
/// `EPIPE`). The first failure on standard output is remembered and every later write is dropped:
/// ``Console`` asks ``standardOutputFailure`` so a long run can stop early, and
/// ``AASAFetchCommand/runFromCommandLine()`` ends the process by it (``finish(status:)``): a
/// reader that went away (`EPIPE`, `| head`) ends it quietly by SIGPIPE, as other Unix tools do;
/// any other failure (`ENOSPC`, `EIO`, `EBADF`) is `output-failed`, exit 2. Failures on standard
/// error are ignored (there is nowhere left to report them).
public enum StandardStreams {
    /// Why standard output stopped taking bytes.
    public enum Failure: Sendable, Equatable {
        /// The reader closed the pipe (`EPIPE`).
        case closed
        /// Another write error (`errno`).
        case failed(Int32)
    }

    /// Standard output's state: its first failure, and with ``bufferOutput()`` the bytes not
    /// written yet.
    private struct Output {
        var failure: Failure?
        var buffering = false
        var pending: [UInt8] = []
    }

    private static let output = Mutex(Output())

    /// Bytes held before a buffered standard output is written.
    static let bufferLimit = 64 * 1024
    /// The longest a byte waits in the buffer: a reader of a slow run sees each result soon.
    static let flushInterval: DispatchTimeInterval = .milliseconds(200)

    /// The first failure of standard output, `nil` while it works.
    public static var standardOutputFailure: Failure? { output.withLock { $0.failure } }

    /// From now on, when standard output is not a terminal, hold what is written until 64 KiB are
    /// waiting or 200 ms have passed, and write it in one call: a fetch run writes a record per
    /// host, and a `write(2)` per record was a tenth of the work of the task that judges and
    /// prints (`--route cdn`). Standard error is written at once and flushes standard output
    /// first, so the two streams keep their order when they go to one file; the process ends only
    /// after the buffer is written (``finishIfOutputFailed()``). Not for the line protocols
    /// (`match`, `refresh --watch/--worker`), whose reader waits for each line.
    static func bufferOutput() {
        guard isatty(STDOUT_FILENO) != 1 else { return }
        output.withLock { state in
            state.buffering = true
            guard flushTimer == nil else { return }
            let timer = DispatchSource.makeTimerSource(queue: .global())
            timer.schedule(deadline: .now() + flushInterval, repeating: flushInterval)
            timer.setEventHandler { flushOutput() }
            timer.resume()
            flushTimer = timer
        }
    }

    /// The timer of a buffered standard output, kept for the life of the process (set once,
    /// under the lock of ``output``).
    nonisolated(unsafe) private static var flushTimer: (any DispatchSourceTimer)?

    /// Writes bytes to standard output unless it failed before; returns whether they were written
    /// (or, buffered, taken).
    @discardableResult
    static func writeOutput(_ text: String) -> Bool {
        // The lock also keeps lines from two tasks whole.
        output.withLock { state in
            guard state.failure == nil else { return false }
            if state.buffering {
                state.pending.append(contentsOf: text.utf8)
                if state.pending.count >= bufferLimit { flush(&state) }
                return state.failure == nil
            }
            if let errorNumber = write(text, to: STDOUT_FILENO) {
                state.failure = errorNumber == EPIPE ? .closed : .failed(errorNumber)
                return false
            }
            return true
        }
    }

    /// Writes what a buffered standard output holds.
    static func flushOutput() {
        output.withLock { flush(&$0) }
    }

    /// ``flushOutput()`` unless another thread is writing standard output (a process ending on a
    /// signal must not wait for a reader that stopped reading).
    static func flushOutputIfIdle() {
        _ = output.withLockIfAvailable { flush(&$0) }
    }

    private static func flush(_ state: inout Output) {
        guard !state.pending.isEmpty else { return }
        defer { state.pending.removeAll(keepingCapacity: true) }
        guard state.failure == nil else { return }
        let errorNumber = state.pending.withUnsafeBufferPointer { write($0, to: STDOUT_FILENO) }
        if let errorNumber { state.failure = errorNumber == EPIPE ? .closed : .failed(errorNumber) }
    }

    private static let errorLock = Mutex(())

    /// Writes bytes to standard error (after what standard output holds); failures are ignored.
    static func writeError(_ text: String) {
        flushOutput()
        errorLock.withLock { _ in _ = write(text, to: STDERR_FILENO) }
    }

    /// Writes every byte (retrying after `EINTR` and short writes); returns `errno` on failure.
    private static func write(_ text: String, to descriptor: Int32) -> Int32? {
        var text = text
        return text.withUTF8 { write($0, to: descriptor) }
    }

    private static func write(_ buffer: UnsafeBufferPointer<UInt8>, to descriptor: Int32) -> Int32? {
        guard var base = buffer.baseAddress else { return nil }
        var left = buffer.count
        while left > 0 {
            let written = Glibc.write(descriptor, base, left)
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            left -= written
            base += written
        }
        return nil
    }

    /// Makes sure descriptors 0, 1 and 2 are open before anything else opens a file: a process
    /// started with one of them closed would otherwise give that number to the store's database,
    /// and results written to "standard output" would land in it. A closed one is taken by
    /// `/dev/null` opened read-only, so reading it gives end of file and writing it fails (`EBADF`:
    /// `output-failed` for standard output).
    static func reserveStandardDescriptors() {
        for descriptor in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
            let opened = open("/dev/null", O_RDONLY)
            if opened >= 0, opened != descriptor {
                _ = dup2(opened, descriptor)
                _ = close(opened)
            }
        }
    }

    /// Writes what a buffered standard output holds and stops buffering; then ends the process
    /// after a command finished, when standard output failed during it: by
    /// SIGPIPE (a closed reader), or with `output-failed` and exit 2. Returns when it did not fail.
    static func finishIfOutputFailed() {
        // The command is over: what is held is written, and whatever comes after (an error
        // document) is written at once.
        output.withLock { state in
            flush(&state)
            state.buffering = false
        }
        switch standardOutputFailure {
        case nil:
            return
        case .closed:
            // The convention of pipelines: the writer dies of SIGPIPE, silently (status 141 in a shell).
            signal(SIGPIPE, SIG_DFL)
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, SIGPIPE)
            pthread_sigmask(SIG_UNBLOCK, &set, nil)
            raise(SIGPIPE)
            _exit(128 + SIGPIPE)
        case .failed(let errorNumber):
            writeError("aasa-fetch: output-failed: cannot write standard output: \(String(cString: strerror(errorNumber)))\n")
            exit(ExitStatus.cannotRun.rawValue)
        }
    }
}

/// Escapes what would reach a terminal as control: every C0 control character (newline and tab
/// included), DEL, the C1 controls (U+0080–U+009F, where U+009B is a CSI on some terminals) and
/// the bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069), which reorder what is
/// shown. Server answers, files and stores are not trusted: their text goes through here before
/// any human output, so `ESC ] 0 ; … BEL` cannot retitle the terminal nor `ESC [ 2 J` clear it.
public enum TerminalText {
    /// `text` with every control character written as `\n`, `\r`, `\t`, `\xHH` or `\u{HHHH}`.
    public static func escaped(_ text: String) -> String {
        guard needsEscaping(text) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            guard isControl(scalar) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                result += scalar.value < 0x100
                    ? "\\x" + (hex.count < 2 ? "0" + hex : hex)
                    : "\\u{\(hex)}"
            }
        }
        return result
    }

    /// Whether a scalar is escaped by ``escaped(_:)``.
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// A fast look at the UTF-8 bytes: only text with a byte below 0x20, DEL, a C1 control
    /// (`C2 80`–`C2 9F`) or a bidirectional control (`E2 80 AA`–`E2 80 AE`, `E2 81 A6`–`E2 81 A9`)
    /// needs the slow path.
    private static func needsEscaping(_ text: String) -> Bool {
        var previous: (UInt8, UInt8) = (0, 0)
        for byte in text.utf8 {
            if byte < 0x20 || byte == 0x7F { return true }
            switch previous {
            case (_, 0xC2) where byte >= 0x80 && byte <= 0x9F: return true
            case (0xE2, 0x80) where byte >= 0xAA && byte <= 0xAE: return true
            case (0xE2, 0x81) where byte >= 0xA6 && byte <= 0xA9: return true
            default: break
            }
            previous = (previous.1, byte)
        }
        return false
    }
}
