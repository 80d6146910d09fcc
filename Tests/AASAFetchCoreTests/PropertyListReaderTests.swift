import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

/// `PropertyListReader`: binary plists are decoded without expanding shared objects, refused past
/// the limits (a 24-level plist of shared arrays took 1.9 GB and 24 s, 26 levels aborted), cycles
/// get their own message, and everything Foundation writes reads as Foundation reads it.
struct PropertyListReaderTests {
    typealias H = HostileFiles

    static func error(_ bytes: [UInt8], limits: PropertyListReader.Limits = .standard) -> PropertyListError? {
        do {
            _ = try PropertyListReader.decode(bytes, limits: limits)
            return nil
        } catch {
            return error
        }
    }

    /// What Foundation writes in binary form decodes to what Foundation reads from it.
    @Test func binaryPlistsFromFoundationReadAlike() throws {
        let object: [String: Any] = [
            "string": "applinks:example.com", "unicode": "bücher.例え.テスト", "empty": "",
            "true": true, "false": false, "small": 7, "negative": -42, "large": Int64.max, "big": 1 << 40,
            "real": 2.5, "date": Date(timeIntervalSinceReferenceDate: 700_000_000), "data": Data([0, 1, 2, 255]),
            "array": ["a", 1, ["nested": [true]]] as [Any], "dictionary": ["k": "v"],
            "long": String(repeating: "x", count: 300), "many": (0..<300).map { "item \($0)" },
        ]
        let data = try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0)
        let foundation = try #require(PlistValue(foundation: try PropertyListSerialization.propertyList(from: data, format: nil)))
        #expect(try PropertyListReader.decode([UInt8](data)) == foundation)
        // And the XML form goes through Foundation, with the same result (XML dates hold whole seconds).
        let xml = try PropertyListSerialization.data(fromPropertyList: object, format: .xml, options: 0)
        let fromXML = try PropertyListReader.decode([UInt8](xml))
        #expect(fromXML == foundation, "\(fromXML)\n\(foundation)")
    }

    /// Shared arrays 24 levels deep (2^24 leaves in a few hundred bytes) are refused at once;
    /// 10 levels (1,024 leaves) decode, every shared copy in place.
    @Test func sharedObjectsAreBounded() throws {
        let bomb = H.sharedObjectsPlist(depth: 24)
        #expect(bomb.count < 400)
        let error = try #require(Self.error(bomb))
        #expect(error.kind == .tooComplex)
        #expect(error.message.contains("more than 100000 values"), "\(error.message)")

        guard case .dictionary(let small) = try PropertyListReader.decode(H.sharedObjectsPlist(depth: 10)) else {
            Issue.record("not a dictionary")
            return
        }
        func leaves(_ value: PlistValue) -> Int {
            if case .array(let values) = value { return values.map(leaves).reduce(0, +) }
            return 1
        }
        #expect(leaves(try #require(small["x"])) == 1024)

        // Shared strings count their bytes each time: 2^15 copies of 1,000 bytes pass 16 MiB.
        let bytes = try #require(Self.error(H.sharedObjectsPlist(depth: 15, leaf: String(repeating: "y", count: 1000))))
        #expect(bytes.kind == .tooComplex && bytes.message.contains("bytes"), "\(bytes.message)")
    }

    /// A cycle is named as such (Foundation called it "Unexpected character b at line 1").
    @Test func cyclesAreNamed() throws {
        let error = try #require(Self.error(H.cyclicPlist()))
        #expect(error.kind == .cyclic)
        #expect(error.message.contains("reference cycle"), "\(error.message)")
    }

    /// Nesting is limited for binary and XML plists alike.
    @Test func depthIsLimited() throws {
        // The top dictionary is level 1 and "x" level 2: 62 arrays and the leaf reach level 64.
        #expect(Self.error(H.deepPlist(depth: 62)) == nil)
        let error = try #require(Self.error(H.deepPlist(depth: 63)))
        #expect(error.kind == .tooComplex && error.message.contains("deeper than 64"), "\(error.message)")
        let xml = "<plist version=\"1.0\">" + String(repeating: "<array>", count: 70) + String(repeating: "</array>", count: 70) + "</plist>"
        #expect(Self.error(Array(xml.utf8))?.kind == .tooComplex)
        // Past Foundation's own limit (512 levels) too: it refuses first, and that is the same
        // refusal (it was "malformed").
        let deeper = "<plist version=\"1.0\">" + String(repeating: "<array>", count: 600) + String(repeating: "</array>", count: 600) + "</plist>"
        #expect(Self.error(Array(deeper.utf8))?.kind == .tooComplex, "\(Self.error(Array(deeper.utf8))?.message ?? "")")
        let many = "<plist version=\"1.0\"><array>" + String(repeating: "<true/>", count: 50) + "</array></plist>"
        let limits = PropertyListReader.Limits(maxDepth: 64, maxValues: 20, maxBytes: 1 << 20)
        #expect(Self.error(Array(many.utf8), limits: limits)?.kind == .tooComplex)
    }

    /// Cut at every length and mutated at random, a binary plist fails cleanly or decodes; never a
    /// crash. (A cut to "b" … "bplis" is no property list either: the old-style text format, which
    /// Foundation would read as the word "b", is not accepted.)
    @Test(arguments: [1, 2, 3])
    func brokenBinaryPlistsFailCleanly(seed: UInt64) throws {
        let object: [String: Any] = ["com.apple.developer.associated-domains": ["applinks:example.com", "applinks:*.example.org"],
                                     "n": 12, "d": ["k": [1.5, true, "ü"]] as [String: Any]]
        let valid = [UInt8](try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0))
        for length in 0..<valid.count {
            let cut = Array(valid.prefix(length))
            #expect(Self.error(cut)?.kind == .malformed, "cut at \(length) of \(valid.count): \((try? PropertyListReader.decode(cut))?.description ?? "")")
        }
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<2000 {
            var bytes = valid
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                bytes[Int.random(in: 8..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            _ = Self.error(bytes)
        }
    }

    /// An 8-byte reference with its top bit set (`0xFF…FF`) is refused as malformed: read as a
    /// signed number it was -1, passed the bounds check and trapped (SIGILL) on the array read.
    @Test func referencesWithTheTopBitSetAreRefused() throws {
        for marker: UInt8 in [0xA1, 0xD1] {  // an array of one, a dictionary of one
            let objects: [UInt8] = [marker] + Array(repeating: 0xFF, count: marker == 0xA1 ? 8 : 16)
            var bytes = Array("bplist00".utf8) + objects
            let table = bytes.count
            bytes += [0, 0, 0, 0, 0, 0, 0, 8]                      // one 8-byte offset: object 0 at 8
            bytes += [0, 0, 0, 0, 0, 0, 8, 8]                      // offset size 8, reference size 8
            bytes += [0, 0, 0, 0, 0, 0, 0, 1]                      // one object
            bytes += [0, 0, 0, 0, 0, 0, 0, 0]                      // top object 0
            bytes += (0..<8).reversed().map { UInt8(truncatingIfNeeded: table >> ($0 * 8)) }
            let error = try #require(Self.error(bytes))
            #expect(error.kind == .malformed && error.message.contains("refers to object"), "\(error.message)")
            #expect(throws: EntitlementsError.self) { _ = try EntitlementsFile.parse(Data(bytes)) }
        }
    }

    /// Unsigned integers past Int64.max keep their value (18446744073709551615 read as -1, and a
    /// 16-byte binary one was "malformed"), and reals JSON cannot hold are written as strings
    /// (`entitlements --json` failed with internal-error on `<real>nan</real>`).
    @Test func unsignedIntegersAndNonFiniteRealsSurvive() throws {
        let object: [String: Any] = ["big": NSNumber(value: UInt64.max), "small": NSNumber(value: -5), "nan": Double.nan, "inf": -Double.infinity]
        for format in [PropertyListSerialization.PropertyListFormat.binary, .xml] {
            let bytes = [UInt8](try PropertyListSerialization.data(fromPropertyList: object, format: format, options: 0))
            guard case .dictionary(let values) = try PropertyListReader.decode(bytes) else {
                Issue.record("not a dictionary")
                continue
            }
            #expect(values["big"] == .unsigned(UInt64.max), "\(format): \(values["big"]?.description ?? "nil")")
            #expect(values["small"] == .integer(-5))
            let json = try ReportJSONWriter(style: .compact).string(PlistValue.dictionary(values))
            #expect(json == #"{"big":18446744073709551615,"inf":"-inf","nan":"nan","small":-5}"#, "\(format): \(json)")
        }
    }

    /// Entitlements files and app parts report the limits with their codes.
    @Test func codesOfTheCallers() throws {
        for (bytes, code) in [(H.sharedObjectsPlist(depth: 24), "entitlements-too-complex"), (H.cyclicPlist(), "entitlements-malformed"),
                              (H.deepPlist(depth: 100), "entitlements-too-complex")] {
            #expect {
                _ = try EntitlementsFile.parse(Data(bytes))
            } throws: { error in
                (error as? EntitlementsError)?.code == code
            }
        }
        let file = try EntitlementsFile.parse(Data(H.sharedObjectsPlist(depth: 3)))
        #expect(file.associatedDomains == ["applinks:example.com"] && file.applicationIdentifier == "ABCDE12345.com.example.app")
    }
}
