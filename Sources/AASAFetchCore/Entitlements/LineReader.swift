import Foundation

/// Why a text file could not be read line by line.
public enum LineReaderError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file could not be opened or read; the system's message.
    case unreadable(String)
    /// A line is not valid UTF-8 (1-based, counting line feeds).
    case invalidUTF8(line: Int)

    public var description: String {
        switch self {
        case .unreadable(let message): message
        case .invalidUTF8(let line): "line \(line) is not valid UTF-8"
        }
    }
}

/// Reads a UTF-8 text file one line at a time in buffered chunks, so a list of any length is never
/// held whole. Lines are what `String(contentsOfFile:encoding: .utf8).split(whereSeparator: \.isNewline)`
/// gives: every newline character (`\n`, `\r`, `\r\n`, VT, FF, NEL, U+2028, U+2029) ends a line,
/// and empty lines are skipped. A line longer than the buffer is joined across reads; invalid UTF-8
/// fails with the line's number (the whole-file read fails the whole file). A leading byte order
/// mark is dropped, as the whole-file read drops it.
public struct LineReader {
    private let handle: FileHandle
    private let bufferSize: Int
    /// Bytes read; those before `start` are split already.
    private var buffer: [UInt8] = []
    private var start = 0
    /// Lines split from the last physical line, not yet returned.
    private var ready: [String] = []
    private var readyIndex = 0
    private var atEnd = false
    private var physicalLine = 0
    private var first = true

    /// Opens `path`.
    public init(path: String, bufferSize: Int = 64 * 1024) throws(LineReaderError) {
        do {
            handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        } catch {
            throw .unreadable(error.localizedDescription)
        }
        self.bufferSize = max(1, bufferSize)
    }

    /// Closes the file (also done when the reader is released).
    public func close() {
        try? handle.close()
    }

    /// The next non-empty line, or `nil` at the end of the file.
    public mutating func next() throws(LineReaderError) -> String? {
        while true {
            if readyIndex < ready.count {
                defer { readyIndex += 1 }
                return ready[readyIndex]
            }
            ready.removeAll(keepingCapacity: true)
            readyIndex = 0
            // A whole physical line (up to a line feed), reading more when needed.
            var searchFrom = start
            while true {
                if let feed = buffer[searchFrom...].firstIndex(of: 0x0A) {
                    try split(buffer[start..<feed])
                    start = feed + 1
                    break
                }
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
                    throw .unreadable(error.localizedDescription)
                }
                if let chunk, !chunk.isEmpty {
                    buffer.append(contentsOf: chunk)
                } else {
                    atEnd = true
                }
            }
        }
    }

    /// Decodes one physical line (without its line feed) and splits it at the other newline characters.
    private mutating func split(_ bytes: ArraySlice<UInt8>) throws(LineReaderError) {
        physicalLine += 1
        var bytes = bytes
        if first {
            first = false
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .invalidUTF8(line: physicalLine)
        }
        for line in text.split(whereSeparator: \.isNewline) {
            ready.append(String(line))
        }
    }
}
