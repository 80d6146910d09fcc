import Foundation

/// Why an entitlements file could not be read at all (each with a stable code).
public struct EntitlementsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stable code: `entitlements-unreadable`, `entitlements-too-large`, `entitlements-malformed`,
    /// `entitlements-too-complex`, `entitlements-not-a-dictionary`, `entitlements-missing-key` or
    /// `entitlements-wrong-type`.
    public var code: String
    /// What went wrong, for people.
    public var message: String

    /// Creates an error.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

/// The parts of an app's entitlements this tool reads, from an XML or binary property list.
public struct EntitlementsFile: Sendable, Hashable {
    /// The entitlement key that lists associated domains.
    public static let associatedDomainsKey = "com.apple.developer.associated-domains"

    /// The raw strings of `com.apple.developer.associated-domains`, in file order.
    /// A non-string element is kept as `nil` so that positions stay right.
    public var associatedDomains: [String?]
    /// `application-identifier` (iOS) or `com.apple.application-identifier` (macOS), as written.
    public var applicationIdentifier: String?
    /// `com.apple.developer.team-identifier`, as written.
    public var teamIdentifier: String?
    /// The 1-based line where each element of ``associatedDomains`` starts, for an XML property
    /// list read by ``parse(_:)``; `nil` for a binary plist, a code signature or a profile.
    public var associatedDomainLines: [Int]?

    /// Creates an entitlements value.
    public init(associatedDomains: [String?], applicationIdentifier: String? = nil, teamIdentifier: String? = nil) {
        self.associatedDomains = associatedDomains
        self.applicationIdentifier = applicationIdentifier
        self.teamIdentifier = teamIdentifier
    }

    /// The largest entitlements file read (the cap on `Info.plist` files and profiles too).
    public static let maxFileBytes = 4 << 20

    /// Reads an entitlements file (XML or binary plist) from disk, at most ``maxFileBytes``.
    ///
    /// - Parameter requireDomains: whether a file without the associated-domains key is an error
    ///   (`entitlements-missing-key`); without it, the file lists no domain (`entitlements
    ///   --compare`: a per-configuration file that forgot them is the difference to show).
    public static func read(path: String, requireDomains: Bool = true) throws(EntitlementsError) -> EntitlementsFile {
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path: path, limit: maxFileBytes)
        } catch {
            switch error {
            case .tooLarge:
                throw EntitlementsError(code: "entitlements-too-large", message: "\(error.message(path: "the file")); an entitlements file is a few kilobytes")
            case .unreadable:
                // The caller names the path: the message does not repeat it.
                throw EntitlementsError(code: "entitlements-unreadable", message: error.message(path: "the file"))
            }
        }
        return try parse(Data(bytes), requireDomains: requireDomains)
    }

    /// Parses entitlements from XML or binary property list bytes (through ``PropertyListReader``,
    /// so shared objects, cycles and deep nesting are refused: `entitlements-too-complex`).
    public static func parse(_ data: Data, requireDomains: Bool = true) throws(EntitlementsError) -> EntitlementsFile {
        let value: PlistValue
        do {
            value = try PropertyListReader.decode([UInt8](data))
        } catch {
            throw EntitlementsError(code: error.kind == .tooComplex ? "entitlements-too-complex" : "entitlements-malformed", message: error.message)
        }
        guard case .dictionary(let dictionary) = value else {
            throw EntitlementsError(code: "entitlements-not-a-dictionary", message: "the property list's top level is not a dictionary")
        }
        var file = try from(dictionary, requireDomains: requireDomains)
        if let lines = PlistXMLLines.elementLines(ofArrayFor: associatedDomainsKey, in: [UInt8](data)),
           lines.count == file.associatedDomains.count {
            file.associatedDomainLines = lines
        }
        return file
    }

    /// Reads the entitlements this tool needs from a decoded dictionary (an app's code signature or
    /// a provisioning profile), with the same codes as ``parse(_:)``.
    public static func from(_ dictionary: [String: PlistValue], requireDomains: Bool = true) throws(EntitlementsError) -> EntitlementsFile {
        guard let rawDomains = dictionary[associatedDomainsKey] ?? (requireDomains ? nil : .array([])) else {
            throw EntitlementsError(
                code: "entitlements-missing-key",
                message: "no \(associatedDomainsKey) key: the app has no associated domains (a release build signed without them?)"
            )
        }
        guard let strings = rawDomains.stringArray else {
            throw EntitlementsError(code: "entitlements-wrong-type",
                                    message: "\(associatedDomainsKey) is \(article(rawDomains.typeName)), not an array of strings")
        }
        return EntitlementsFile(
            associatedDomains: strings,
            applicationIdentifier: dictionary["application-identifier"]?.stringValue
                ?? dictionary["com.apple.application-identifier"]?.stringValue,
            teamIdentifier: dictionary["com.apple.developer.team-identifier"]?.stringValue
        )
    }
}
