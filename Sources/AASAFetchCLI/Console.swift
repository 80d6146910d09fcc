import AASAFetchCore
import ArgumentParser
import Foundation
import Synchronization

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

    /// A console that paints (or not) whatever the streams are, for tests of the renderers.
    init(colors: Bool) {
        stdoutIsTerminal = false
        stderrIsTerminal = false
        colorsStdout = colors
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

    /// Writes an `Encodable` value as one pretty JSON document (``JSONOutput/string(_:)``) to
    /// standard output. A failure after it is reported on standard error only, so standard output
    /// holds one document.
    public func json<T: Encodable>(_ value: T) throws {
        let text = try JSONOutput.string(value)
        Self.state.withLock { $0.documentWritten = true }
        outJSON(text)
    }

    /// Writes an `Encodable` value as one compact JSON line (``JSONOutput/line(_:)``) to standard
    /// output: the line protocols (`match --json`, `match --cases`, `refresh --watch/--worker --json`).
    public func jsonLine<T: Encodable>(_ value: T) throws {
        outJSON(try JSONOutput.line(value))
    }

    /// Marks the start of a document written piece by piece (the streaming run).
    func beginDocument() {
        Self.state.withLock { $0.documentWritten = true }
    }

    /// Says that this run answers in JSON: `--json` was given (`lines`: as a line protocol, one
    /// compact object a line), so a failure is also written as a JSON error document.
    public func expectJSON(lines: Bool = false) {
        Self.state.withLock {
            $0.json = true
            $0.lines = $0.lines || lines
        }
    }

    /// Writes `aasa-fetch: CODE: message` to standard error: the one form of every error and
    /// warning line of every command.
    public func diagnostic(_ code: String, _ message: String) {
        err("aasa-fetch: \(code): \(message)")
    }

    /// Says that this run answers in a CI format (`--format github|sarif|junit`), so a failure
    /// before its document is also written in that format (``CIFailureDocument``).
    func expectFormat(_ format: OutputFormat) {
        Self.state.withLock { $0.format = format }
    }

    /// Reports a failure that ends the command: its line on standard error and, when the run
    /// answers in JSON and no document was written yet, the error document on standard output
    /// (``ErrorDocument``; one compact line in a line protocol); in a CI format, the failure in
    /// that format (a GitHub `::error` line even after other lines). `details` (usage text)
    /// follows the line on standard error.
    public func report(_ failure: CommandFailure, details: String? = nil) {
        diagnostic(failure.code, failure.message)
        if let details, !details.isEmpty {
            // Our own text: one escaped line each, so its line breaks stay line breaks.
            for line in details.split(separator: "\n", omittingEmptySubsequences: false) { err(String(line)) }
        }
        let (json, lines, written, format) = Self.state.withLock { ($0.json, $0.lines, $0.documentWritten, $0.format) }
        if let format, !written || format == .github,
           let text = CIFailureDocument.text(format, code: failure.code, message: failure.message, exitCode: failure.status.rawValue) {
            outJSONFragment(text)
            return
        }
        guard json, !written else { return }
        let document = ErrorDocument(error: .init(code: failure.code, message: failure.message))
        if let text = try? (lines ? JSONOutput.line(document) : JSONOutput.string(document)) { outJSON(text) }
    }

    private struct State {
        var json = false
        var lines = false
        var documentWritten = false
        var format: OutputFormat?
    }

    private static let state = Mutex(State())

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
    ///
    /// The markers are found in the UTF-8 bytes, not in `Character`s: a character is a grapheme
    /// cluster, so text from outside that ends in a prepend mark (U+0600) or starts with a
    /// combining one (U+0301) would merge with a marker or its `m`, and the marker's raw text and
    /// a stray `0m` were printed, or the colour left on.
    static func human(_ line: String) -> String {
        let bytes = Array(line.utf8)
        let needle = markerBytes
        var pieces: [ArraySlice<UInt8>] = []
        var start = 0
        var index = 0
        while index + needle.count <= bytes.count {
            if bytes[index] == needle[0], bytes[index..<(index + needle.count)].elementsEqual(needle) {
                pieces.append(bytes[start..<index])
                index += needle.count
                start = index
            } else {
                index += 1
            }
        }
        guard !pieces.isEmpty else { return TerminalText.escaped(line) }
        pieces.append(bytes[start...])
        var result = TerminalText.escaped(String(decoding: pieces[0], as: UTF8.self))
        for piece in pieces.dropFirst() {
            if let end = piece.firstIndex(of: UInt8(ascii: "m")),
               ANSIColor.parameters.contains(String(decoding: piece[piece.startIndex..<end], as: UTF8.self)) {
                result += "\u{1B}[" + String(decoding: piece[piece.startIndex..<end], as: UTF8.self) + "m"
                    + TerminalText.escaped(String(decoding: piece[(end + 1)...], as: UTF8.self))
            } else {
                result += TerminalText.escaped(String(decoding: piece, as: UTF8.self))
            }
        }
        return result
    }

    private static let markerBytes = Array(marker.utf8)
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

/// The JSON encoding every command uses for `--json`: ``ReportJSONWriter`` (every key present,
/// `null` for an absent value, keys in declaration order, ISO 8601 dates).
public enum JSONOutput {
    /// Encodes a value as one pretty document (two spaces per level).
    public static func string<T: Encodable>(_ value: T) throws -> String {
        try ReportJSONWriter(style: .pretty).string(value)
    }

    /// Encodes a value as one compact JSON line (for line protocols).
    public static func line<T: Encodable>(_ value: T) throws -> String {
        try ReportJSONWriter(style: .compact).string(value)
    }
}

/// What a command that cannot run prints with `--json`:
/// `{"schemaVersion": 1, "error": {"code": "...", "message": "..."}}`.
public struct ErrorDocument: Encodable, Sendable {
    /// The failure.
    public struct Failure: Encodable, Sendable {
        /// The stable code (`usage` for a usage error).
        public var code: String
        /// What happened, for people.
        public var message: String
    }

    /// The JSON shape's version.
    public var schemaVersion = JSONSchemaVersion.current
    /// The failure.
    public var error: Failure
}
