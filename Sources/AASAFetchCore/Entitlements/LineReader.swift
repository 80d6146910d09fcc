import Foundation

/// Why a text file could not be read line by line.
public enum LineReaderError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file could not be opened or read; the system's message.
    case unreadable(String)
    /// A line is not valid UTF-8 (1-based, counting line feeds).
    case invalidUTF8(line: Int)
    /// A line is longer than the reader's limit (1-based, counting line feeds); nothing past the
    /// limit was read into memory.
    case lineTooLong(line: Int, limit: Int)

    public var description: String {
        switch self {
        case .unreadable(let message): message
        case .invalidUTF8(let line): "line \(line) is not valid UTF-8"
        case .lineTooLong(let line, let limit): "line \(line) is longer than \(limit) bytes"
        }
    }
}

/// Reads a UTF-8 text file one line at a time in buffered chunks, so a list of any length is never
/// held whole. Lines are what `String(contentsOfFile:encoding: .utf8).split(whereSeparator: \.isNewline)`
/// gives: every newline character (`\n`, `\r`, `\r\n`, VT, FF, NEL, U+2028, U+2029) ends a line,
/// and empty lines are skipped. A line longer than the buffer is joined across reads; invalid UTF-8
/// fails with the line's number (the whole-file read fails the whole file). A leading byte order
/// mark is dropped, as the whole-file read drops it.
///
/// Memory is bounded: a line (between two of LF, VT, FF, CR) longer than `maxLineBytes` fails with
/// ``LineReaderError/lineTooLong(line:limit:)`` as soon as the reader has that many bytes of it, so
/// a file without line ends (`/dev/zero`) costs at most the limit plus one buffer.
public struct LineReader {
    /// The default longest line: 64 KiB (an entry or URL is far shorter).
    public static let defaultMaxLineBytes = 64 * 1024

    private let handle: FileHandle
    private let ownsHandle: Bool
    private let bufferSize: Int
    private let maxLineBytes: Int
    /// Bytes read; those before `start` are split already.
    private var buffer: [UInt8] = []
    private var start = 0
    /// Lines split from the last physical line, not yet returned.
    private var ready: [String] = []
    /// The line number of each string of `ready`.
    private var readyLines: [Int] = []
    private var readyIndex = 0
    private var atEnd = false
    /// Line feeds before `start`: the current line's number is one more.
    private var lineFeeds = 0
    private var first = true

    /// Opens `path`; lines longer than `maxLineBytes` bytes fail.
    public init(path: String, bufferSize: Int = 64 * 1024, maxLineBytes: Int = LineReader.defaultMaxLineBytes) throws(LineReaderError) {
        let handle: FileHandle
        do {
            handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        } catch {
            throw .unreadable(SystemReason.of(error))
        }
        self.init(handle: handle, ownsHandle: true, bufferSize: bufferSize, maxLineBytes: maxLineBytes)
    }

    /// Reads an open file (standard input, say), which ``close()`` leaves open.
    public init(handle: FileHandle, bufferSize: Int = 64 * 1024, maxLineBytes: Int = LineReader.defaultMaxLineBytes) {
        self.init(handle: handle, ownsHandle: false, bufferSize: bufferSize, maxLineBytes: maxLineBytes)
    }

    private init(handle: FileHandle, ownsHandle: Bool, bufferSize: Int, maxLineBytes: Int) {
        self.handle = handle
        self.ownsHandle = ownsHandle
        self.bufferSize = max(1, bufferSize)
        self.maxLineBytes = max(1, maxLineBytes)
    }

    /// Closes the file it opened (also done when the reader is released).
    public func close() {
        if ownsHandle { try? handle.close() }
    }

    /// The 1-based line of the string ``next()`` returned last, counted in line feeds as the
    /// errors count them (what an editor shows for a file with LF or CRLF line ends); 0 before.
    public private(set) var line = 0

    /// The next non-empty line, or `nil` at the end of the file.
    public mutating func next() throws(LineReaderError) -> String? {
        while true {
            if readyIndex < ready.count {
                defer { readyIndex += 1 }
                line = readyLines[readyIndex]
                return ready[readyIndex]
            }
            ready.removeAll(keepingCapacity: true)
            readyLines.removeAll(keepingCapacity: true)
            readyIndex = 0
            // A whole physical line (up to LF, VT, FF or CR), reading more when needed.
            var searchFrom = start
            while true {
                if let end = buffer[searchFrom...].firstIndex(where: { $0 >= 0x0A && $0 <= 0x0D }) {
                    guard end - start <= maxLineBytes else { throw .lineTooLong(line: lineFeeds + 1, limit: maxLineBytes) }
                    try split(buffer[start..<end])
                    if buffer[end] == 0x0A { lineFeeds += 1 }
                    start = end + 1
                    break
                }
                guard buffer.count - start <= maxLineBytes else { throw .lineTooLong(line: lineFeeds + 1, limit: maxLineBytes) }
                if atEnd {
                    if start == buffer.count { return nil }
                    try split(buffer[start...])
                    start = buffer.count
                    break
                }
                // Keep only the unfinished line, then read on.
                buffer.removeSubrange(0..<start)
                start = 0
                searchFrom = buffer.count
                let chunk: Data?
                do {
                    chunk = try handle.read(upToCount: bufferSize)
                } catch {
                    throw .unreadable(SystemReason.of(error))
                }
                if let chunk, !chunk.isEmpty {
                    buffer.append(contentsOf: chunk)
                } else {
                    atEnd = true
                }
            }
        }
    }

    /// Decodes one physical line (without its line end) and splits it at the other newline
    /// characters (NEL, U+2028, U+2029).
    private mutating func split(_ bytes: ArraySlice<UInt8>) throws(LineReaderError) {
        var bytes = bytes
        if first {
            first = false
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .invalidUTF8(line: lineFeeds + 1)
        }
        for piece in text.split(whereSeparator: \.isNewline) {
            ready.append(String(piece))
            readyLines.append(lineFeeds + 1)
        }
    }
}
