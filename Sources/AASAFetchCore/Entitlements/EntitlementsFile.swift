import Foundation

/// Why an entitlements file could not be read at all (each with a stable code).
public struct EntitlementsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stable code: `entitlements-unreadable`, `entitlements-malformed`, `entitlements-not-a-dictionary`,
    /// `entitlements-missing-key` or `entitlements-wrong-type`.
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

    /// Creates an entitlements value.
    public init(associatedDomains: [String?], applicationIdentifier: String? = nil, teamIdentifier: String? = nil) {
        self.associatedDomains = associatedDomains
        self.applicationIdentifier = applicationIdentifier
        self.teamIdentifier = teamIdentifier
    }

    /// Reads an entitlements file (XML or binary plist) from disk.
    public static func read(path: String) throws(EntitlementsError) -> EntitlementsFile {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw EntitlementsError(code: "entitlements-unreadable", message: "cannot read \(path): \(error.localizedDescription)")
        }
        return try parse(data)
    }

    /// Parses entitlements from XML or binary property list bytes.
    public static func parse(_ data: Data) throws(EntitlementsError) -> EntitlementsFile {
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
            throw EntitlementsError(code: "entitlements-malformed", message: "not a valid property list: \(detail)")
        }
        guard let dictionary = object as? [String: Any] else {
            throw EntitlementsError(code: "entitlements-not-a-dictionary", message: "the property list's top level is not a dictionary")
        }
        guard let rawDomains = dictionary[associatedDomainsKey] else {
            throw EntitlementsError(
                code: "entitlements-missing-key",
                message: "no \(associatedDomainsKey) key: the app has no associated domains (a release build signed without them?)"
            )
        }
        guard let array = rawDomains as? [Any] else {
            throw EntitlementsError(code: "entitlements-wrong-type", message: "\(associatedDomainsKey) is not an array of strings")
        }
        return EntitlementsFile(
            associatedDomains: array.map { $0 as? String },
            applicationIdentifier: (dictionary["application-identifier"] as? String)
                ?? (dictionary["com.apple.application-identifier"] as? String),
            teamIdentifier: dictionary["com.apple.developer.team-identifier"] as? String
        )
    }

    /// Reads the entitlements this tool needs from a decoded dictionary (an app's code signature or
    /// a provisioning profile), with the same codes as ``parse(_:)``.
    public static func from(_ dictionary: [String: PlistValue]) throws(EntitlementsError) -> EntitlementsFile {
        guard let rawDomains = dictionary[associatedDomainsKey] else {
            throw EntitlementsError(
                code: "entitlements-missing-key",
                message: "no \(associatedDomainsKey) key: the app has no associated domains (a release build signed without them?)"
            )
        }
        guard let strings = rawDomains.stringArray else {
            throw EntitlementsError(code: "entitlements-wrong-type",
                                    message: "\(associatedDomainsKey) is \(rawDomains), not an array of strings")
        }
        return EntitlementsFile(
            associatedDomains: strings,
            applicationIdentifier: dictionary["application-identifier"]?.stringValue
                ?? dictionary["com.apple.application-identifier"]?.stringValue,
            teamIdentifier: dictionary["com.apple.developer.team-identifier"]?.stringValue
        )
    }
}
