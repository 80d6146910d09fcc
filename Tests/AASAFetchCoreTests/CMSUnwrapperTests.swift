import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Testing

struct CMSUnwrapperTests {
    private static let json = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/*"}]}]}}"#

    /// Signs the JSON with the openssl CLI (as Apple's iOS 8 recipe did) and returns the DER/BER bytes.
    private static func sign(stream: Bool) throws -> [UInt8] {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cms-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("aasa.json")
        try Data(json.utf8).write(to: input)
        func openssl(_ arguments: [String]) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = arguments
            process.currentDirectoryURL = dir
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw TestFailure("openssl \(arguments.first ?? "") failed") }
        }
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
                     "-subj", "/CN=signer", "-keyout", "key.pem", "-out", "cert.pem"])
        try openssl(["cms", "-sign", "-in", "aasa.json", "-signer", "cert.pem", "-inkey", "key.pem", "-binary",
                     "-nodetach", "-outform", "DER", "-out", "signed.der"] + (stream ? ["-stream"] : []))
        return [UInt8](try Data(contentsOf: dir.appendingPathComponent("signed.der")))
    }

    @Test(arguments: [false, true])
    func unwrapsSignedFile(stream: Bool) throws {
        let signed = try Self.sign(stream: stream)
        #expect(signed.count > Self.json.utf8.count)
        let content = try #require(CMSUnwrapper.content(of: signed))
        #expect(String(decoding: content, as: UTF8.self) == Self.json)
    }

    /// `lint` reads a signed file by its content, with the warning `fetch` gives (it said
    /// invalid-json at 1:2 and "remove everything after the closing brace"); a body shaped as
    /// signed that holds no content is said to be so, not read as a JSON number and garbage.
    @Test func lintAndFetchReadSignedFilesAlike() async throws {
        let signed = try Self.sign(stream: false)
        let linted = AASALinter.lint(signed)
        #expect(linted.map(\.code) == ["signed-file"], "\(linted)")
        #expect(CMSUnwrapper.body(signed) == .signed(content: Array(Self.json.utf8)))
        #expect(CMSUnwrapper.body(Array(Self.json.utf8)) == .plain)
        let cut = Array(signed.prefix(signed.count / 2))
        #expect(CMSUnwrapper.body(cut) == .unusable)
        #expect(AASALinter.lint(cut).map(\.code) == ["invalid-json"])
        #expect(CMSUnwrapper.body(Array(Self.json.utf8), mediaType: "application/pkcs7-mime") == .unusable)

        let transport = ScriptedTransport()
        let url = "https://example.com/.well-known/apple-app-site-association"
        transport.on(url, .status(200, headers: [("Content-Type", "application/pkcs7-mime")], body: String(decoding: cut, as: UTF8.self)))
        let result = await AASAFetcher(transport: transport, options: FetchOptions()).fetch(host: "example.com")
        #expect(result.code == "invalid-json" && result.reason == CMSUnwrapper.unusableReason, "\(result.code): \(result.reason)")
    }

    @Test func truncatedAndCorruptInputNeverCrash() throws {
        let signed = try Self.sign(stream: false)
        for length in stride(from: 0, to: signed.count, by: 7) {
            _ = CMSUnwrapper.content(of: Array(signed.prefix(length)))
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            var corrupt = signed
            for _ in 0..<3 { corrupt[Int.random(in: 0..<corrupt.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            _ = CMSUnwrapper.content(of: corrupt)
        }
        #expect(CMSUnwrapper.content(of: Array(Self.json.utf8)) == nil)
        #expect(CMSUnwrapper.content(of: [0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF]) == nil)
        #expect(CMSUnwrapper.content(of: [0x30, 0x80, 0x30, 0x80]) == nil)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
