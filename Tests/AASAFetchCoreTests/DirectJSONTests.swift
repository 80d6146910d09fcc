@testable import AASAFetchCore
import Foundation
import Testing

/// The records that write their own JSON (``DirectJSONWritable``) write exactly what the
/// `Encodable` path writes for them, in both layouts and at every depth.
struct DirectJSONTests {
    /// Values of every shape from a seeded generator (``SeededGenerator``), so a failure can be replayed.
    struct Generator {
        var random: SeededGenerator

        init(state: UInt64) {
            random = SeededGenerator(seed: state)
        }

        mutating func next() -> UInt64 { random.next() }

        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
        mutating func chance() -> Bool { below(2) == 0 }

        /// Text from pieces that exercise escaping, multi-byte characters and sort order.
        mutating func text() -> String {
            let pieces = ["", "a", "Z", "example.com", "é", "e\u{301}", "😀", "\"", "\\", "/", "\n", "\r\t",
                          "\u{0}", "\u{1F}", "\u{7F}", "\u{85}", "\u{9B}", "\u{A0}", "\u{2028}", "\u{2029}", " ", "?mode=developer"]
            return (0..<below(4)).map { _ in pieces[below(pieces.count)] }.joined()
        }

        mutating func maybe<T>(_ make: (inout Generator) -> T) -> T? {
            chance() ? make(&self) : nil
        }

        mutating func int() -> Int {
            [0, 1, 9, 10, 200, 404, -1, Int.max, Int.min][below(9)]
        }

        mutating func list<T>(_ make: (inout Generator) -> T) -> [T] {
            (0..<below(3)).map { _ in make(&self) }
        }

        mutating func stringLists() -> [String: [String]] {
            var map: [String: [String]] = [:]
            for _ in 0..<below(4) { map[text()] = list { $0.text() } }
            return map
        }

        mutating func finding() -> Finding {
            Finding(code: text(), severity: Severity.allCases[below(3)], message: text(), location: maybe { $0.text() },
                    line: maybe { $0.int() }, column: maybe { $0.int() }, fix: maybe { $0.text() })
        }

        mutating func attempt() -> FetchAttempt {
            FetchAttempt(url: text(), httpStatus: maybe { $0.int() }, code: text(), remoteAddress: maybe { $0.text() }, milliseconds: int())
        }

        mutating func headers() -> CDNHeaders {
            var headers = CDNHeaders(httpStatus: int(), httpVersion: text())
            headers.failureReason = maybe { $0.text() }
            headers.swcError = maybe { $0.text() }
            headers.failureText = maybe { $0.text() }
            headers.originStatus = maybe { $0.int() }
            headers.failureDetails = maybe { generator in
                var map: [String: String] = [:]
                for _ in 0..<generator.below(4) { map[generator.text()] = generator.text() }
                return map
            }
            headers.failureDetailsRaw = maybe { $0.text() }
            headers.from = maybe { $0.text() }
            headers.tryDirect = maybe { $0.chance() }
            headers.originFormat = maybe { $0.text() }
            headers.age = maybe { $0.int() }
            headers.cacheControl = maybe { $0.text() }
            headers.maxAge = maybe { $0.int() }
            return headers
        }

        mutating func domain(nested: Bool = true) -> DomainReport {
            var domain = DomainReport(
                host: text(), entries: list { $0.text() }, route: Route.allCases[below(Route.allCases.count)], tier: int(),
                startOrder: int(), associated: maybe { $0.chance() }, code: text(), reason: text(), httpStatus: maybe { $0.int() },
                url: text(), redirectLocation: maybe { $0.text() }, contentType: maybe { $0.text() }, bytes: maybe { $0.int() },
                appIDs: stringLists(), reliesOnExtraCA: chance(), findings: list { $0.finding() }, attempts: list { $0.attempt() })
            if nested && chance() {
                let side = self.domain(nested: false)
                let changes: [AASAChange]? = maybe { generator in
                    generator.list { g in
                        AASAChange(kind: g.text(), service: g.maybe { Service(name: $0.text()) }, appID: g.maybe { $0.text() },
                                   description: g.text(), before: g.maybe { .strings($0.list { $0.text() }) }, after: nil)
                    }
                }
                var record = CDNRecord(domain: side, result: nil, changes: changes)
                record.headers = maybe { $0.headers() }
                domain.cdn = record
            }
            return domain
        }

