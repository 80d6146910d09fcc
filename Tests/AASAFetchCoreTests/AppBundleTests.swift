import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Inflate
import Testing
import Glibc

/// The app readers over generated fixtures: Mach-O (thin, universal), signature superblobs, XML and
/// DER entitlements, zip archives, provisioning profiles, and the comparisons.
struct AppBundleTests {
    /// Inside an `.app` folder only regular files are read: an executable that is a pipe blocked
    /// the run until a writer came, one linked to `/dev/zero` was read to the 1 GiB cap. An
    /// `Info.plist` that cannot be read is a warning: the signature is still read.
    @Test(.timeLimit(.minutes(1))) func anAppFolderHoldsOnlyRegularFiles() throws {
        let dir = try F.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let app = try F.writeAppFolder(in: dir, executable: F.signedExecutable(), profile: nil)
        let executable = app + "/Demo"
        try FileManager.default.removeItem(atPath: executable)
        #expect(mkfifo(executable, 0o600) == 0)
        do {
            _ = try AppInspector.inspect(path: app)
            Issue.record("a pipe was read as the executable")
        } catch {
            #expect(error.code == "app-unreadable", "\(error)")
            #expect(error.message.contains("not a regular file"), "\(error)")
        }
        try FileManager.default.removeItem(atPath: executable)
        try FileManager.default.createSymbolicLink(atPath: executable, withDestinationPath: "/dev/zero")
        do {
            _ = try AppInspector.inspect(path: app)
            Issue.record("/dev/zero was read as the executable")
        } catch {
            #expect(error.code == "app-unreadable", "\(error)")
        }
        try FileManager.default.removeItem(atPath: executable)
        try Data(F.signedExecutable()).write(to: URL(fileURLWithPath: executable))
        try FileManager.default.removeItem(atPath: app + "/Info.plist")
        #expect(mkfifo(app + "/Info.plist", 0o600) == 0)
        let inspection = try AppInspector.inspect(path: app)
        #expect(inspection.signature != nil)
        #expect(inspection.findings.contains { $0.code == "info-plist-malformed" }, "\(inspection.findings)")
    }

    /// An archive naming 65,000 different app folders (what a zip without ZIP64 holds) is read in
    /// linear time: the folders were kept in an array searched once per entry (40,000 took 41 s,
    /// a million would take hours). The time limit is the suite's bound, far above a linear read.
    @Test(.timeLimit(.minutes(1))) func manyAppFoldersAreReadInLinearTime() throws {
        let entries = (0..<65_000).map { (name: "Payload/A\(String(format: "%07d", 64_999 - $0)).app/", bytes: [UInt8]()) }
        do {
            _ = try AppInspector.inspect(bytes: F.zip(entries), path: "many.ipa")
            Issue.record("an archive of empty folders was read as an app")
        } catch {
            // The first folder in name order is the one read; it holds no executable.
            #expect(error.code == "app-no-executable", "\(error)")
            #expect(error.message.contains("A0000000.app"), "\(error)")
        }
    }

    typealias F = AppFixtures

    private func code(_ body: () throws -> Void) -> String? {
        failure(body).map { $0.code }
    }

    /// The error's code and message (`unexpected: …` for another error), or `nil`.
    private func failure(_ body: () throws -> Void) -> (code: String, message: String)? {
        do {
            try body()
            return nil
        } catch let error as AppBundleError {
            return (error.code, error.message)
        } catch {
            return ("unexpected: \(error)", "")
        }
    }

    // MARK: - DER entitlements

