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

    /// A console with colours on or off whatever the streams are (for tests of the rendering).
    init(colors: Bool) {
        stdoutIsTerminal = colors
        stderrIsTerminal = false
        colorsStdout = colors
    }

    init() {
        stdoutIsTerminal = isatty(STDOUT_FILENO) == 1
        stderrIsTerminal = isatty(STDERR_FILENO) == 1
        let noColor = ProcessInfo.processInfo.environment["NO_COLOR"].map { !$0.isEmpty } ?? false
        colorsStdout = stdoutIsTerminal && !noColor
            && ProcessInfo.processInfo.environment["TERM"] != "dumb"
    }

    /// Writes a line of human output to standard output. Control characters in it (from servers,
    /// files, stores: none of them is trusted) are escaped (``TerminalText``); only the colours of
    /// ``paint(_:_:)`` reach the terminal.
    public func out(_ line: String) {
        StandardStreams.writeOutput(Self.human(line) + "\n")
    }

    /// Writes a line to standard error, escaped like ``out(_:)``.
    public func err(_ line: String) {
        StandardStreams.writeError(Self.human(line) + "\n")
    }

    /// Writes machine output (JSON text, whose strings are escaped already) to standard output as
    /// it is, with a line feed.
    public func outJSON(_ text: String) {
        StandardStreams.writeOutput(text + "\n")
    }

    /// Writes machine output to standard output as it is, without a line feed.
    public func outJSONFragment(_ text: String) {
        StandardStreams.writeOutput(text)
    }

    /// Writes our own terminal control text (the progress line) to standard error as it is.
    func errControl(_ text: String) {
        StandardStreams.writeError(text)
    }

    /// Whether standard output stopped taking output (a closed pipe, a full disk): a long run stops
    /// starting work, and the process ends by it (``StandardStreams``).
    public var outputFailed: Bool { StandardStreams.standardOutputFailure != nil }

    /// Writes an `Encodable` value as pretty-printed JSON (sorted keys, no escaped slashes) to standard output.
    public func json<T: Encodable>(_ value: T) throws {
        outJSON(try JSONOutput.string(value))
    }

    /// Wraps `text` in an ANSI colour when standard output is a terminal.
    ///
    /// The colour is carried to ``out(_:)`` by a marker that holds a random number drawn once per
    /// process, so text from outside cannot forge one; ``out(_:)`` escapes everything else.
    public func paint(_ text: String, _ color: ANSIColor) -> String {
        colorsStdout ? "\(Self.marker)\(color.rawValue)m\(text)\(Self.marker)0m" : text
    }

    /// Starts a colour: a private-use character, a per-process random number, another one; then the SGR
    /// parameter and `m`.
    private static let marker = "\u{E000}\(UInt64.random(in: 1...UInt64.max))\u{E001}"

    /// A human line: escaped, with the markers of ``paint(_:_:)`` turned into colours.
    static func human(_ line: String) -> String {
        guard line.contains(marker) else { return TerminalText.escaped(line) }
        var parts = line.components(separatedBy: marker)[...]
        var result = TerminalText.escaped(parts.removeFirst())
        for part in parts {
            if let end = part.firstIndex(of: "m"), ANSIColor.parameters.contains(String(part[..<end])) {
                result += "\u{1B}[\(part[..<end])m" + TerminalText.escaped(String(part[part.index(after: end)...]))
            } else {
                result += TerminalText.escaped(part)
            }
        }
        return result
    }
}

/// ANSI colours used in human output.
public enum ANSIColor: String, Sendable, CaseIterable {
    case red = "31"
    case green = "32"
    case yellow = "33"
    case dim = "2"
    case bold = "1"

    /// Every SGR parameter ``Console/paint(_:_:)`` writes (the colours and the reset).
    static let parameters: Set<String> = Set(allCases.map(\.rawValue) + ["0"])
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