        mutating func verdict() -> EntryVerdict {
            let entry = AssociatedDomainEntry(
                index: int(), raw: maybe { $0.text() }, service: maybe { Service(name: $0.text()) }, domain: maybe { $0.text() },
                host: maybe { $0.text() }, isWildcard: chance(), mode: maybe { AlternateMode.allCases[$0.below(AlternateMode.allCases.count)] },
                findings: list { $0.finding() })
            return EntryVerdict(entry: entry, associated: maybe { $0.chance() }, code: text(), findings: list { $0.finding() })
        }
    }

    static func expectSameBytes<T: Encodable>(_ value: T, _ label: String) throws {
        for style in [ReportJSONWriter.Style.pretty, .compact] {
            for depth in 0...3 {
                let writer = ReportJSONWriter(style: style)
                let direct = try writer.encode(value, depth: depth)
                let generic = try writer.encodeThroughEncodable(value, depth: depth)
                #expect(String(decoding: direct, as: UTF8.self) == String(decoding: generic, as: UTF8.self),
                        "\(label), \(style), depth \(depth)")
            }
        }
    }

    @Test func theTypesWithADirectFormTakeIt() {
        var generator = Generator(state: 1)
        #expect((generator.domain() as Any) is any DirectJSONWritable)
        #expect((generator.verdict() as Any) is any DirectJSONWritable)
        #expect((generator.finding() as Any) is any DirectJSONWritable)
        #expect((generator.attempt() as Any) is any DirectJSONWritable)
        #expect((generator.headers() as Any) is any DirectJSONWritable)
    }

    @Test(arguments: 0..<8)
    func domainRecordsWriteWhatTheirEncodableWrites(seed: UInt64) throws {
        var generator = Generator(state: seed)
        for round in 0..<60 {
            try Self.expectSameBytes(generator.domain(), "seed \(seed), domain \(round)")
        }
    }

    @Test(arguments: 0..<4)
    func entryVerdictsFindingsAttemptsAndCDNHeadersWriteWhatTheirEncodableWrites(seed: UInt64) throws {
        var generator = Generator(state: seed &+ 100)
        for round in 0..<60 {
            try Self.expectSameBytes(generator.verdict(), "seed \(seed), verdict \(round)")
            try Self.expectSameBytes(generator.finding(), "seed \(seed), finding \(round)")
            try Self.expectSameBytes(generator.attempt(), "seed \(seed), attempt \(round)")
            try Self.expectSameBytes(generator.headers(), "seed \(seed), headers \(round)")
        }
    }

    /// Inside a document written through `Encodable` (an array of records), the records keep
    /// the `Encodable` form: both paths meet only at a record's root.
    @Test func recordsInsideAGenericDocumentMatchTheirOwnDirectForm() throws {
        var generator = Generator(state: 42)
        let domains = (0..<5).map { _ in generator.domain() }
        let writer = ReportJSONWriter(style: .compact)
        let whole = String(decoding: try writer.encode(domains), as: UTF8.self)
        let pieces = try domains.map { String(decoding: try writer.encode($0), as: UTF8.self) }
        #expect(whole == "[" + pieces.joined(separator: ",") + "]")
    }

    /// A hand-checked record, so the comparison above is not only one path against itself.
    @Test func aDomainRecordsPrettyForm() throws {
        let domain = DomainReport(
            host: "a.example", entries: ["applinks:a.example"], route: .origin, tier: 0, startOrder: 3, associated: true,
            code: "ok", reason: "fine\n", httpStatus: 200, url: "https://a.example/.well-known/apple-app-site-association",
            redirectLocation: nil, contentType: "application/json", bytes: 12, appIDs: ["applinks": ["A.b"], "appclips": []],
            reliesOnExtraCA: false, findings: [], attempts: [FetchAttempt(url: "u", httpStatus: 200, code: "ok", remoteAddress: nil, milliseconds: 4)])
        let text = String(decoding: try ReportJSONWriter().encode(domain, depth: 1), as: UTF8.self)
        #expect(text == """
            {
                "host": "a.example",
                "entries": [
                  "applinks:a.example"
                ],
                "route": "origin",
                "tier": 0,
                "startOrder": 3,
                "associated": true,
                "code": "ok",
                "reason": "fine\\n",
                "httpStatus": 200,
                "url": "https://a.example/.well-known/apple-app-site-association",
                "redirectLocation": null,
                "contentType": "application/json",
                "bytes": 12,
                "appIDs": {
                  "appclips": [],
                  "applinks": [
                    "A.b"
                  ]
                },
                "customRoot": false,
                "findings": [],
                "attempts": [
                  {
                    "url": "u",
                    "httpStatus": 200,
                    "code": "ok",
                    "remoteAddress": null,
                    "milliseconds": 4
                  }
                ],
                "cdn": null
              }
            """)
    }
}
