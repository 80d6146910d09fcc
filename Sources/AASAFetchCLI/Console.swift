import Foundation

/// Where commands write: results to standard output, logs, warnings and progress to standard error.
///
/// Colour is used only when the stream is a terminal and `NO_COLOR` is not set.
public struct Console: Sendable {
    /// Whether standard output is a terminal.
    public let stdoutIsTerminal: Bool
    /// Whether standard error is a terminal.
    public let stderrIsTerminal: Bool
    /// Whether colour escapes may be written to standard output.
    public let colorsStdout: Bool

    /// A console bound to the process's standard streams.
    public static let standard = Console()

    init() {
        stdoutIsTerminal = isatty(STDOUT_FILENO) == 1
        stderrIsTerminal = isatty(STDERR_FILENO) == 1
        let noColor = ProcessInfo.processInfo.environment["NO_COLOR"].map { !$0.isEmpty } ?? false
        colorsStdout = stdoutIsTerminal && !noColor
            && ProcessInfo.processInfo.environment["TERM"] != "dumb"
    }

    /// Whether standard output and standard error are the same terminal (a progress line on
    /// standard error must then be erased before standard output writes).
    public var stdoutSharesTerminalWithStderr: Bool {
        guard stdoutIsTerminal, stderrIsTerminal else { return false }
        var output = stat()
        var error = stat()
        guard fstat(STDOUT_FILENO, &output) == 0, fstat(STDERR_FILENO, &error) == 0 else { return true }
        return output.st_rdev == error.st_rdev
    }

    /// Writes a line to standard output.
    public func out(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Writes a line to standard error.
    public func err(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// Writes an `Encodable` value as pretty-printed JSON (sorted keys, no escaped slashes) to standard output.
    public func json<T: Encodable>(_ value: T) throws {
        out(try JSONOutput.string(value))
    }

    /// Wraps `text` in an ANSI colour when standard output is a terminal.
    public func paint(_ text: String, _ color: ANSIColor) -> String {
        colorsStdout ? "\u{1B}[\(color.rawValue)m\(text)\u{1B}[0m" : text
    }
}

/// ANSI colours used in human output.
public enum ANSIColor: String, Sendable {
    case red = "31"
    case green = "32"
    case yellow = "33"
    case dim = "2"
    case bold = "1"
}

/// The JSON encoding every command uses for `--json`.
public enum JSONOutput {
    /// Encodes a value as pretty, key-sorted JSON without escaped slashes.
    public static func string<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Encodes a value as one compact JSON line (for line protocols).
    public static func line<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
