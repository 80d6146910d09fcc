import Foundation

/// The entitlements a signed executable carries, from its code signature.
public struct SignedEntitlements: Sendable, Hashable {
    /// Which entitlements blob a value came from.
    public enum Source: String, Sendable, Codable, Hashable {
        /// The XML plist blob (`0xfade7171`).
        case xml
        /// The DER blob (`0xfade7172`).
        case der
        /// A plain property list file (a project's `.entitlements`), not a signature.
        case plist
    }

    /// The blob the entitlements were taken from (XML when both are present and readable).
    public var source: Source
    /// The entitlements blobs the signature holds.
    public var blobs: [Source]
    /// The architectures whose signature was read (each universal slice).
    public var architectures: [String]
    /// The whole entitlements dictionary.
    public var entitlements: [String: PlistValue]

    /// `application-identifier` (iOS) or `com.apple.application-identifier` (macOS).
    public var applicationIdentifier: String? {
        entitlements["application-identifier"]?.stringValue ?? entitlements["com.apple.application-identifier"]?.stringValue
    }

    /// `com.apple.developer.team-identifier`.
    public var teamIdentifier: String? { entitlements["com.apple.developer.team-identifier"]?.stringValue }

    /// The strings of `com.apple.developer.associated-domains` (a lone string as one element);
    /// `nil` when the key is absent.
    public var associatedDomains: [String?]? {
        switch entitlements[EntitlementsFile.associatedDomainsKey] {
        case nil: nil
        case .string(let value): [value]
        case .array(let values): values.map(\.stringValue)
        default: [nil]
        }
    }
}

/// Everything read from an `.ipa`, an `.app` bundle, a bare Mach-O or a provisioning profile.
public struct AppInspection: Sendable {
    /// What kind of input was read.
    public enum Kind: String, Sendable, Codable {
        /// A zip archive with `Payload/NAME.app/`.
        case ipa
        /// An `.app` bundle folder (iOS flat or macOS `Contents/` layout).
        case app
        /// A bare Mach-O executable, thin or universal.
        case macho
        /// A provisioning profile on its own.
        case profile
        /// A plain `.entitlements` property list (XML or binary), such as a project's; its
        /// dictionary is the inspection's ``AppInspection/signature`` with source `plist`.
        case entitlements
    }

    /// The path given.
    public var path: String
    /// What kind of input it is.
    public var kind: Kind
    /// The bundle read (`Payload/Demo.app` in an archive, or the folder).
    public var bundle: String?
    /// The main executable read (inside the archive or bundle).
    public var executable: String?
    /// `CFBundleIdentifier` of the bundle's `Info.plist`.
    public var bundleIdentifier: String?
    /// The signed entitlements, when the executable's signature could be read (for a plain
    /// `.entitlements` file, its dictionary, with source ``SignedEntitlements/Source/plist``).
    public var signature: SignedEntitlements?
    /// Why the signed entitlements could not be read (`nil` when they were, or for a profile alone).
    public var signatureError: AppBundleError?
    /// The provisioning profile, when one was found and read.
    public var profile: ProvisioningProfile?
    /// Where the profile was found.
    public var profilePath: String?
    /// Why a profile that is present could not be read.
    public var profileError: AppBundleError?
    /// Problems and notes about the signature, the profile and how they agree.
    public var findings: [Finding]

    /// The app ID: the signature's `application-identifier`, else the profile's when it names one app.
    public var appID: String? {
        if let identifier = signature?.applicationIdentifier { return identifier }
        if let identifier = profile?.applicationIdentifier, !identifier.contains("*") { return identifier }
        return nil
    }

    /// The team ID: the signature's `com.apple.developer.team-identifier`, else the profile's `TeamIdentifier`.
    public var teamID: String? {
        signature?.teamIdentifier ?? profile?.teamIdentifiers.first ?? profile?.entitlementsTeamIdentifier
    }

