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

    private static let outputFailure = Mutex<Failure?>(nil)

    /// The first failure of standard output, `nil` while it works.
    public static var standardOutputFailure: Failure? { outputFailure.withLock { $0 } }

    /// Writes bytes to standard output unless it failed before; returns whether they were written.
    @discardableResult
    static func writeOutput(_ text: String) -> Bool {
        // The lock also keeps lines from two tasks whole.
        outputFailure.withLock { failure in
            guard failure == nil else { return false }
            if let errorNumber = write(text, to: STDOUT_FILENO) {
                failure = errorNumber == EPIPE ? .closed : .failed(errorNumber)
                return false
            }
            return true
        }
    }

    private static let errorLock = Mutex(())

    /// Writes bytes to standard error; failures are ignored.
    static func writeError(_ text: String) {
        errorLock.withLock { _ in _ = write(text, to: STDERR_FILENO) }
    }

    /// Writes every byte (retrying after `EINTR` and short writes); returns `errno` on failure.
    private static func write(_ text: String, to descriptor: Int32) -> Int32? {
        var text = text
        return text.withUTF8 { buffer -> Int32? in
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

    /// Ends the process after a command finished, when standard output failed during it: by
    /// SIGPIPE (a closed reader), or with `output-failed` and exit 2. Returns when it did not fail.
    static func finishIfOutputFailed() {
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
