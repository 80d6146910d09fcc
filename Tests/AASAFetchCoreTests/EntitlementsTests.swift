import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

struct EntitlementsTests {
    private static let xml = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0"><dict>
          <key>application-identifier</key><string>ABCDE12345.com.example.app</string>
          <!-- a comment -->
          <key>com.apple.developer.associated-domains</key>
          <array><string>applinks:example.com</string><string>webcredentials:*.example.com</string><integer>3</integer></array>
        </dict></plist>
        """

    @Test func readsXML() throws {
        let file = try EntitlementsFile.parse(Data(Self.xml.utf8))
        #expect(file.associatedDomains == ["applinks:example.com", "webcredentials:*.example.com", nil])
        #expect(file.applicationIdentifier == "ABCDE12345.com.example.app")
    }

    @Test func readsBinaryPlist() throws {
        let object: [String: Any] = [
            "com.apple.developer.associated-domains": ["applinks:example.com"],
            "com.apple.application-identifier": "ABCDE12345.com.example.mac",
        ]
        let data = try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0)
        #expect(data.starts(with: Array("bplist".utf8)))
        let file = try EntitlementsFile.parse(data)
        #expect(file.associatedDomains == ["applinks:example.com"])
        #expect(file.applicationIdentifier == "ABCDE12345.com.example.mac")
    }

    @Test(arguments: [
        ("<plist><dict><key>x</key>", "entitlements-malformed"),
        ("not a plist at all", "entitlements-malformed"),
        ("<plist version=\"1.0\"><array/></plist>", "entitlements-not-a-dictionary"),
        ("<plist version=\"1.0\"><dict><key>a</key><true/></dict></plist>", "entitlements-missing-key"),
        ("<plist version=\"1.0\"><dict><key>com.apple.developer.associated-domains</key><string>applinks:x.com</string></dict></plist>", "entitlements-wrong-type"),
    ])
    func errors(text: String, code: String) {
        #expect(throws: EntitlementsError.self) { try EntitlementsFile.parse(Data(text.utf8)) }
        do {
            _ = try EntitlementsFile.parse(Data(text.utf8))
        } catch {
            #expect(error.code == code)
        }
    }

    @Test func unreadableFile() {
        do {
            _ = try EntitlementsFile.read(path: "/nonexistent/app.entitlements")
            Issue.record("expected an error")
        } catch {
            #expect(error.code == "entitlements-unreadable")
            #expect(error.message == "cannot read the file: No such file or directory", "the caller names the path")
        }
    }

    /// Every real entitlements file of the corpus reads, and every entry parses without a crash;
    /// the known problem files give their codes.
    @Test func corpus() throws {
        let folder = TestPaths.corpus.appendingPathComponent("entitlements")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".entitlements") }.sorted()
        #expect(names.count >= 30)
        var codes: [String: Set<String>] = [:]
        for name in names {
            let file = try EntitlementsFile.read(path: folder.appendingPathComponent(name).path)
            let entries = EntryParser().parse(file.associatedDomains)
            #expect(!entries.isEmpty, "\(name)")
            codes[name] = Set(entries.flatMap(\.findings).map(\.code))
        }
        #expect(codes["046.entitlements"]?.contains("entitlement-unresolved-variable") == true)
        #expect(codes["034.entitlements"]?.contains("entitlement-alternate-mode") == true)
        #expect(codes["001.entitlements"]?.isEmpty == true)
        // CRLF line endings and XML comments with non-ASCII text read like any other file.
        #expect(codes["022.entitlements"]?.isEmpty == true)
        #expect(codes["016.entitlements"]?.isEmpty == true)
    }
}