    /// The signed entitlements as an ``EntitlementsFile`` (what `--app` feeds to the rest of the tool).
    /// - Throws: the signature's error, or `entitlements-missing-key` / `entitlements-wrong-type`.
    public func entitlementsFile() throws(AppBundleError) -> EntitlementsFile {
        guard let signature else {
            throw signatureError ?? AppBundleError("macho-no-signature", "\(path) holds a provisioning profile but no signed executable")
        }
        do {
            return try EntitlementsFile.from(signature.entitlements)
        } catch {
            throw AppBundleError(error.code, "the signed entitlements of \(executable ?? path): \(error.message)")
        }
    }
}

/// Reads what an app really ships: the entitlements of its signed main executable and its
/// embedded provisioning profile.
public enum AppInspector {
    /// Caps on what is read into memory.
    public struct Limits: Sendable {
        /// The largest `.ipa` or bare executable read.
        public var fileBytes: Int
        /// The largest executable expanded from an archive.
        public var executableBytes: Int
        /// The largest `Info.plist` or profile.
        public var smallFileBytes: Int

        /// 2 GiB files, 1 GiB executables, 4 MiB plists and profiles.
        public static let standard = Limits(fileBytes: 2 << 30, executableBytes: 1 << 30, smallFileBytes: 4 << 20)

        /// Creates limits.
        public init(fileBytes: Int, executableBytes: Int, smallFileBytes: Int) {
            self.fileBytes = fileBytes
            self.executableBytes = executableBytes
            self.smallFileBytes = smallFileBytes
        }
    }

