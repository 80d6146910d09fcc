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