    @Test func decodesAppleDERVectors() throws {
        // Byte strings as codesign writes them.
        #expect(try DEREntitlements.decode([0x70, 5, 2, 1, 1, 0xB0, 0]) == [:])
        #expect(try DEREntitlements.decode([0x70, 15, 2, 1, 1, 0xB0, 10, 0x30, 8, 0x0C, 3, 107, 101, 121, 1, 1, 0xFF]) == ["key": .bool(true)])
        #expect(try DEREntitlements.decode([0x70, 15, 2, 1, 1, 0xB0, 10, 0x30, 8, 0x0C, 3, 107, 101, 121, 2, 1, 0xFF]) == ["key": .integer(-1)])
        #expect(try DEREntitlements.decode([0x70, 15, 2, 1, 1, 0xB0, 10, 0x30, 8, 0x0C, 3, 107, 101, 121, 2, 1, 42]) == ["key": .integer(42)])
        #expect(try DEREntitlements.decode([0x70, 22, 2, 1, 1, 0xB0, 17, 0x30, 15, 0x0C, 3, 107, 101, 121, 0x30, 8, 1, 1, 0xFF, 0x0C, 3, 102, 111, 111])
            == ["key": .array([.bool(true), .string("foo")])])
        #expect(try DEREntitlements.decode([0x70, 26, 2, 1, 1, 0xB0, 21, 0x30, 19, 0x0C, 3, 107, 101, 121, 0xB0, 12, 0x30, 10, 0x0C, 5,
                                            105, 110, 110, 101, 114, 1, 1, 0]) == ["key": .dictionary(["inner": .bool(false)])])
        // The older SET form.
        #expect(try DEREntitlements.decode([0x31, 10, 0x30, 8, 0x0C, 3, 107, 101, 121, 1, 1, 0]) == ["key": .bool(false)])
        let entitlements = F.entitlements()
        #expect(try DEREntitlements.decode(F.derEntitlements(entitlements)) == entitlements)
    }

    @Test(arguments: [
        [UInt8](), [0x70], [0x70, 5, 2, 1, 1, 0xB0], [0x70, 0x84, 0xFF, 0xFF, 0xFF, 0xFF], [0x70, 3, 2, 1, 1], [0x04, 0],
        [0x70, 5, 2, 1, 1, 0xB0, 0, 0], [0x70, 0x85, 1, 1, 1, 1, 1], [0x70, 9, 2, 1, 1, 0xB0, 4, 0x30, 2, 0x0C, 0],
        [0x70, 11, 2, 1, 1, 0xB0, 6, 0x30, 4, 0x0C, 1, 0xFF, 0x05],
    ])
    func refusesMalformedDER(_ bytes: [UInt8]) {
        #expect(code { _ = try DEREntitlements.decode(bytes) } == "signature-malformed")
    }

    @Test func refusesDeepDERNesting() {
        var value: [UInt8] = F.tlv(0x30, [])
        for _ in 0..<100 { value = F.tlv(0x30, value) }
        let bytes = F.tlv(0x70, [2, 1, 1] + F.tlv(0xB0, F.tlv(0x30, F.tlv(0x0C, Array("k".utf8)) + value)))
        #expect(code { _ = try DEREntitlements.decode(bytes) } == "signature-malformed")
    }

    // MARK: - Mach-O and signatures

    @Test func readsThin64BitSignature() throws {
        let inspection = try AppInspector.inspect(bytes: F.signedExecutable(), path: "Demo")
        #expect(inspection.kind == .macho)
        let signature = try #require(inspection.signature)
        #expect(signature.source == .xml)
        #expect(signature.blobs == [.xml, .der])
        #expect(signature.architectures == ["arm64"])
        #expect(inspection.appID == F.appID)
        #expect(inspection.teamID == F.team)
        let file = try inspection.entitlementsFile()
        #expect(file.associatedDomains == ["applinks:example.com", "applinks:*.example.com", "webcredentials:example.com"])
        #expect(file.applicationIdentifier == F.appID)
        #expect(inspection.findings.isEmpty)
    }

    @Test(arguments: [(false, true), (true, false), (true, true), (false, false)])
    func readsEitherWidthAndByteOrder(bigEndian: Bool, is64: Bool) throws {
        let bytes = F.machO(signature: F.superBlob(xml: F.xmlPlist(F.entitlements()), der: nil), cpu: .armv7, is64: is64, bigEndian: bigEndian)
        let slices = try MachOFile.slices(of: bytes)
        #expect(slices.count == 1)
        #expect(slices[0].architecture == "arm")
        let inspection = try AppInspector.inspect(bytes: bytes, path: "Demo")
        #expect(inspection.signature?.blobs == [.xml])
        #expect(inspection.appID == F.appID)
    }

    @Test(arguments: [false, true])
    func readsUniversalWithTwoSlices(wide: Bool) throws {
        let arm = F.signedExecutable()
        let intel = F.machO(signature: F.superBlob(xml: F.xmlPlist(F.entitlements()), der: F.derEntitlements(F.entitlements())), cpu: .x86_64)
        let bytes = F.universal([(.arm64, arm), (.x86_64, intel)], wide: wide)
        let slices = try MachOFile.slices(of: bytes)
        #expect(slices.map(\.architecture) == ["arm64", "x86_64"])
        let inspection = try AppInspector.inspect(bytes: bytes, path: "Demo")
        #expect(inspection.signature?.architectures == ["arm64", "x86_64"])
        #expect(inspection.findings.isEmpty)

        let other = F.signedExecutable(F.entitlements(domains: ["applinks:other.example"]))
        let differing = try AppInspector.inspect(bytes: F.universal([(.arm64, arm), (.x86_64, other)], wide: wide), path: "Demo")
        #expect(differing.findings.map(\.code) == ["signature-slices-differ"])

        // The same entitlements with a NaN <real> in both slices are the same entitlements.
        // Regression: IEEE comparison made them `signature-slices-differ`.
        var withNaN = F.entitlements()
        withNaN["x-ratio"] = .real(.nan)
        let nanSlice = F.machO(signature: F.superBlob(xml: F.xmlPlist(withNaN), der: nil))
        let nanBoth = try AppInspector.inspect(bytes: F.universal([(.arm64, nanSlice), (.x86_64, nanSlice)], wide: wide), path: "Demo")
        #expect(nanBoth.findings.map(\.code) == [], "\(nanBoth.findings)")
        #expect(PlistValue.real(.nan) == .real(-.nan) && Set([PlistValue.real(.nan), .real(.nan)]).count == 1)
        #expect(PlistValue.real(0) == .real(-0.0) && Set([PlistValue.real(0), .real(-0.0)]).count == 1)
        #expect(PlistValue.real(.nan) != .real(1) && PlistValue.integer(1) != .unsigned(1))

        let halfSigned = try AppInspector.inspect(bytes: F.universal([(.arm64, arm), (.x86_64, F.machO(signature: nil))]), path: "Demo")
        #expect(halfSigned.findings.map(\.code) == ["macho-slice-unsigned"])
    }

    @Test func reportsXMLAndDERMismatchAndPrefersXML() throws {
        let bytes = F.signedExecutable(F.entitlements(), der: F.entitlements(domains: ["applinks:example.com"]))
        let inspection = try AppInspector.inspect(bytes: bytes, path: "Demo")
        #expect(inspection.signature?.source == .xml)
        #expect(inspection.signature?.associatedDomains?.count == 3)
        #expect(inspection.findings.map(\.code) == ["signature-der-mismatch"])
    }

    @Test func usesDERWhenOnlyDERIsPresentOrXMLIsBroken() throws {
        let derOnly = try AppInspector.inspect(bytes: F.machO(signature: F.superBlob(xml: nil, der: F.derEntitlements(F.entitlements()))), path: "D")
        #expect(derOnly.signature?.source == .der)
        #expect(derOnly.appID == F.appID)
        let brokenXML = try AppInspector.inspect(bytes: F.machO(signature: F.superBlob(xml: Array("<plist><dict>".utf8), der: F.derEntitlements(F.entitlements()))), path: "D")
        #expect(brokenXML.signature?.source == .der)
        #expect(brokenXML.findings.map(\.code) == ["signature-malformed"])
    }

    /// An entitlements blob past 1 MiB is not decoded (Foundation took about 30 times a blob's
    /// size before any value count applied: a 300 KB .ipa took 5.4 GB): `plist-too-complex`, and
    /// the other blob is used when it is readable.
    @Test func anOversizedEntitlementsBlobIsNotDecoded() throws {
        let padding = "<!--" + String(repeating: "x", count: AppInspector.maxEntitlementsBlobBytes) + "-->"
        let xml = Array(String(decoding: F.xmlPlist(F.entitlements()), as: UTF8.self).replacingOccurrences(of: "<dict>", with: "<dict>" + padding).utf8)
        let inspection = try AppInspector.inspect(bytes: F.machO(signature: F.superBlob(xml: xml, der: F.derEntitlements(F.entitlements()))), path: "D")
        #expect(inspection.signature?.source == .der)
        #expect(inspection.findings.map(\.code) == ["plist-too-complex"])
        #expect(inspection.findings.first?.message.contains("over the 1048576 read") == true, "\(inspection.findings)")
        let both = F.machO(signature: F.superBlob(xml: xml, der: F.derEntitlements(F.entitlements()) + [UInt8](repeating: 0, count: AppInspector.maxEntitlementsBlobBytes)))
        #expect(code { _ = try AppInspector.inspect(bytes: both, path: "D") } == "plist-too-complex")
    }

    /// An `Info.plist` in an `.ipa` that cannot be read (too large, a bad CRC, encrypted) is a
    /// warning, as in an `.app` folder: the signature is still read under the assumed name (the
    /// whole read used to stop, exit 2).
    @Test func anUnreadableInfoPlistInAnArchiveIsAWarning() throws {
        let ipa = F.zip([("Payload/Demo.app/Info.plist", F.infoPlist()), ("Payload/Demo.app/Demo", F.signedExecutable())])
        let limits = AppInspector.Limits(fileBytes: 1 << 30, executableBytes: 1 << 30, smallFileBytes: 16)
        let inspection = try AppInspector.inspect(bytes: ipa, path: "X.ipa", limits: limits)
        #expect(inspection.findings.map(\.code).first == "info-plist-malformed", "\(inspection.findings)")
        #expect(inspection.appID == F.appID)
    }

    @Test func signatureProblemsHaveStableCodes() {
        #expect(code { _ = try AppInspector.inspect(bytes: F.machO(signature: nil), path: "D") } == "macho-no-signature")
        #expect(code { _ = try AppInspector.inspect(bytes: F.machO(signature: F.superBlob(xml: nil, der: nil)), path: "D") } == "signature-no-entitlements")
        #expect(code { _ = try AppInspector.inspect(bytes: Array("#!/bin/sh\necho hi\n".utf8), path: "D") } == "macho-not-macho")
        #expect(code { _ = try MachOFile.slices(of: [0xCA, 0xFE, 0xBA, 0xBE, 0, 0x32, 0, 0]) } == "macho-not-macho") // a Java class
        #expect(code { _ = try MachOFile.slices(of: [0xCF, 0xFA, 0xED, 0xFE, 0x0C]) } == "macho-truncated")
    }

    @Test func refusesBadOffsetsLengthsAndCounts() {
        let good = F.superBlob(xml: F.xmlPlist(F.entitlements()), der: nil)
        func patched(_ bytes: [UInt8], at offset: Int, _ value: UInt32) -> [UInt8] {
            var copy = bytes
            copy.replaceSubrange(offset..<(offset + 4), with: F.be32(value))
            return copy
        }
        // Superblob: length past the bytes, huge count, blob offset outside, blob length past the end, overlapping index.
        for bad in [patched(good, at: 4, UInt32(good.count + 1)), patched(good, at: 4, 0xFFFF_FFFF), patched(good, at: 8, 0xFFFF_FFFF),
                    patched(good, at: 8, 0x2000_0000), patched(good, at: 16, 0xFFFF_FFF0), patched(good, at: 16, 4),
                    patched(good, at: 0, 0xFADE_0C00), Array(good.prefix(11))] {
            #expect(code { _ = try CodeSignature.parse(bad) } == "signature-malformed")
        }
        let blobStart = Int(F.be32ToInt(good, at: 16))
        #expect(code { _ = try CodeSignature.parse(patched(good, at: blobStart + 4, 0xFFFF_FFFF)) } == "signature-malformed")
        #expect(code { _ = try CodeSignature.parse(patched(good, at: blobStart + 4, 3)) } == "signature-malformed")

        // Mach-O: LC_CODE_SIGNATURE pointing past the end, huge command count, zero command size, commands past the end.
        let binary = F.machO(signature: good)
        func le(_ bytes: [UInt8], at offset: Int, _ value: UInt32) -> [UInt8] {
            var copy = bytes
            copy.replaceSubrange(offset..<(offset + 4), with: F.le32(value))
            return copy
        }
        let signatureCommand = 32 + 24
        #expect(code { _ = try MachOFile.slices(of: le(binary, at: signatureCommand + 8, 0xFFFF_FFF0)) } == "signature-malformed")
        #expect(code { _ = try MachOFile.slices(of: le(binary, at: signatureCommand + 12, 0xFFFF_FFFF)) } == "signature-malformed")
        #expect(code { _ = try MachOFile.slices(of: le(binary, at: 16, 0xFFFF_FFFF)) } == "macho-malformed")
        #expect(code { _ = try MachOFile.slices(of: le(binary, at: 20, 0xFFFF_FFFF)) } == "macho-truncated")
        #expect(code { _ = try MachOFile.slices(of: le(binary, at: 32 + 4, 0)) } == "macho-malformed")
        #expect(code { _ = try MachOFile.slices(of: le(binary, at: 32 + 4, 0xFFFF_FFF8)) } == "macho-malformed")
        // Universal: a slice outside the file, too many slices.
        let fat = F.universal([(.arm64, binary)])
        #expect(code { _ = try MachOFile.slices(of: patched(fat, at: 16, 0xFFFF_FF00)) } == "macho-truncated")
        #expect(code { _ = try MachOFile.slices(of: patched(fat, at: 20, 0x7FFF_FFFF)) } == "macho-truncated")
        #expect(code { _ = try MachOFile.slices(of: patched(fat, at: 4, 0xFFFF_FFFF)) } == "macho-not-macho")
        #expect(code { _ = try MachOFile.slices(of: Array(fat.prefix(30))) } == "macho-truncated")
    }

    /// A universal file with faults in two slices gives the first slice's, at the first step it
    /// fails, as reading it whole did, from memory and from a deflated archive alike (read in
    /// steps, every slice's record was checked before the first slice's header).
    @Test func theFirstBadSliceDecidesTheError() throws {
        let good = F.signedExecutable()
        let fat = F.universal([(.arm64, good), (.x86_64, good)])
        let first = Int(F.be32ToInt(fat, at: 16))
        let second = Int(F.be32ToInt(fat, at: 36))
        func patched(_ bytes: [UInt8], _ changes: [(Int, [UInt8])]) -> [UInt8] {
            var copy = bytes
            for (offset, value) in changes { copy.replaceSubrange(offset..<(offset + value.count), with: value) }
            return copy
        }
        let signatureCommand = 32 + 24
        let cases: [([UInt8], String)] = [
            // Slice 0 is no Mach-O; slice 1 lies outside the file.
            (patched(fat, [(first, F.le32(0)), (36, F.be32(0x7FFF_FFF0))]), "macho-not-macho"),
            // Slice 0's signature lies outside it; slice 1's load commands run past its end.
            (patched(fat, [(first + signatureCommand + 8, F.le32(0xFFFF_FFF0)), (second + 20, F.le32(0xFFFF_FF00))]), "signature-malformed"),
            // Slice 0 has too many load commands; slice 1 overlaps the universal header.
            (patched(fat, [(first + 16, F.le32(100)), (36, F.be32(0))]), "macho-malformed"),
        ]
        for (bytes, expected) in cases {
            var messages: [String] = []
            for input in [bytes, try F.deflatedZip(F.ipaEntries(executable: bytes, profile: nil))] {
                do {
                    _ = try AppInspector.inspect(bytes: input, path: "Demo")
                    Issue.record("\(expected): no error")
                } catch {
                    #expect(error.code == expected, "\(error)")
                    messages.append(error.message.replacingOccurrences(of: "Payload/Demo.app/", with: ""))
                }
            }
            #expect(messages.count == 2 && !messages[0].contains("x86_64"), "\(messages)")
        }
    }

    /// A header may name load commands or a signature as large as the file; what is read for
    /// them is capped (16 MiB of load commands, 64 MiB of signatures), so a 1 MB archive cannot
    /// make the reader hold a gigabyte. Sparse files: nothing of that size is written.
    @Test func hostileSizesAreCapped() throws {
        let dir = try F.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        func sparse(_ name: String, commandsSize: UInt32, signature: (offset: UInt32, size: UInt32)?, length: UInt64) throws -> String {
            var header = F.le32(0xFEED_FACF) + F.le32(0x0100_000C) + F.le32(0) + F.le32(2)
            var commands: [UInt8] = []
            if let signature { commands = F.le32(0x1D) + F.le32(16) + F.le32(signature.offset) + F.le32(signature.size) }
            header += F.le32(signature == nil ? 0 : 1) + F.le32(max(commandsSize, UInt32(commands.count))) + F.le32(0) + F.le32(0)
            let url = dir.appendingPathComponent(name)
            try Data(header + commands).write(to: url)
            let handle = try FileHandle(forWritingTo: url)
            try handle.truncate(atOffset: length)
            try handle.close()
            return url.path
        }
        let commands = try sparse("commands", commandsSize: 20 << 20, signature: nil, length: 24 << 20)
        let tooManyCommands = failure { _ = try AppInspector.inspect(path: commands) }
        #expect(tooManyCommands?.code == "macho-malformed" && tooManyCommands?.message.contains("more than the 16 MiB read") == true,
                "\(String(describing: tooManyCommands))")
        let signature = try sparse("signature", commandsSize: 16, signature: (4096, 80 << 20), length: 100 << 20)
        let tooLarge = failure { _ = try AppInspector.inspect(path: signature) }
        #expect(tooLarge?.code == "signature-malformed" && tooLarge?.message.contains("more than the 64 MiB read") == true,
                "\(String(describing: tooLarge))")
        // Within the caps, the same layout is read: the signature is all zeros, no superblob.
        let small = try sparse("small", commandsSize: 16, signature: (4096, 1 << 20), length: 2 << 20)
        let zeros = failure { _ = try AppInspector.inspect(path: small) }
        #expect(zeros?.code == "signature-malformed" && zeros?.message.contains("MiB read") == false, "\(String(describing: zeros))")
    }

    @Test func refusesOverlappingUniversalSlices() throws {
        let thin = F.signedExecutable()
        let fat = F.universal([(.arm64, thin), (.x86_64, thin)])
        #expect(try MachOFile.slices(of: fat).count == 2)
        // Record 1's offset field (at 8 + 20 + 8) pointed at slice 0: one slice's bytes read twice
        // (32 such records made a file's signature be copied and parsed 32 times).
        var shared = fat
        shared.replaceSubrange(36..<40, with: F.be32(F.be32ToInt(fat, at: 16)))
        #expect(code { _ = try MachOFile.slices(of: shared) } == "macho-malformed")
        #expect(code { _ = try AppInspector.inspect(bytes: shared, path: "D") } == "macho-malformed")
        // A slice that starts inside the header.
        var inHeader = fat
        inHeader.replaceSubrange(16..<20, with: F.be32(8))
        #expect(code { _ = try MachOFile.slices(of: inHeader) } == "macho-malformed")
    }

    @Test func flagsWildcardAndMissingDomainsInTheSignature() throws {
        var wildcard = F.entitlements()
        wildcard["com.apple.developer.associated-domains"] = .string("*")
        let star = try AppInspector.inspect(bytes: F.signedExecutable(wildcard), path: "D")
        #expect(star.findings.map(\.code) == ["signature-wildcard-domains"])
        #expect(code { _ = try star.entitlementsFile() } == "entitlements-wrong-type")

        var none = F.entitlements()
        none["com.apple.developer.associated-domains"] = nil
        let missing = try AppInspector.inspect(bytes: F.signedExecutable(none), path: "D")
        #expect(missing.findings.map(\.code) == ["signature-missing-domains"])
        #expect(code { _ = try missing.entitlementsFile() } == "entitlements-missing-key")

        // A mixed list is named by its first non-string item: the message held the whole value
        // (149 KB for 5,000 strings and an integer).
        let list: [Any] = Array(repeating: "applinks:example.com", count: 5000) + [7]
        let plist = try PropertyListSerialization.data(fromPropertyList: ["com.apple.developer.associated-domains": list], format: .xml, options: 0)
        let inspected = try AppInspector.inspect(bytes: [UInt8](plist), path: "mixed.entitlements")
        let wrong = try #require(inspected.findings.first { $0.code == "entitlements-wrong-type" })
        #expect(wrong.message == "com.apple.developer.associated-domains is an array whose item 5001 of 5001 is an integer, not an array of strings", "\(wrong.message)")
    }

    // MARK: - Zip and .ipa

    @Test func readsStoredAndDeflatedIPA() throws {
        let profile = try F.profile()
        let entries = F.ipaEntries(executable: F.signedExecutable(), profile: profile)
        for archive in [F.zip(entries), try F.deflatedZip(entries)] {
            let inspection = try AppInspector.inspect(bytes: archive, path: "Demo.ipa")
            #expect(inspection.kind == .ipa)
            #expect(inspection.bundle == "Payload/Demo.app")
            #expect(inspection.executable == "Payload/Demo.app/Demo")
            #expect(inspection.bundleIdentifier == "com.example.demo")
            #expect(inspection.signature?.associatedDomains?.count == 3)
            #expect(inspection.profile?.name == "Demo Distribution")
            #expect(inspection.profile?.teamIdentifiers == [F.team])
            #expect(inspection.profile?.associatedDomains == .any)
            #expect(inspection.findings.map(\.code) == ["profile-wildcard-domains"])
        }
    }

    /// An executable is read by range (its headers, load commands and signatures), not whole, so
    /// a 200 MB executable no longer costs 200 MB: the same entitlements come out of memory, a
    /// file, a folder and stored or deflated archives, for slices past the first mebibyte that the
    /// archive reader keeps as the entry streams by. A damaged byte anywhere is still found.
    @Test func readsLargeUniversalExecutablesByRange() throws {
        let padding = 1_500_000
        let arm = F.machO(signature: F.superBlob(xml: F.xmlPlist(F.entitlements()), der: nil), cpu: .arm64, padding: padding)
        let other = F.entitlements(domains: ["applinks:other.example"])
        let intel = F.machO(signature: F.superBlob(xml: F.xmlPlist(other), der: F.derEntitlements(other)), cpu: .x86_64, padding: padding)
        let binary = F.universal([(.arm64, arm), (.x86_64, intel)])

        // The second slice's signature at several distances after its load commands: each range
        // is asked for as soon as the one it is found from has come, before the stream reaches it.
        for near in [250_000, 262_000, 280_000, 300_000, 330_000] {
            let late = F.machO(signature: F.superBlob(xml: F.xmlPlist(other), der: nil), cpu: .x86_64, padding: near)
            let archive = try F.deflatedZip(F.ipaEntries(executable: F.universal([(.arm64, arm), (.x86_64, late)]), profile: nil))
            let inspection = try AppInspector.inspect(bytes: archive, path: "Demo.ipa")
            #expect(inspection.signature?.architectures == ["arm64", "x86_64"], "\(near)")
            #expect(inspection.findings.map(\.code).contains("signature-slices-differ"), "\(near): \(inspection.findings)")
        }

        // A signature placed before the load commands (at the start of a slice past the first
        // MiB): the stream has passed it when it is asked for, so the entry is read again; the
        // answer is the one from memory.
        let intelStart = Int(F.be32ToInt(binary, at: 36))
        var early = binary
        early.replaceSubrange((intelStart + 32 + 24 + 8)..<(intelStart + 32 + 24 + 16), with: F.le32(0) + F.le32(64))
        let fromMemory = try AppInspector.inspect(bytes: early, path: "Payload/Demo.app/Demo")
        let fromArchive = try AppInspector.inspect(bytes: try F.deflatedZip(F.ipaEntries(executable: early, profile: nil)), path: "Demo.ipa")
        let archiveFindings = fromArchive.findings.filter { $0.code != "profile-absent" }.map(\.message)
        #expect(archiveFindings == fromMemory.findings.map(\.message) && fromMemory.findings.map(\.code) == ["signature-malformed"],
                "\(fromMemory.findings) \(fromArchive.findings)")
        #expect(fromArchive.signature?.architectures == ["arm64"] && fromMemory.signature?.architectures == ["arm64"])

        let dir = try F.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("Demo")
        try Data(binary).write(to: file)
        let folder = try F.writeAppFolder(in: dir.appendingPathComponent("folder"), executable: binary, profile: nil)
        let entries = F.ipaEntries(executable: binary, profile: nil)
        let stored = F.zip(entries)
        let deflated = try F.deflatedZip(entries)
        #expect(deflated.count < binary.count / 10)
        let inspections: [(String, AppInspection)] = [
            ("memory", try AppInspector.inspect(bytes: binary, path: "Demo")),
            ("file", try AppInspector.inspect(path: file.path)),
            ("folder", try AppInspector.inspect(path: folder)),
            ("stored ipa", try AppInspector.inspect(bytes: stored, path: "Demo.ipa")),
            ("deflated ipa", try AppInspector.inspect(bytes: deflated, path: "Demo.ipa")),
        ]
        for (name, inspection) in inspections {
            #expect(inspection.signature?.architectures == ["arm64", "x86_64"], "\(name)")
            #expect(inspection.signature?.associatedDomains?.count == 3, "\(name)")
            #expect(inspection.signature?.blobs == [.xml], "\(name)")
            // The second slice's own signature was read: its entitlements differ.
            #expect(inspection.findings.map(\.code).contains("signature-slices-differ"), "\(name): \(inspection.findings)")
        }

        // One byte of the code changed: the archive's CRC-32 still catches it.
        let run = [UInt8](repeating: 0xC3, count: 4096)
        let start = try #require((0..<(stored.count - run.count)).first { stored[$0] == 0xC3 && Array(stored[$0..<($0 + run.count)]) == run })
        var damaged = stored
        damaged[start + padding] ^= 0xFF
        #expect(code { _ = try AppInspector.inspect(bytes: damaged, path: "Demo.ipa") } == "zip-corrupt")
    }

    @Test func readsAppFolders() throws {
        let dir = try F.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let profile = try F.profile()
        for macOS in [false, true] {
            let sub = dir.appendingPathComponent(macOS ? "mac" : "ios")
            let path = try F.writeAppFolder(in: sub, executable: F.signedExecutable(), profile: profile, macOS: macOS)
            let inspection = try AppInspector.inspect(path: path)
            #expect(inspection.kind == .app)
            #expect(inspection.executable?.hasSuffix(macOS ? "Contents/MacOS/Demo" : "Demo.app/Demo") == true)
            #expect(inspection.appID == F.appID)
            #expect(inspection.profile != nil)
        }
        #expect(code { _ = try AppInspector.inspect(path: dir.appendingPathComponent("absent.ipa").path) } == "app-unreadable")
    }

    @Test func truncatedZipsNeverCrashAndSayWhy() throws {
        let archive = F.zip(F.ipaEntries(executable: F.signedExecutable(), profile: nil))
        var codes: Set<String> = []
        for length in 0..<archive.count {
            do {
                _ = try AppInspector.inspect(bytes: Array(archive.prefix(length)), path: "T.ipa")
            } catch {
                codes.insert(error.code)
            }
        }
        #expect(codes.isSubset(of: ["zip-truncated", "zip-corrupt", "macho-not-macho"]))
        #expect(codes.contains("zip-truncated"))
        #expect(code { _ = try ZipArchive(bytes: Array(archive.prefix(archive.count - 1))) } == "zip-truncated")
    }

    @Test func refusesCorruptDirectoriesAndUnsafeNames() throws {
        let entries = F.ipaEntries(executable: F.signedExecutable(), profile: nil)
        let archive = F.zip(entries)
        let end = archive.count - 22
        func patched(_ offset: Int, _ bytes: [UInt8]) -> [UInt8] {
            var copy = archive
            copy.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
            return copy
        }
        let directoryOffset = Int(archive[end + 16]) | Int(archive[end + 17]) << 8 | Int(archive[end + 18]) << 16
        #expect(code { _ = try ZipArchive(bytes: patched(directoryOffset, [0, 0, 0, 0])) } == "zip-corrupt")
        #expect(code { _ = try ZipArchive(bytes: patched(end + 10, [0xFF, 0xFF])) } == "zip-corrupt")
        #expect(code { _ = try ZipArchive(bytes: patched(end + 16, [0xFF, 0xFF, 0xFF, 0x7F])) } == "zip-corrupt")
        #expect(code { _ = try ZipArchive(bytes: patched(end + 12, [0xFF, 0xFF, 0xFF, 0x0F])) } == "zip-corrupt")
        #expect(code { _ = try ZipArchive(bytes: patched(directoryOffset + 28, [0xFF, 0xFF])) } == "zip-corrupt")
        #expect(code { _ = try ZipArchive(bytes: patched(directoryOffset + 42, [0xFF, 0xFF, 0xFF, 0x7F])) } == "zip-corrupt")
        // A local header that is not one, a CRC that does not match.
        let zip = try ZipArchive(bytes: patched(0, [0, 0, 0, 0]))
        #expect(code { _ = try zip.contents(of: zip.entries[0], limit: 1 << 20) } == "zip-corrupt")
        let crc = try ZipArchive(bytes: patched(directoryOffset + 16, [1, 2, 3, 4]))
        #expect(code { _ = try crc.contents(of: crc.entries[0], limit: 1 << 20) } == "zip-corrupt")
        #expect(code { _ = try crc.contents(of: crc.entries[0], limit: 4) } == "zip-too-large")

        for name in ["../evil", "Payload/../../etc/passwd", "/etc/passwd", "Payload\\Demo.app\\Demo", "a\0b", "C:/x"] {
            #expect(code { _ = try ZipArchive(bytes: F.zip([(name, [1])])) } == "zip-unsafe-path", "\(name)")
        }
        #expect(code { _ = try ZipArchive(bytes: F.zip([("a", [1]), ("a", [2])])) } == "zip-corrupt")
        #expect(code { _ = try AppInspector.inspect(bytes: F.zip([("Other/Demo.app/Demo", [1])]), path: "X.ipa") } == "zip-no-payload")
        #expect(code { _ = try ZipArchive(bytes: [0x50, 0x4B, 3, 4] + Array(repeating: 0, count: 30)) } == "zip-truncated")
        #expect(code { _ = try ZipArchive(bytes: Array("PK not really a zip".utf8) + Array(repeating: 0, count: 30)) } == "zip-corrupt")
    }

    /// An archive given by path is read by range (its tail, its central directory, then each entry
    /// in pieces of 64 KiB), not whole: the same answers as from memory, for stored and deflated
    /// entries that span several pieces, and for damaged archives (the same code and message).
    @Test func anArchiveOnDiskIsReadByRangeAsFromMemory() throws {
        let dir = try F.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        var random = Seeded(state: 7)
        // An Info.plist of about 300 KB that does not compress away, and an executable of 200 KB.
        let filler = String((0..<300_000).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement(using: &random)! })
        let info = F.xmlPlist(["CFBundleExecutable": .string("Demo"), "CFBundleIdentifier": .string("com.example.demo"),
                               "Filler": .string(filler)])
        let signature = F.superBlob(xml: F.xmlPlist(F.entitlements()), der: nil)
        var entries = F.ipaEntries(executable: F.machO(signature: signature, padding: 200_000), profile: try F.profile())
        entries = entries.map { $0.name.hasSuffix("Info.plist") ? ($0.name, info) : $0 }
        let path = dir.appendingPathComponent("Demo.ipa").path
        func describe(_ body: () throws(AppBundleError) -> AppInspection) -> [AnyHashable?] {
            do {
                let it = try body()
                return [it.path, it.kind.rawValue, it.bundle, it.executable, it.bundleIdentifier, it.signature, it.signatureError,
                        it.profile, it.profilePath, it.profileError, it.findings]
            } catch {
                return [error]
            }
        }
        func sameFromFile(_ archive: [UInt8]) throws -> Bool {
            try Data(archive).write(to: URL(fileURLWithPath: path))
            let fromFile = describe { () throws(AppBundleError) in try AppInspector.inspect(path: path) }
            let fromMemory = describe { () throws(AppBundleError) in try AppInspector.inspect(bytes: archive, path: path) }
            #expect(fromFile == fromMemory)
            return fromFile == fromMemory
        }
        for archive in [F.zip(entries), try F.deflatedZip(entries)] {
            #expect(archive.count > 200_000)
            try Data(archive).write(to: URL(fileURLWithPath: path))
            let inspection = try AppInspector.inspect(path: path)
            #expect(inspection.kind == .ipa)
            #expect(inspection.signature?.associatedDomains?.count == 3)
            #expect(inspection.bundleIdentifier == "com.example.demo")
            #expect(try sameFromFile(archive))
            // Cut around every 64 KiB of the archive and in its end record; damaged in places.
            var cuts = Array(stride(from: 0, to: archive.count, by: 65_536)).flatMap { [$0 - 1, $0, $0 + 1] }
            cuts += [archive.count - 1, archive.count - 22, archive.count - 23, 3, 21, 29, 31]
            for cut in cuts where cut >= 0 && cut < archive.count {
                guard try sameFromFile(Array(archive.prefix(cut))) else { return }
            }
            for _ in 0..<150 {
                guard try sameFromFile(Self.mutate(archive, using: &random)) else { return }
            }
        }
    }

    /// DEFLATE input given in pieces (an entry read from a file) inflates as given whole, for any
    /// piece size, and input that stops early is `truncated` wherever it stops.
    @Test func inflateTakesItsInputInPieces() throws {
        var random = Seeded(state: 11)
        let text = (0..<200_000).map { _ in UInt8.random(in: 97...104, using: &random) }
        let archive = try F.deflatedZip([("t", text)])
        // The one entry's data: after its local header (30 bytes, the name, the extra field), for
        // its compressed size.
        func field16(_ at: Int) -> Int { Int(archive[at]) | Int(archive[at + 1]) << 8 }
        let start = 30 + field16(26) + field16(28)
        let data = Array(archive[start..<(start + field16(18) | field16(20) << 16)])
        func inflate(_ input: [UInt8], piece: Int) throws(Inflate.Failure) -> [UInt8] {
            var output: [UInt8] = []
            var start = 0
            try Inflate.raw(limit: 1 << 20, input: {
                guard start < input.count else { return nil }
                defer { start += piece }
                return input[start..<min(input.count, start + piece)]
            }, consume: { output.append(contentsOf: $0); return true })
            return output
        }
        #expect(try Inflate.raw(data[...], limit: 1 << 20) { _ in true })
        for piece in [1, 7, 4096, 65_536, data.count] {
            #expect(try inflate(data, piece: piece) == text, "pieces of \(piece)")
        }
        for cut in [0, 1, data.count / 3, data.count - 1] {
            #expect(throws: Inflate.Failure.truncated) { try inflate(Array(data.prefix(cut)), piece: 1000) }
        }
        #expect(throws: Inflate.Failure.tooLarge(limit: 1000)) { try Inflate.raw(data[...], limit: 1000) { _ in true } }
    }

    @Test func capsDeflateBombs() throws {
        let zeros = [UInt8](repeating: 0, count: 4 << 20)
        let archive = try F.deflatedZip([("Payload/Demo.app/Demo", zeros)])
        #expect(archive.count < 100_000)
        let zip = try ZipArchive(bytes: archive)
        #expect(code { _ = try zip.contents(of: zip.entries[0], limit: 1 << 20) } == "zip-too-large")
        // A lie about the uncompressed size: inflation stops at the recorded size.
        var lying = zip.entries[0]
        lying.uncompressedSize = 1000
        #expect(code { _ = try zip.contents(of: lying, limit: 1 << 30) } == "zip-corrupt")
        #expect(try zip.contents(of: zip.entries[0], limit: 8 << 20) == zeros)
    }

    // MARK: - Profiles and comparisons

    @Test func readsAndRefusesProfiles() throws {
        let profile = try ProvisioningProfile.parse(try F.profile())
        #expect(profile.name == "Demo Distribution")
        #expect(profile.applicationIdentifierPrefixes == [F.team])
        #expect(profile.applicationIdentifier == F.appID)
        #expect(profile.expirationDate != nil)
        #expect(code { _ = try ProvisioningProfile.parse(F.xmlPlist(F.entitlements())) } == "profile-not-cms")
        #expect(code { _ = try ProvisioningProfile.parse([0x30, 0x80, 0x30, 0x80]) } == "profile-not-cms")
        #expect(code { _ = try ProvisioningProfile.parse(try F.cmsSign(Array("not a plist".utf8))) } == "profile-malformed")
        #expect(code { _ = try ProvisioningProfile.parse(try F.cmsSign(F.xmlPlist(["Name": .string("x")]))) } == "profile-malformed")
        let standalone = try AppInspector.inspect(bytes: try F.profile(), path: "x.mobileprovision")
        #expect(standalone.kind == .profile)
        #expect(standalone.appID == F.appID)
        #expect(code { _ = try AppInspector.inspect(bytes: Array("garbage".utf8), path: "x.mobileprovision") } == "profile-not-cms")
    }

    @Test func comparesBinaryWithProfile() throws {
        var explicit = F.portalEntitlements(appID: "ZZZZZ99999.com.example.other")
        explicit["com.apple.developer.associated-domains"] = .array([.string("applinks:example.com"), .string("applinks:extra.example.com")])
        explicit["com.apple.developer.team-identifier"] = .string("ZZZZZ99999")
        let profile = try F.profile(entitlements: explicit, expiration: Date(timeIntervalSince1970: 1_600_000_000))
        let inspection = try AppInspector.inspect(bytes: F.zip(F.ipaEntries(executable: F.signedExecutable(), profile: profile)), path: "D.ipa")
        let codes = inspection.findings.map(\.code)
        #expect(codes.filter { $0 == "profile-missing-domain" }.count == 2) // *.example.com and webcredentials
        #expect(codes.contains("profile-extra-domain"))
        #expect(codes.contains("profile-expired"))
        #expect(codes.contains("app-id-mismatch"))
        #expect(!codes.contains("team-id-mismatch")) // TeamIdentifier of the profile is still ABCDE12345

        var wildcardApp = F.portalEntitlements(appID: "\(F.team).*")
        wildcardApp["com.apple.developer.associated-domains"] = nil
        let noDomains = try AppInspector.inspect(bytes: F.zip(F.ipaEntries(executable: F.signedExecutable(), profile: try F.profile(entitlements: wildcardApp))), path: "D.ipa")
        #expect(noDomains.findings.map(\.code) == ["profile-missing-domain"])

        // A profile alone has no signature to compare with: no domain is "not signed".
        var listed = F.portalEntitlements()
        listed["com.apple.developer.associated-domains"] = .array([.string("applinks:example.com")])
        let alone = try AppInspector.inspect(bytes: try F.profile(entitlements: listed), path: "x.mobileprovision")
        #expect(!alone.findings.contains { $0.code.hasPrefix("profile-") && $0.code.hasSuffix("-domain") }, "\(alone.findings)")
    }

    /// A signed domain list with an item that is not a string is `entitlements-wrong-type`, as
    /// in a file (it passed as ok, while fetch --app failed the entry).
    @Test func aSignedDomainListWithANonStringIsTheWrongType() throws {
        var entitlements = F.entitlements()
        entitlements["com.apple.developer.associated-domains"] = .array([.string("applinks:example.com"), .integer(7)])
        let inspection = try AppInspector.inspect(bytes: F.signedExecutable(entitlements), path: "Demo")
        #expect(inspection.findings.map(\.code) == ["entitlements-wrong-type"], "\(inspection.findings)")
    }

    @Test func comparesBinaryWithProject() throws {
        let inspection = try AppInspector.inspect(bytes: F.signedExecutable(), path: "Demo")
        let same = EntitlementsFile(associatedDomains: ["applinks:example.com", "applinks:*.example.com ", "webcredentials:EXAMPLE.com"],
                                    applicationIdentifier: "$(AppIdentifierPrefix)$(CFBundleIdentifier)")
        #expect(EntitlementsComparison.compare(inspection, project: same, projectPath: "Demo.entitlements").isEmpty)

        let different = EntitlementsFile(associatedDomains: ["applinks:example.com", "applinks:www.example.com"],
                                         applicationIdentifier: "ABCDE12345.com.example.other")
        let codes = EntitlementsComparison.compare(inspection, project: different, projectPath: "Demo.entitlements").map(\.code)
        #expect(codes == ["compare-missing-in-binary", "compare-missing-in-project", "compare-missing-in-project", "app-id-mismatch"])

        let variable = EntitlementsFile(associatedDomains: ["applinks:$(APP_DOMAIN)", "applinks:*.example.com", "webcredentials:example.com"],
                                        applicationIdentifier: "$(UNKNOWN).x")
        let resolved = EntitlementsComparison.compare(inspection, project: variable, projectPath: "P", definitions: ["APP_DOMAIN": "example.com"])
        #expect(resolved.map(\.code) == ["app-id-unresolved"])
    }

    // MARK: - Fuzz

    /// SplitMix64, so a failure is reproducible from its seed.
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var value = state
            value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
            value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
            return value ^ (value >> 31)
        }
    }

    static func mutate(_ input: [UInt8], using random: inout Seeded) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            guard !bytes.isEmpty else { break }
            let position = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<6, using: &random) {
            case 0: bytes[position] = UInt8.random(in: 0...255, using: &random)
            case 1: bytes[position] ^= 1 << UInt8.random(in: 0...7, using: &random)
            case 2: // an interesting 32-bit value, either byte order
                let values: [UInt32] = [0, 1, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFF8, 0xFFFF_FFFF]
                let value = values[Int.random(in: 0..<values.count, using: &random)]
                let word = Bool.random(using: &random) ? F.be32(value) : F.le32(value)
                for (index, byte) in word.enumerated() where position + index < bytes.count { bytes[position + index] = byte }
            case 3: bytes = Array(bytes.prefix(position))
            case 4: bytes.insert(contentsOf: bytes[position..<min(bytes.count, position + 16)], at: position)
            default: bytes.removeSubrange(position..<min(bytes.count, position + Int.random(in: 1...32, using: &random)))
            }
        }
        return bytes
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func mutatedInputsNeverCrash(seed: UInt64) throws {
        var random = Seeded(state: seed)
        let signature = F.superBlob(xml: F.xmlPlist(F.entitlements()), der: F.derEntitlements(F.entitlements()))
        let thin = F.machO(signature: signature)
        let fat = F.universal([(.arm64, thin), (.x86_64, F.machO(signature: signature, cpu: .x86_64))], wide: seed == 2)
        let archive = F.zip(F.ipaEntries(executable: thin, profile: nil))
        let der = F.derEntitlements(F.entitlements())
        var outcomes = 0
        for _ in 0..<1500 {
            if (try? CodeSignature.parse(Self.mutate(signature, using: &random))) != nil { outcomes += 1 }
            if (try? DEREntitlements.decode(Self.mutate(der, using: &random))) != nil { outcomes += 1 }
            if (try? AppInspector.inspect(bytes: Self.mutate(thin, using: &random), path: "m")) != nil { outcomes += 1 }
            if (try? AppInspector.inspect(bytes: Self.mutate(fat, using: &random), path: "m")) != nil { outcomes += 1 }
            if (try? AppInspector.inspect(bytes: Self.mutate(archive, using: &random), path: "m.ipa")) != nil { outcomes += 1 }
        }
        #expect(outcomes > 0)
    }
}

extension AppFixtures {
    /// A big-endian 32-bit value of a byte array.
    static func be32ToInt(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }
}