    /// Reads an `.ipa`, an `.app` folder, a Mach-O, a provisioning profile or a plain `.entitlements` plist.
    /// - Parameters:
    ///   - path: The input.
    ///   - limits: Size caps.
    ///   - now: The time a profile's expiry is judged against.
    /// - Throws: ``AppBundleError`` when nothing usable (neither signature nor profile) can be read.
    public static func inspect(path: String, limits: Limits = .standard, now: Date = Date()) throws(AppBundleError) -> AppInspection {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw AppBundleError("app-unreadable", "\(path) does not exist")
        }
        if isDirectory.boolValue {
            return try inspectBundleFolder(path, limits: limits, now: now)
        }
        var status = stat()
        if stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFCHR || (status.st_mode & S_IFMT) == S_IFBLK {
            throw AppBundleError("app-unreadable", "\(path) is a device, not an app, an archive, an executable or a profile")
        }
        if (status.st_mode & S_IFMT) == S_IFREG, let (file, kind) = try openByRange(path, limit: limits.fileBytes) {
            if kind == .ipa {
                // The central directory, then the entries read, not the whole archive.
                return try inspectArchive(try ZipArchive(source: file), path: path, limits: limits, now: now)
            }
            // Only the ranges the signature needs are read, not the whole executable.
            var inspection = AppInspection(path: path, kind: .macho, executable: path, findings: [])
            inspection.signature = try readSignature(file, name: path, findings: &inspection.findings)
            finish(&inspection, now: now)
            return inspection
        }
        let bytes = try readFile(path, limit: limits.fileBytes)
        return try inspect(bytes: bytes, path: path, limits: limits, now: now)
    }

    /// Reads an `.ipa`, a Mach-O or a profile held in memory (`path` names it in messages).
    public static func inspect(bytes: [UInt8], path: String, limits: Limits = .standard, now: Date = Date()) throws(AppBundleError) -> AppInspection {
        if bytes.starts(with: [0x50, 0x4B]) {
            return try inspectArchive(try ZipArchive(bytes: bytes), path: path, limits: limits, now: now)
        }
        if MachOFile.hasMagic(bytes) {
            var inspection = AppInspection(path: path, kind: .macho, executable: path, findings: [])
            inspection.signature = try readSignature(InMemoryBytes(bytes: bytes), name: path, findings: &inspection.findings)
            finish(&inspection, now: now)
            return inspection
        }
        let lowered = path.lowercased()
        if lowered.hasSuffix(".mobileprovision") || lowered.hasSuffix(".provisionprofile") || bytes.starts(with: [0x30, 0x80])
            || (bytes.first == 0x30 && (0x81...0x84).contains(bytes.dropFirst().first ?? 0)) {
            var inspection = AppInspection(path: path, kind: .profile, findings: [])
            inspection.profile = try ProvisioningProfile.parse(bytes)
            inspection.profilePath = path
            finish(&inspection, now: now)
            return inspection
        }
        if PlistValue.looksLikePropertyList(bytes) {
            let dictionary = try PlistValue.parseDictionary(bytes, code: "entitlements-malformed", what: path,
                                                            tooComplexCode: "entitlements-too-complex",
                                                            notDictionaryCode: "entitlements-not-a-dictionary")
            var inspection = AppInspection(path: path, kind: .entitlements, findings: [])
            inspection.signature = SignedEntitlements(source: .plist, blobs: [], architectures: [], entitlements: dictionary)
            finish(&inspection, now: now)
            return inspection
        }
        throw AppBundleError("macho-not-macho", "\(path) is not an .ipa, an .app bundle, a Mach-O executable, a provisioning profile or an .entitlements property list")
    }

    // MARK: - Inputs

    private static func readFile(_ path: String, limit: Int) throws(AppBundleError) -> [UInt8] {
        do {
            return try BoundedFile.read(path: path, limit: limit)
        } catch {
            throw appError(error, path: path)
        }
    }

    /// A regular file given on its own that starts as a Mach-O or a zip archive does, opened to be
    /// read by range; `nil` for anything else (read whole, then told apart by its bytes).
    private static func openByRange(_ path: String, limit: Int) throws(AppBundleError) -> (FileBytes, AppInspection.Kind)? {
        guard let file = try? openRegularFile(path), file.count >= 4, let magic = try? file.read([0..<4])?.first else { return nil }
        let kind: AppInspection.Kind
        if MachOFile.hasMagic(magic) {
            kind = .macho
        } else if magic.starts(with: [0x50, 0x4B]) {
            kind = .ipa
        } else {
            return nil
        }
        guard file.count <= limit else { throw appError(.tooLarge(size: file.count, limit: limit), path: path) }
        return (file, kind)
    }

    /// Opens a file inside an `.app` folder: only a regular file of at most `limit` bytes.
    private static func openBundleFile(_ path: String, limit: Int) throws(AppBundleError) -> FileBytes {
        let file = try openRegularFile(path)
        guard file.count <= limit else { throw appError(.tooLarge(size: file.count, limit: limit), path: path) }
        return file
    }

    /// Opens a regular file to be read by range. A device (a link to `/dev/zero`) or a pipe
    /// (opened without waiting for a writer) is `app-unreadable`.
    private static func openRegularFile(_ path: String) throws(AppBundleError) -> FileBytes {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw AppBundleError("app-unreadable", "cannot read \(path): \(SystemReason.text(errno: errno))") }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            throw AppBundleError("app-unreadable", "\(path) is not a regular file (a device, a pipe or a folder); an app holds files")
        }
        return FileBytes(descriptor: descriptor, count: Int(status.st_size), path: path)
    }

    /// Reads a whole file inside an `.app` folder (see ``openBundleFile(_:limit:)``).
    private static func readBundleFile(_ path: String, limit: Int) throws(AppBundleError) -> [UInt8] {
        let file = try openBundleFile(path, limit: limit)
        return try file.read([0..<file.count])?.first ?? []
    }

    private static func appError(_ error: BoundedFileError, path: String) -> AppBundleError {
        switch error {
        case .tooLarge(let size?, let limit): AppBundleError("app-too-large", "\(path) is \(size) bytes, more than the \(limit)-byte cap")
        case .tooLarge(nil, let limit): AppBundleError("app-too-large", "\(path) holds more than the \(limit)-byte cap")
        case .unreadable(let reason): AppBundleError("app-unreadable", "cannot read \(path): \(reason)")
        }
    }

    /// The executable name and bundle ID an `Info.plist` gives.
    private static func infoPlist(_ bytes: [UInt8], name: String) -> (executable: String?, bundleID: String?, finding: Finding?) {
        do {
            let dictionary = try PlistValue.parseDictionary(bytes, code: "info-plist-malformed", what: name)
            return (dictionary["CFBundleExecutable"]?.stringValue, dictionary["CFBundleIdentifier"]?.stringValue, nil)
        } catch {
            return (nil, nil, .warning(error.code, error.message))
        }
    }

    /// Whether a name from `Info.plist` is a plain file name (it is joined to a path).
    private static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && !name.contains("/") && name != "." && name != ".." && !name.contains("\0")
    }

    private static func inspectArchive(_ archive: ZipArchive, path: String, limits: Limits, now: Date) throws(AppBundleError) -> AppInspection {
        // A set: an archive may name up to a million entries, each in another app folder.
        var apps: Set<String> = []
        for entry in archive.entries {
            let parts = entry.name.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count >= 2, parts[0] == "Payload", parts[1].hasSuffix(".app"), parts[1].count > 4 else { continue }
            apps.insert("Payload/\(parts[1])")
        }
        guard let bundle = apps.min() else {
            throw AppBundleError("zip-no-payload", "\(path) holds no Payload/NAME.app/ folder: not an .ipa")
        }
        var inspection = AppInspection(path: path, kind: .ipa, bundle: bundle, findings: [])
        if apps.count > 1 {
            inspection.findings.append(.info("ipa-several-apps", "the archive holds \(apps.count) apps under Payload/; \(bundle) was read"))
        }
        let appName = String(bundle.dropFirst("Payload/".count).dropLast(4))
        var executableName = appName
        if let info = archive.entry(named: "\(bundle)/Info.plist") {
            do throws(AppBundleError) {
                let plist = infoPlist(try archive.contents(of: info, limit: limits.smallFileBytes), name: "\(bundle)/Info.plist")
                if let name = plist.executable, isPlainName(name) { executableName = name }
                inspection.bundleIdentifier = plist.bundleID
                if let finding = plist.finding { inspection.findings.append(finding) }
            } catch {
                // As in a folder: the signature may still be read, under the assumed name.
                inspection.findings.append(.warning("info-plist-malformed", "\(error.message); the executable is assumed to be \(appName)"))
            }
        } else {
            inspection.findings.append(.warning("info-plist-missing", "\(bundle) has no Info.plist; the executable is assumed to be \(appName)"))
        }
        let executablePath = "\(bundle)/\(executableName)"
        inspection.executable = executablePath
        if let entry = archive.entry(named: executablePath) {
            do {
                let slices = try ZipEntryReader.slices(of: entry, in: archive, limit: limits.executableBytes)
                inspection.signature = try readSignature(slices, name: executablePath, findings: &inspection.findings)
            } catch {
                inspection.signatureError = error
            }
        } else {
            inspection.signatureError = AppBundleError("app-no-executable", "\(path) has no main executable \(executablePath)")
        }
        let profilePath = "\(bundle)/embedded.mobileprovision"
        if let entry = archive.entry(named: profilePath) {
            inspection.profilePath = profilePath
            do {
                inspection.profile = try ProvisioningProfile.parse(try archive.contents(of: entry, limit: limits.smallFileBytes))
            } catch {
                inspection.profileError = error
            }
        }
        try settle(&inspection, now: now)
        return inspection
    }

    private static func inspectBundleFolder(_ path: String, limits: Limits, now: Date) throws(AppBundleError) -> AppInspection {
        let root = URL(fileURLWithPath: path)
        let manager = FileManager.default
        let macOS = manager.fileExists(atPath: root.appendingPathComponent("Contents/Info.plist").path)
            || manager.fileExists(atPath: root.appendingPathComponent("Contents/MacOS").path)
        let contents = macOS ? root.appendingPathComponent("Contents") : root
        var inspection = AppInspection(path: path, kind: .app, bundle: path, findings: [])
        let appName = root.deletingPathExtension().lastPathComponent
        var executableName = appName
        let infoURL = contents.appendingPathComponent("Info.plist")
        if manager.fileExists(atPath: infoURL.path) {
            do {
                let plist = infoPlist(try readBundleFile(infoURL.path, limit: limits.smallFileBytes), name: infoURL.path)
                if let name = plist.executable, isPlainName(name) { executableName = name }
                inspection.bundleIdentifier = plist.bundleID
                if let finding = plist.finding { inspection.findings.append(finding) }
            } catch {
                // The signature may still be read: the name of the executable is then assumed.
                inspection.findings.append(.warning("info-plist-malformed", "\(error.message); the executable is assumed to be \(appName)"))
            }
        } else {
            inspection.findings.append(.warning("info-plist-missing", "\(path) has no Info.plist; the executable is assumed to be \(appName)"))
        }
        let executableURL = macOS ? contents.appendingPathComponent("MacOS/\(executableName)") : contents.appendingPathComponent(executableName)
        inspection.executable = executableURL.path
        if manager.fileExists(atPath: executableURL.path) {
            do {
                let executable = try openBundleFile(executableURL.path, limit: limits.executableBytes)
                inspection.signature = try readSignature(executable, name: executableURL.path, findings: &inspection.findings)
            } catch {
                inspection.signatureError = error
            }
        } else {
            inspection.signatureError = AppBundleError("app-no-executable", "\(path) has no main executable \(executableURL.path)")
        }
        let profileURL = contents.appendingPathComponent(macOS ? "embedded.provisionprofile" : "embedded.mobileprovision")
        if manager.fileExists(atPath: profileURL.path) {
            inspection.profilePath = profileURL.path
            do {
                inspection.profile = try ProvisioningProfile.parse(try readBundleFile(profileURL.path, limit: limits.smallFileBytes))
            } catch {
                inspection.profileError = error
            }
        }
        try settle(&inspection, now: now)
        return inspection
    }

    /// Fails when neither the signature nor the profile could be read; otherwise turns a failed
    /// half into an error finding.
    private static func settle(_ inspection: inout AppInspection, now: Date) throws(AppBundleError) {
        if inspection.signature == nil, inspection.profile == nil {
            if let error = inspection.signatureError { throw error }
            if let error = inspection.profileError { throw error }
        }
        if let error = inspection.signatureError {
            inspection.findings.append(.error(error.code, error.message))
        }
        if let error = inspection.profileError {
            inspection.findings.append(.error(error.code, "\(inspection.profilePath ?? "the profile"): \(error.message)"))
        } else if inspection.profilePath == nil {
            inspection.findings.append(.info("profile-absent",
                                             "the bundle holds no embedded provisioning profile (normal for an App Store download); only the signature was read"))
        }
        finish(&inspection, now: now)
    }

    /// Adds the checks that need the signature and the profile together.
    private static func finish(_ inspection: inout AppInspection, now: Date) {
        inspection.findings += EntitlementsComparison.signatureFindings(inspection.signature)
        inspection.findings += EntitlementsComparison.profileFindings(signature: inspection.signature, profile: inspection.profile, now: now)
    }

    // MARK: - Signature

    /// Reads the slices of an executable, then their entitlements (below).
    static func readSignature(_ executable: some RangedBytes, name: String, findings: inout [Finding]) throws(AppBundleError) -> SignedEntitlements {
        try readSignature(try MachOFile.slices(of: executable), name: name, findings: &findings)
    }

    /// Reads the entitlements of every signed slice and reports how they disagree.
    static func readSignature(_ slices: [MachOFile.Slice], name: String, findings: inout [Finding]) throws(AppBundleError) -> SignedEntitlements {
        let signed = slices.filter { $0.signature != nil }
        guard !signed.isEmpty else {
            throw AppBundleError("macho-no-signature", "\(name) has no code signature (no LC_CODE_SIGNATURE): it is unsigned")
        }
        for slice in slices where slice.signature == nil {
            findings.append(.error("macho-slice-unsigned", "the \(slice.architecture) slice of \(name) is not signed"))
        }
        var results: [(architecture: String, entitlements: SignedEntitlements?)] = []
        var firstError: AppBundleError?
        for slice in signed {
            do {
                let entitlements = try readEntitlements(slice.signature ?? [], architecture: slice.architecture, findings: &findings)
                results.append((slice.architecture, entitlements))
            } catch {
                firstError = firstError ?? error
                if signed.count > 1 { findings.append(.error(error.code, "\(slice.architecture): \(error.message)")) }
            }
        }
        guard var primary = results.first?.entitlements else {
            throw firstError ?? AppBundleError("signature-no-entitlements", "\(name) is signed without entitlements")
        }
        primary.architectures = results.map(\.architecture)
        for other in results.dropFirst() where other.entitlements?.entitlements != primary.entitlements {
            findings.append(.error(
                "signature-slices-differ",
                "the \(other.architecture) slice is signed with different entitlements than the \(results[0].architecture) slice",
                fix: "sign every architecture with the same entitlements"
            ))
        }
        return primary
    }

    /// The largest entitlements blob decoded (XML or DER). Real ones are a few KiB; decoding
    /// costs up to about 30 times the blob's size, so a blob as large as the executable (a small
    /// `.ipa` can expand to one) would take gigabytes before any value limit could apply.
    public static let maxEntitlementsBlobBytes = 1 << 20

    private static func readEntitlements(_ bytes: [UInt8], architecture: String, findings: inout [Finding]) throws(AppBundleError) -> SignedEntitlements {
        let signature = try CodeSignature.parse(bytes)
        var blobs: [SignedEntitlements.Source] = []
        var xml: [String: PlistValue]?
        var der: [String: PlistValue]?
        var xmlError: AppBundleError?
        var derError: AppBundleError?
        func tooLarge(_ blob: [UInt8], _ what: String) -> AppBundleError? {
            blob.count > maxEntitlementsBlobBytes
                ? AppBundleError("plist-too-complex", "\(what) is \(blob.count) bytes, over the \(maxEntitlementsBlobBytes) read")
                : nil
        }
        if let bytes = signature.xmlEntitlements {
            blobs.append(.xml)
            do throws(AppBundleError) {
                if let error = tooLarge(bytes, "the XML entitlements blob") { throw error }
                xml = try PlistValue.parseDictionary(bytes, code: "signature-malformed", what: "the XML entitlements blob")
            } catch {
                xmlError = error
            }
        }
        if let bytes = signature.derEntitlements {
            blobs.append(.der)
            do throws(AppBundleError) {
                if let error = tooLarge(bytes, "the DER entitlements blob") { throw error }
                der = try DEREntitlements.decode(bytes)
            } catch {
                derError = error
            }
        }
        guard !blobs.isEmpty else {
            throw AppBundleError("signature-no-entitlements", "\(architecture): the code signature holds no entitlements blob")
        }
        if let xml {
            if let derError {
                findings.append(.error(derError.code, "\(architecture): \(derError.message)"))
            } else if let der, der != xml {
                let keys = Set(xml.keys).symmetricDifference(der.keys).union(xml.keys.filter { der[$0] != nil && der[$0] != xml[$0] })
                findings.append(.error(
                    "signature-der-mismatch",
                    "\(architecture): the XML and DER entitlements differ (\(keys.sorted().joined(separator: ", "))); devices on iOS 15 and later read the DER one",
                    fix: "re-sign the app with codesign so both blobs come from the same entitlements"
                ))
            }
            return SignedEntitlements(source: .xml, blobs: blobs, architectures: [architecture], entitlements: xml)
        }
        if let der {
            if let xmlError { findings.append(.error(xmlError.code, "\(architecture): \(xmlError.message)")) }
            return SignedEntitlements(source: .der, blobs: blobs, architectures: [architecture], entitlements: der)
        }
        throw xmlError ?? derError ?? AppBundleError("signature-malformed", "\(architecture): unreadable entitlements")
    }
}
