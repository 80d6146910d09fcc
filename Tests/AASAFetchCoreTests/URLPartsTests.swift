import AASAFetchCore
import Foundation
import Testing

struct URLPartsTests {
    @Test func emptyPathForBareHost() throws {
        let parts = try #require(URLParts("https://Example.COM"))
        #expect(parts.scheme == "https")
        #expect(parts.host == "example.com")
        #expect(parts.path == "")
        #expect(parts.query == nil)
        #expect(parts.fragment == nil)
    }

    @Test func partsStayEncoded() throws {
        let parts = try #require(URLParts("https://user@example.com:8443/a%2Fb/c%20d?x=%41+b&flag#frag%23"))
        #expect(parts.port == 8443)
        #expect(parts.path == "/a%2Fb/c%20d")
        #expect(parts.query == "x=%41+b&flag")
        #expect(parts.fragment == "frag%23")
        let items = try #require(parts.queryItems)
        #expect(items.map(\.name) == ["x", "flag"])
        #expect(items.map(\.value) == ["A+b", nil])
    }

    @Test func invalidCharactersAreEncodedAsURLStringDoes() throws {
        let parts = try #require(URLParts("https://example.com/café menu?q=a b#x#y"))
        #expect(parts.path == "/caf%C3%A9%20menu")
        #expect(parts.query == "q=a%20b")
        #expect(parts.fragment == "x%23y")
        #expect(URLParts("https://example.com/100%zz")?.path == "/100%25zz")
    }

    @Test func emptyQueryAndFragmentArePresentButEmpty() throws {
        let parts = try #require(URLParts("https://example.com/?#"))
        #expect(parts.path == "/")
        #expect(parts.query == "")
        #expect(parts.fragment == "")
        #expect(parts.queryItems == [])
    }

    @Test func internationalHostBecomesPunycode() throws {
        #expect(URLParts("https://bücher.example/x")?.host == "xn--bcher-kva.example")
        #expect(URLParts("https://[::1]:80/x")?.host == "[::1]")
    }

    @Test(arguments: ["", "example.com/x", "1http://x", "https://example.com:80x/"])
    func unusable(_ string: String) {
        #expect(URLParts(string) == nil)
    }

    @Test func plusIsNotSpaceAndEncodedSlashIsNotASeparator() throws {
        let document = try ModelFromJSON.document(json: MatcherFixture.components(##"[{"?":{"q":"a+b"}},{"/":"/x y","percentEncoded":false}]"##))
        let compiled = CompiledAssociation(document: document)
        #expect(compiled.decide(url: "https://example.com/p?q=a+b", appID: MatcherFixture.app).decision == .match)
        #expect(compiled.decide(url: "https://example.com/x+y", appID: MatcherFixture.app).decision == .noMatch)
        #expect(compiled.decide(url: "https://example.com/x%20y", appID: MatcherFixture.app).decision == .match)
    }

    /// The line protocol's `domain` is read as a URL's host (`match --host` reads it so too): a
    /// Unicode or upper-case domain is the same host as its Punycode (it never matched).
    @Test func theLineProtocolsDomainIsReadAsAHost() throws {
        let compiled = try MatcherFixture.compiled(MatcherFixture.components(##"[{"/":"/a"}]"##))
        for domain in ["bücher.example", "BÜCHER.example", "xn--bcher-kva.example", "Xn--Bcher-Kva.Example."] {
            #expect(compiled.decide(url: "https://bücher.example/a", appID: MatcherFixture.app, domain: domain).decision == .match, "\(domain)")
        }
        #expect(compiled.decide(url: "https://other.example/a", appID: MatcherFixture.app, domain: "bücher.example").decision == .noMatch)
    }

    /// A query dictionary of many names is looked up by an index of the URL's items past the
    /// first few names (it rescanned every item for each name): the same rule either way — every
    /// occurrence must match, an absent name reads as "", names and values decoded and folded
    /// as the component says.
    @Test func manyQueryNamesDecideAsFewDo() throws {
        let names = (0..<12).map { "k\($0)" }
        let dictionary = names.enumerated().map { "\"\($0.element)\":\"\($0.offset == 11 ? "" : "v?")\"" }.joined(separator: ",")
        for caseSensitive in [true, false] {
          for percentEncoded in [true, false] {
            let compiled = try MatcherFixture.compiled(MatcherFixture.components(
                ##"[{"?":{"## + dictionary + ##"},"caseSensitive":"## + (caseSensitive ? "true" : "false")
                    + ##","percentEncoded":"## + (percentEncoded ? "true" : "false") + ##"}]"##))
            func decide(_ query: String) -> MatchDecision {
                compiled.decide(url: "https://example.com/p?" + query, appID: MatcherFixture.app).decision
            }
            let all = names.dropLast().map { "\($0)=v1" }.joined(separator: "&")
            #expect(decide(all) == .match, "every name but the last, whose pattern is empty")
            #expect(decide(all + "&k10=v2&other=x") == .match, "a second occurrence that matches")
            #expect(decide(all + "&k10=no") == .noMatch, "every occurrence must match (a late name)")
            #expect(decide(all + "&k11=x") == .noMatch, "the last name is present, and not empty")
            #expect(decide(names.dropLast().dropLast().map { "\($0)=v1" }.joined(separator: "&")) == .noMatch, "k10 absent reads as \"\"")
            #expect(decide(all.replacingOccurrences(of: "k10=v1", with: "%6B10=v1")) == (percentEncoded ? .noMatch : .match),
                    "names are decoded unless percentEncoded")
            #expect(decide(all.replacingOccurrences(of: "k10=v1", with: "K10=V1")) == (caseSensitive ? .noMatch : .match))
          }
        }
    }

    @Test func onlyHTTPAndHTTPSAreUniversalLinks() throws {
        let compiled = try MatcherFixture.compiled(MatcherFixture.components(##"[{"/":"*"}]"##))
        #expect(compiled.decide(url: "HTTP://example.com/x", appID: MatcherFixture.app).decision == .match)
        #expect(compiled.decide(url: "ftp://example.com/x", appID: MatcherFixture.app).decision == .noMatch)
        #expect(compiled.decide(url: "not a url", appID: MatcherFixture.app).decision == .noMatch)
    }
}
