@testable import IDNA
import Testing

struct IDNATests {
    /// RFC 3492 section 7.1 samples (those that are valid IDNA2008 labels) and UTS #46 mappings.
    @Test(arguments: [
        ("bücher.example", "xn--bcher-kva.example"),
        ("上海.example.中国", "xn--fhqz97e.example.xn--fiqs8s"),
        ("中國", "xn--fiqz9s"),
        ("BÜCHER.Example", "xn--bcher-kva.example"),
        ("faß.de", "xn--fa-hia.de"),
        ("例え。テスト", "xn--r8jz45g.xn--zckzah"),
        ("example．com", "example.com"),
        ("他们为什么不说中文", "xn--ihqwcrb4cv8a8dqg056pqjye"),
        ("Pročprostěnemluvíčesky", "xn--proprostnemluvesky-uyb24dma41a"),
        ("почемужеонинеговорятпорусски", "xn--b1abfaaepdrnnbgefbadotcwatmq2g4l"),
        ("porquénopuedensimplementehablarenespañol", "xn--porqunopuedensimplementehablarenespaol-fmd56a"),
        ("tạisaohọkhôngthểchỉnóitiếngviệt", "xn--tisaohkhngthchnitingvit-kjcr8268qyxafd2f1b9g"),
        ("なぜみんな日本語を話してくれないのか", "xn--n8jok5ay5dzabd5bym9f0cm5685rrjetr6pdxa"),
        ("example.com", "example.com"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
    ])
    func toASCII(input: String, expected: String) throws {
        #expect(try IDNA.toASCII(input) == expected)
    }

    /// Invalid A-labels, NUL, line separators, and RFC 3492's Arabic sample, whose final U+061F
    /// is Punycode-encodable but disallowed by IDNA2008 (a hand-rolled encoder would accept it).
    @Test(arguments: ["ليهمابتكلموشعربي؟.com", "xn--zz.example", "xn--a.example", "bad\u{0000}host", "a\u{2028}b.com"])
    func rejectsInvalid(input: String) {
        #expect(throws: IDNA.ConversionError.self) { try IDNA.toASCII(input) }
    }

    @Test func roundTripsToUnicode() throws {
        #expect(try IDNA.toUnicode("xn--fhqz97e.example.xn--fiqs8s") == "上海.example.中国")
    }

    /// Plain ASCII names skip libidn2: every name the shortcut takes gets libidn2's answer, and
    /// the names it leaves to libidn2 (hyphens in the wrong place, `xn--` labels, empty or
    /// overlong labels, other bytes) are the ones where the answer could differ. A `??--` label
    /// that is not `xn--` is the one exception, below.
    @Test func plainASCIINamesGetLibidn2sAnswerWithoutIt() throws {
        let long = String(repeating: "a", count: 63)
        let taken = ["example.com", "EXAMPLE.Com", "a", "h1.bench.test", "a-b.c-d.e", "0.1.2.3", "a--b.test", "ab-c.test",
                     "\(long).test", ([String](repeating: String(repeating: "b", count: 49), count: 5)).joined(separator: "."), "123abc"]
        for host in taken {
            let plain = try #require(IDNA.plainASCII(host), "\(host)")
            #expect(plain == (try IDNA.toASCIIThroughLibidn2(host)), "\(host)")
            #expect(try IDNA.toASCII(host) == plain)
        }
        let left = ["", ".", "a.", ".a", "a..b", "-a.test", "a-.test", "xn--bcher-kva.example", "XN--bcher-kva.example", "a.Xn--c.test",
                    "a\(long).test", ([String](repeating: String(repeating: "b", count: 50), count: 5)).joined(separator: "."),
                    "a_b.test", "a b", "bücher.example", "example．com", "a*.test", "bad\u{0}host"]
        for host in left {
            #expect(IDNA.plainASCII(host) == nil, "\(host)")
        }
    }

    /// A label with hyphens in its third and fourth place that is not Punycode is a valid host
    /// name (`r3---sn-abc.googlevideo.com` is in DNS): taken as it is, where libidn2's IDNA2008
    /// check refuses it (`IDN2_2HYPHEN`). Regression: such an entry was `entitlement-invalid-host`
    /// and never fetched.
    @Test func labelsWithDoubleHyphensThatAreNotPunycodeAreHostNames() throws {
        for (host, ascii) in [("ab--cd.example.com", "ab--cd.example.com"), ("R3---SN-abc.googlevideo.com", "r3---sn-abc.googlevideo.com"),
                              ("a.xa--b.test", "a.xa--b.test"), ("nx--a.test", "nx--a.test"), ("x---y.example.com", "x---y.example.com")] {
            #expect(try IDNA.toASCII(host) == ascii)
            #expect(throws: IDNA.ConversionError.self) { try IDNA.toASCIIThroughLibidn2(host) }
        }
        // Beside a Unicode label too, converted label by label (libidn2 refused the whole name).
        #expect(try IDNA.toASCII("R3---sn-abc.Bücher.example") == "r3---sn-abc.xn--bcher-kva.example")
        for dot in ["\u{3002}", "\u{FF0E}", "\u{FF61}"] {
            #expect(try IDNA.toASCII("ab--cd\(dot)bücher\(dot)example") == "ab--cd.xn--bcher-kva.example")
        }
        // A label libidn2 refuses for itself is still refused, and so is an empty label.
        #expect(throws: IDNA.ConversionError.self) { try IDNA.toASCII("ab--cd.b\u{00A0}ücher.example") }
        #expect(throws: IDNA.ConversionError.self) { try IDNA.toASCII("ab--cd..bücher.example") }
        #expect(throws: IDNA.ConversionError.self) { try IDNA.toASCII("bü--cher.example") }
        // Punycode labels are still checked.
        #expect(throws: IDNA.ConversionError.self) { try IDNA.toASCII("xn--zz.example") }
        #expect(throws: IDNA.ConversionError.self) { try IDNA.toASCII("ab--cd.xn--zz.bücher.example") }
        #expect(try IDNA.toASCII("XN--bcher-kva.example") == "xn--bcher-kva.example")
    }
}
