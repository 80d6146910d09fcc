import AASAFetchCore
import Foundation
import Testing

/// Stored headers are written and read without Foundation's coders, in the shape `JSONEncoder`
/// wrote: stores in the field keep reading, and new rows read back exactly.
struct StoredHeadersTests {
    static let headers = [
        HTTPHeader(name: "Content-Type", value: "application/json"),
        HTTPHeader(name: "ETag", value: "\"abc\\\"def\""),
        HTTPHeader(name: "X-Odd", value: "tab\there, slash /, bell \u{07}, é, 😀, bidi \u{202E}"),
        HTTPHeader(name: "Empty", value: ""),
    ]

    @Test func roundTrip() {
        #expect(StoredHeaders.decode(StoredHeaders.encode(Self.headers)) == Self.headers)
        #expect(StoredHeaders.encode([]) == "[]")
        #expect(StoredHeaders.encode(Array(Self.headers.prefix(2))) ==
                #"[{"name":"Content-Type","value":"application/json"},{"name":"ETag","value":"\"abc\\\"def\""}]"#)
        #expect(StoredHeaders.encode([HTTPHeader(name: "X", value: "a/b\u{7F}\u{2028}é")]) == #"[{"name":"X","value":"a/b\u007f\u2028é"}]"#)
        #expect(StoredHeaders.decode("[]") == [])
    }

    /// What earlier versions stored (Foundation's `JSONEncoder`, `\/` escapes included) reads alike,
    /// and what is written now is read by Foundation's decoder too.
    @Test func readsAndWritesTheFormerFormat() throws {
        let old = String(decoding: try JSONEncoder().encode(Self.headers), as: UTF8.self)
        #expect(old.contains("\\/"))
        #expect(StoredHeaders.decode(old) == Self.headers)
        let new = StoredHeaders.encode(Self.headers)
        #expect(try JSONDecoder().decode([HTTPHeader].self, from: Data(new.utf8)) == Self.headers)
    }

    @Test func unreadableTextGivesNoHeaders() {
        for text in [nil, "", "{}", "[1]", "[{\"name\":\"a\"}]", "not json"] as [String?] {
            #expect(StoredHeaders.decode(text) == [], "\(String(describing: text))")
        }
    }
}

/// A history event's detail is stored as the text Foundation's `JSONEncoder` wrote
/// (`.sortedKeys`, `.withoutEscapingSlashes`), byte for byte, though it is written without it.
struct StoredHistoryDetailTests {
    static func foundationText(_ detail: HistoryDetail) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(detail), as: UTF8.self)
    }

    @Test func sameTextAsJSONEncoder() throws {
        var odd = ""
        for value: UInt32 in [0, 1, 7, 8, 9, 10, 11, 12, 13, 0x1B, 0x1F, 0x20, 0x22, 0x2F, 0x5C, 0x7F, 0x80, 0x85, 0x9F, 0xA0, 0xE9,
                              0x2028, 0x2029, 0x202E, 0xFEFF, 0x1F600] {
            odd.unicodeScalars.append(Unicode.Scalar(value)!)
        }
        let details = [
            HistoryDetail(),
            HistoryDetail(code: "ok", previousCode: nil, reason: "200 OK, 1 app", httpStatus: 200),
            HistoryDetail(code: "http-404", previousCode: "ok", reason: odd, httpStatus: -1),
            HistoryDetail(httpStatus: 0),
            HistoryDetail(reason: "ABCDE.com.example.app is no longer listed for applinks in the file of a/b.example",
                          appID: "ABCDE.com.example.app", entry: "applinks:a.example?mode=developer", service: .applinks),
            HistoryDetail(appID: odd, entry: odd, service: .unknown(odd)),
            HistoryDetail(code: "", previousCode: "", reason: "", appID: "", entry: "", service: .webcredentials),
        ]
        for detail in details {
            #expect(detail.storedJSON == (try Self.foundationText(detail)))
            #expect(try JSONDecoder().decode(HistoryDetail.self, from: Data(detail.storedJSON.utf8)) == detail)
        }
    }
}
