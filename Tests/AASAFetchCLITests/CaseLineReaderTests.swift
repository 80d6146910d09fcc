import Foundation
import Testing

@testable import AASAFetchCLI

/// ``CaseLineReader``: LF-ended lines, a line over the limit answered once as too long (whether
/// its end comes in the read that crosses the limit or later), a last line without its LF.
struct CaseLineReaderTests {
    @Test func linesAndTooLongLines() throws {
        let limit = CaseLineReader.maxLineBytes
        var content = Data("a\u{2028}b\r\n".utf8)
        content.append(Data(repeating: UInt8(ascii: "x"), count: limit + 1))
        content.append(Data("\nb\n\n".utf8))
        content.append(Data(repeating: UInt8(ascii: "y"), count: 3 * limit))
        content.append(Data("\nlast".utf8))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cases-\(UUID().uuidString).jsonl")
        try content.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }

        var reader = try CaseLineReader(path: file.path)
        defer { reader.close() }
        var lines: [CaseLineReader.Line] = []
        while let line = try reader.next() { lines.append(line) }
        #expect(lines == [.text(Array("a\u{2028}b\r".utf8)), .tooLong, .text(Array("b".utf8)), .text([]), .tooLong, .text(Array("last".utf8))])

        // A line of exactly the limit is a line.
        let exact = FileManager.default.temporaryDirectory.appendingPathComponent("cases-\(UUID().uuidString).jsonl")
        try Data(repeating: UInt8(ascii: "z"), count: limit).write(to: exact)
        defer { try? FileManager.default.removeItem(at: exact) }
        var exactReader = try CaseLineReader(path: exact.path)
        defer { exactReader.close() }
        #expect(try exactReader.next() == .text([UInt8](repeating: UInt8(ascii: "z"), count: limit)))
        #expect(try exactReader.next() == nil)

        #expect(throws: CaseReadError.self) { try CaseLineReader(path: FileManager.default.temporaryDirectory.path) }
    }
}
