import AASAFetchCore
import Foundation

/// Builds app-shaped fixtures in memory for the AppBundle tests: XML and DER entitlements, code
/// signature superblobs, thin and universal Mach-O files, zip archives and CMS-signed provisioning
/// profiles (signed with a throwaway key through the openssl CLI). Nothing binary is committed.
public enum AppFixtures {
    /// The app ID the fixtures are signed as.
    public static let appID = "ABCDE12345.com.example.demo"
    /// The team of the fixtures.
    public static let team = "ABCDE12345"

    /// The entitlements of a typical signed app.
    public static func entitlements(domains: [String] = ["applinks:example.com", "applinks:*.example.com", "webcredentials:example.com"],
                                    appID: String = appID) -> [String: PlistValue] {
        [
            "application-identifier": .string(appID),
            "com.apple.developer.team-identifier": .string(team),
            "com.apple.developer.associated-domains": .array(domains.map(PlistValue.string)),
            "get-task-allow": .bool(false),
            "keychain-access-groups": .array([.string("\(team).*")]),
        ]
    }

    // MARK: - Property lists

    /// An XML property list of a dictionary (keys sorted).
    public static func xmlPlist(_ dictionary: [String: PlistValue]) -> [UInt8] {
        var text = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """
        text += xml(.dictionary(dictionary)) + "\n</plist>\n"
        return Array(text.utf8)
    }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }

    private static func xml(_ value: PlistValue) -> String {
        switch value {
        case .string(let string): return "<string>\(escape(string))</string>"
        case .bool(let bool): return bool ? "<true/>" : "<false/>"
        case .integer(let integer): return "<integer>\(integer)</integer>"
        case .unsigned(let integer): return "<integer>\(integer)</integer>"
        case .real(let real): return "<real>\(real)</real>"
        case .date(let date): return "<date>\(ISO8601DateFormatter().string(from: date))</date>"
        case .data(let data): return "<data>\(Data(data).base64EncodedString())</data>"
        case .array(let values): return "<array>" + values.map(xml).joined() + "</array>"
        case .dictionary(let values):
            return "<dict>" + values.keys.sorted().map { "<key>\(escape($0))</key>" + xml(values[$0] ?? .string("")) }.joined() + "</dict>"
        }
    }

    // MARK: - DER

    /// A DER TLV with a definite length.
    public static func tlv(_ tag: UInt8, _ value: [UInt8]) -> [UInt8] {
        var length: [UInt8]
        if value.count < 0x80 {
            length = [UInt8(value.count)]
        } else {
            var bytes: [UInt8] = []
            var count = value.count
            while count > 0 {
                bytes.insert(UInt8(count & 0xFF), at: 0)
                count >>= 8
            }
            length = [0x80 | UInt8(bytes.count)] + bytes
        }
        return [tag] + length + value
    }

    /// Apple's DER entitlements encoding of a dictionary: `[APPLICATION 16] { INTEGER 1, [CONTEXT 16] {…} }`.
    public static func derEntitlements(_ dictionary: [String: PlistValue]) -> [UInt8] {
        tlv(0x70, tlv(0x02, [0x01]) + der(.dictionary(dictionary)))
    }

    private static func der(_ value: PlistValue) -> [UInt8] {
        switch value {
        case .string(let string): return tlv(0x0C, Array(string.utf8))
        case .bool(let bool): return tlv(0x01, [bool ? 0xFF : 0x00])
        case .unsigned(let integer):
            return tlv(0x02, [0] + withUnsafeBytes(of: integer.bigEndian) { Array($0) })
        case .integer(let integer):
            var bytes = withUnsafeBytes(of: integer.bigEndian) { Array($0) }
            while bytes.count > 1, (bytes[0] == 0 && bytes[1] & 0x80 == 0) || (bytes[0] == 0xFF && bytes[1] & 0x80 != 0) { bytes.removeFirst() }
            return tlv(0x02, bytes)
        case .array(let values): return tlv(0x30, values.flatMap(der))
        case .dictionary(let values):
            return tlv(0xB0, values.keys.sorted().flatMap { tlv(0x30, tlv(0x0C, Array($0.utf8)) + der(values[$0] ?? .string(""))) })
        case .real, .date, .data: return tlv(0x05, [])
        }
    }

    // MARK: - Code signature and Mach-O

    /// Big-endian 32-bit bytes.
    public static func be32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }
    /// Little-endian 32-bit bytes.
    public static func le32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
    /// Little-endian 16-bit bytes.
    public static func le16(_ value: UInt16) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }

    /// A blob: magic, length, payload.
    public static func blob(_ magic: UInt32, _ payload: [UInt8]) -> [UInt8] {
        be32(magic) + be32(UInt32(8 + payload.count)) + payload
    }

    /// An embedded-signature superblob holding a stand-in code directory and the given entitlements blobs.
    public static func superBlob(xml: [UInt8]?, der: [UInt8]?) -> [UInt8] {
        var blobs: [(type: UInt32, bytes: [UInt8])] = [(0, blob(0xFADE_0C02, Array(repeating: 0xAB, count: 40)))]
        if let xml { blobs.append((5, blob(0xFADE_7171, xml))) }
        if let der { blobs.append((7, blob(0xFADE_7172, der))) }
        blobs.append((0x10000, blob(0xFADE_0B01, [])))
        var offset = 12 + blobs.count * 8
        var index: [UInt8] = []
        var body: [UInt8] = []
        for entry in blobs {
            index += be32(entry.type) + be32(UInt32(offset))
            body += entry.bytes
            offset += entry.bytes.count
        }
        return be32(0xFADE_0CC0) + be32(UInt32(offset)) + be32(UInt32(blobs.count)) + index + body
    }

    /// CPU types of the fixtures.
    public enum CPU: UInt32, Sendable {
        case arm64 = 0x0100_000C
        case x86_64 = 0x0100_0007
        case armv7 = 12
    }

    /// A thin Mach-O: header, an `LC_UUID`-shaped filler command, `LC_CODE_SIGNATURE` when `signature`
    /// is given, some code, then the signature (16-byte aligned).
    public static func machO(signature: [UInt8]?, cpu: CPU = .arm64, is64: Bool = true, bigEndian: Bool = false, padding: Int = 0) -> [UInt8] {
        func u32(_ value: UInt32) -> [UInt8] { bigEndian ? be32(value) : le32(value) }
        let headerSize = is64 ? 32 : 28
        var commands: [UInt8] = u32(0x1B) + u32(24) + Array(repeating: 0x11, count: 16) // LC_UUID
        var count: UInt32 = 1
        let code = Array(repeating: UInt8(0xC3), count: 64 + padding)
        let commandsSize = commands.count + (signature == nil ? 0 : 16)
        var dataOffset = headerSize + commandsSize + code.count
        dataOffset = (dataOffset + 15) & ~15
        if let signature {
            commands += u32(0x1D) + u32(16) + u32(UInt32(dataOffset)) + u32(UInt32(signature.count))
            count += 1
        }
        let magic: UInt32 = is64 ? 0xFEED_FACF : 0xFEED_FACE
        var header = u32(magic) + u32(cpu.rawValue) + u32(0) + u32(2) + u32(count) + u32(UInt32(commands.count)) + u32(0x0020_0085)
        if is64 { header += u32(0) }
        var file = header + commands + code
        if let signature {
            file += Array(repeating: 0, count: dataOffset - file.count)
            file += signature
        }
        return file
    }

    /// A universal (FAT) file of thin slices, each aligned to 16 bytes.
    public static func universal(_ slices: [(cpu: CPU, bytes: [UInt8])], wide: Bool = false) -> [UInt8] {
        var header = be32(wide ? 0xCAFE_BABF : 0xCAFE_BABE) + be32(UInt32(slices.count))
        var offset = 8 + slices.count * (wide ? 32 : 20)
        offset = (offset + 15) & ~15
        var body: [UInt8] = []
        let start = offset
        for slice in slices {
            let aligned = (offset + 15) & ~15
            body += Array(repeating: 0, count: aligned - offset)
            offset = aligned
            if wide {
                header += be32(slice.cpu.rawValue) + be32(0) + be32(0) + be32(UInt32(offset)) + be32(0) + be32(UInt32(slice.bytes.count)) + be32(4) + be32(0)
            } else {
                header += be32(slice.cpu.rawValue) + be32(0) + be32(UInt32(offset)) + be32(UInt32(slice.bytes.count)) + be32(4)
            }
            body += slice.bytes
            offset += slice.bytes.count
        }
        return header + Array(repeating: 0, count: start - header.count) + body
    }

    /// A signed thin arm64 executable with XML and DER entitlements.
    public static func signedExecutable(_ entitlements: [String: PlistValue] = entitlements(), der: [String: PlistValue]? = nil) -> [UInt8] {
        machO(signature: superBlob(xml: xmlPlist(entitlements), der: derEntitlements(der ?? entitlements)))
    }

    // MARK: - Zip

    /// CRC-32 as zip stores it.
    public static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    /// A zip archive with stored (uncompressed) entries.
    public static func zip(_ entries: [(name: String, bytes: [UInt8])]) -> [UInt8] {
        var body: [UInt8] = []
        var directory: [UInt8] = []
        for entry in entries {
            let name = Array(entry.name.utf8)
            let crc = crc32(entry.bytes)
            let size = UInt32(entry.bytes.count)
            let offset = UInt32(body.count)
            body += le32(0x0403_4B50) + le16(20) + le16(0x0800) + le16(0) + le16(0) + le16(0) + le32(crc) + le32(size) + le32(size)
                + le16(UInt16(name.count)) + le16(0) + name + entry.bytes
            directory += le32(0x0201_4B50) + le16(0x031E) + le16(20) + le16(0x0800) + le16(0) + le16(0) + le16(0) + le32(crc)
                + le32(size) + le32(size) + le16(UInt16(name.count)) + le16(0) + le16(0) + le16(0) + le16(0) + le32(0) + le32(offset) + name
        }
        let end = le32(0x0605_4B50) + le16(0) + le16(0) + le16(UInt16(entries.count)) + le16(UInt16(entries.count))
            + le32(UInt32(directory.count)) + le32(UInt32(body.count)) + le16(0)
        return body + directory + end
    }

    /// A zip archive with DEFLATE entries, written by python3's `zipfile`.
    public static func deflatedZip(_ entries: [(name: String, bytes: [UInt8])]) throws -> [UInt8] {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        var names: [String] = []
        for (number, entry) in entries.enumerated() {
            let file = dir.appendingPathComponent("entry\(number)")
            try Data(entry.bytes).write(to: file)
            names += [file.path, entry.name]
        }
        let output = dir.appendingPathComponent("out.zip")
        let script = """
        import sys, zipfile
        with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
            args = sys.argv[2:]
            for i in range(0, len(args), 2):
                z.write(args[i], args[i + 1])
        """
        let result = try ChildProcess.run("/usr/bin/env", ["python3", "-c", script, output.path] + names)
        guard result.status == 0 else { throw TestSupportError("python3 zipfile failed: \(result.standardError)") }
        return [UInt8](try Data(contentsOf: output))
    }

    // MARK: - Provisioning profiles

    /// The property list of a provisioning profile.
    public static func profilePlist(entitlements: [String: PlistValue], name: String = "Demo Distribution",
                                    expiration: Date = Date(timeIntervalSinceNow: 86400 * 365)) -> [UInt8] {
        xmlPlist([
            "AppIDName": .string("Demo"),
            "ApplicationIdentifierPrefix": .array([.string(team)]),
            "CreationDate": .date(Date(timeIntervalSince1970: 1_700_000_000)),
            "Entitlements": .dictionary(entitlements),
            "ExpirationDate": .date(expiration),
            "Name": .string(name),
            "TeamIdentifier": .array([.string(team)]),
            "TeamName": .string("Example Ltd"),
            "UUID": .string("0F5C0D3A-5B7E-4C1D-9E2F-123456789ABC"),
            "Version": .integer(1),
        ])
    }

    /// The profile's entitlements as the developer portal writes them: associated domains `*`.
    public static func portalEntitlements(appID: String = appID) -> [String: PlistValue] {
        [
            "application-identifier": .string(appID),
            "com.apple.developer.team-identifier": .string(team),
            "com.apple.developer.associated-domains": .string("*"),
            "get-task-allow": .bool(false),
        ]
    }

    /// Signs content as CMS SignedData (DER, content attached) with a throwaway key.
    public static func cmsSign(_ content: [UInt8]) throws -> [UInt8] {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("content.plist")
        try Data(content).write(to: input)
        func openssl(_ arguments: [String]) throws {
            let result = try ChildProcess.run("/usr/bin/openssl", arguments)
            guard result.status == 0 else { throw TestSupportError("openssl \(arguments[0]) failed: \(result.standardError)") }
        }
        let key = dir.appendingPathComponent("key.pem").path
        let cert = dir.appendingPathComponent("cert.pem").path
        let output = dir.appendingPathComponent("profile.der").path
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
                     "-subj", "/CN=Test Provisioning Signer", "-keyout", key, "-out", cert])
        try openssl(["cms", "-sign", "-in", input.path, "-signer", cert, "-inkey", key, "-binary", "-nodetach",
                     "-outform", "DER", "-out", output])
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
    }

    /// A signed provisioning profile.
    public static func profile(entitlements: [String: PlistValue] = portalEntitlements(), expiration: Date = Date(timeIntervalSinceNow: 86400 * 365)) throws -> [UInt8] {
        try cmsSign(profilePlist(entitlements: entitlements, expiration: expiration))
    }

    /// An `Info.plist` naming the executable.
    public static func infoPlist(executable: String = "Demo", bundleID: String = "com.example.demo") -> [UInt8] {
        xmlPlist(["CFBundleExecutable": .string(executable), "CFBundleIdentifier": .string(bundleID), "CFBundleName": .string("Demo")])
    }

    /// The entries of `Payload/Demo.app/`.
    public static func ipaEntries(executable: [UInt8], profile: [UInt8]?) -> [(name: String, bytes: [UInt8])] {
        var entries: [(name: String, bytes: [UInt8])] = [
            ("Payload/Demo.app/Info.plist", infoPlist()),
            ("Payload/Demo.app/Demo", executable),
            ("Payload/Demo.app/_CodeSignature/CodeResources", Array("<plist/>".utf8)),
        ]
        if let profile { entries.append(("Payload/Demo.app/embedded.mobileprovision", profile)) }
        return entries
    }

    /// Writes an iOS-layout `.app` folder and returns its path.
    public static func writeAppFolder(in directory: URL, executable: [UInt8], profile: [UInt8]?, macOS: Bool = false) throws -> String {
        let app = directory.appendingPathComponent("Demo.app")
        let contents = macOS ? app.appendingPathComponent("Contents") : app
        let executableURL = macOS ? contents.appendingPathComponent("MacOS/Demo") : contents.appendingPathComponent("Demo")
        try FileManager.default.createDirectory(at: executableURL.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(infoPlist()).write(to: contents.appendingPathComponent("Info.plist"))
        try Data(executable).write(to: executableURL)
        if let profile {
            try Data(profile).write(to: contents.appendingPathComponent(macOS ? "embedded.provisionprofile" : "embedded.mobileprovision"))
        }
        return app.path
    }

    /// A fresh scratch folder (the caller removes it).
    public static func scratch() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-app-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }
}
