import AASAFetchCore
import Foundation
import Testing

/// `LineReader` gives the lines `String(contentsOfFile:).split(whereSeparator: \.isNewline)` gives,
/// whatever the buffer size, and names the line that is not UTF-8.
struct LineReaderTests {
    static func file(_ bytes: [UInt8]) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("lines-\(UUID().uuidString).txt")
        try Data(bytes).write(to: url)
        return url
    }

    static func lines(_ url: URL, bufferSize: Int, maxLineBytes: Int = 1 << 20) throws -> [String] {
        var reader = try LineReader(path: url.path, bufferSize: bufferSize, maxLineBytes: maxLineBytes)
        defer { reader.close() }
        var lines: [String] = []
        while let line = try reader.next() { lines.append(line) }
        return lines
    }

    static let samples: [(name: String, text: String)] = [
        ("LF", "a.example.com\nb.example.com\n"),
        ("CRLF", "a.example.com\r\nb.example.com\r\n# comment\r\n"),
        ("no trailing newline", "a.example.com\nb.example.com"),
        ("blank lines", "\n\n\r\n a.example.com \n\n\nb\n\n"),
        ("lone CR and other separators", "a\rb\u{0B}c\u{0C}d\u{85}e\u{2028}f\u{2029}g\r\r\nh"),
        ("multi-byte", "bücher.example\n日本.example\r\nапплинкс:пример.рф\n"),
        ("long line", String(repeating: "x", count: 5000) + ".example.com\n" + String(repeating: "y", count: 70_000) + "\nz"),
        ("byte order mark", "\u{FEFF}a.example.com\nb.example.com\n"),
        ("empty", ""),
        ("only newlines", "\n\r\n\n"),
    ]

    @Test(arguments: [1, 3, 7, 64, 65_536])
    func linesMatchTheWholeFileSplit(bufferSize: Int) throws {
        for sample in Self.samples {
            let url = try Self.file(Array(sample.text.utf8))
            defer { try? FileManager.default.removeItem(at: url) }
            let expected = try String(contentsOfFile: url.path, encoding: .utf8).split(whereSeparator: \.isNewline).map(String.init)
            #expect(try Self.lines(url, bufferSize: bufferSize) == expected, "\(sample.name), buffer \(bufferSize)")
        }
    }

    /// The whole-file read fails on invalid UTF-8; the reader fails too, naming the line.
    @Test func invalidUTF8NamesTheLine() throws {
        let url = try Self.file(Array("good.example.com\r\nalso.example.com\n".utf8) + [0x62, 0xFF, 0x61, 0x0A] + Array("after.example.com\n".utf8))
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(throws: (any Error).self) { try String(contentsOfFile: url.path, encoding: .utf8) }
        for bufferSize in [1, 5, 65_536] {
            var reader = try LineReader(path: url.path, bufferSize: bufferSize)
            #expect(try reader.next() == "good.example.com")
            #expect(try reader.next() == "also.example.com")
            #expect(throws: LineReaderError.invalidUTF8(line: 3)) { try reader.next() }
            reader.close()
        }
        #expect(LineReaderError.invalidUTF8(line: 3).description == "line 3 is not valid UTF-8")
    }

    /// A multi-byte character cut by the buffer is put back together; a truncated one at the end is invalid.
    @Test func truncatedCharacterAtTheEndIsInvalid() throws {
        let url = try Self.file(Array("ok\n".utf8) + [0xC3])
        defer { try? FileManager.default.removeItem(at: url) }
        var reader = try LineReader(path: url.path, bufferSize: 2)
        #expect(try reader.next() == "ok")
        #expect(throws: LineReaderError.invalidUTF8(line: 2)) { try reader.next() }
    }

    @Test func missingFileIsUnreadable() {
        #expect {
            _ = try LineReader(path: "/nonexistent/list.txt")
        } throws: { error in
            guard case .unreadable(let message) = error as? LineReaderError else { return false }
            return !message.isEmpty
        }
    }

    /// A line over the limit fails with its number once the reader holds that many bytes of it;
    /// lines at the limit, and many short lines ended by CR alone, read as before.
    @Test(arguments: [1, 7, 4096, 65_536])
    func lineOverTheLimitFails(bufferSize: Int) throws {
        let limit = 1000
        let atLimit = String(repeating: "a", count: limit)
        let url = try Self.file(Array("first.example\r\n\(atLimit)\nthird\n".utf8) + Array(repeating: 0x62, count: 50_000) + [0x0A])
        defer { try? FileManager.default.removeItem(at: url) }
        var reader = try LineReader(path: url.path, bufferSize: bufferSize, maxLineBytes: limit)
        defer { reader.close() }
        #expect(try reader.next() == "first.example")
        #expect(try reader.next() == atLimit)
        #expect(try reader.next() == "third")
        #expect(throws: LineReaderError.lineTooLong(line: 4, limit: limit)) { try reader.next() }
        #expect(LineReaderError.lineTooLong(line: 4, limit: limit).description == "line 4 is longer than 1000 bytes")

        // Old Mac line ends: each CR ends a line, so the file may be far longer than the limit.
        let mac = try Self.file(Array(String(repeating: "host.example\r", count: 1000).utf8))
        defer { try? FileManager.default.removeItem(at: mac) }
        #expect(try Self.lines(mac, bufferSize: bufferSize, maxLineBytes: 20).count == 1000)
    }

    /// A file without line ends (here `/dev/zero`, endless) fails after the limit instead of
    /// filling memory; the default limit is 64 KiB.
    @Test func endlessLineFailsAtTheDefaultLimit() throws {
        var reader = try LineReader(path: "/dev/zero")
        defer { reader.close() }
        #expect(throws: LineReaderError.lineTooLong(line: 1, limit: LineReader.defaultMaxLineBytes)) { try reader.next() }
        #expect(LineReader.defaultMaxLineBytes == 64 * 1024)
    }
}
