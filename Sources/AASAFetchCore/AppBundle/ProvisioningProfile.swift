import Foundation

/// What an `embedded.mobileprovision` (iOS) or `embedded.provisionprofile` (macOS) says: a CMS
/// `SignedData` whose content is a property list. The CMS signature is not verified; the content
/// is what the device compares the app's entitlements with.
public struct ProvisioningProfile: Sendable, Hashable {
    /// `Name`.
    public var name: String?
    /// `UUID`.
    public var uuid: String?
    /// `TeamIdentifier`.
    public var teamIdentifiers: [String]
    /// `TeamName`.
    public var teamName: String?
    /// `ApplicationIdentifierPrefix`.
    public var applicationIdentifierPrefixes: [String]
    /// `ExpirationDate`.
    public var expirationDate: Date?
    /// `Entitlements`: what an app signed with this profile may claim.
    public var entitlements: [String: PlistValue]

    /// The associated domains the profile allows.
    public enum AllowedDomains: Sendable, Hashable {
        /// `*` (a string, or an array holding only `*`): any domain the signature lists.
        case any
        /// An explicit list.
        case list([String])
    }

    /// `application-identifier` or `com.apple.application-identifier` of the entitlements (may end in `*`).
    public var applicationIdentifier: String? {
        entitlements["application-identifier"]?.stringValue ?? entitlements["com.apple.application-identifier"]?.stringValue
    }

    /// `com.apple.developer.team-identifier` of the entitlements.
    public var entitlementsTeamIdentifier: String? {
        entitlements["com.apple.developer.team-identifier"]?.stringValue
    }

    /// The associated domains allowed, or `nil` when the profile has no such entitlement.
    public var associatedDomains: AllowedDomains? {
        switch entitlements[EntitlementsFile.associatedDomainsKey] {
        case .string(let value):
            return value.trimmingCharacters(in: .whitespaces) == "*" ? .any : .list([value])
        case .array(let values):
            let strings = values.compactMap(\.stringValue)
            return strings == ["*"] ? .any : .list(strings)
        default:
            return nil
        }
    }

    /// Whether the profile expired before `date`.
    public func isExpired(at date: Date) -> Bool {
        expirationDate.map { $0 < date } ?? false
    }

    /// Creates a profile value.
    public init(
        name: String? = nil, uuid: String? = nil, teamIdentifiers: [String] = [], teamName: String? = nil,
        applicationIdentifierPrefixes: [String] = [], expirationDate: Date? = nil, entitlements: [String: PlistValue] = [:]
    ) {
        self.name = name
        self.uuid = uuid
        self.teamIdentifiers = teamIdentifiers
        self.teamName = teamName
        self.applicationIdentifierPrefixes = applicationIdentifierPrefixes
        self.expirationDate = expirationDate
        self.entitlements = entitlements
    }

    /// Parses a profile's bytes.
    /// - Throws: ``AppBundleError`` `profile-not-cms` or `profile-malformed`.
    public static func parse(_ bytes: [UInt8]) throws(AppBundleError) -> ProvisioningProfile {
        guard let content = CMSUnwrapper.content(of: bytes) else {
            throw AppBundleError("profile-not-cms", "the provisioning profile is not a CMS SignedData message with content")
        }
        let dictionary = try PlistValue.parseDictionary(content, code: "profile-malformed", what: "the profile's content")
        var entitlements: [String: PlistValue] = [:]
        switch dictionary["Entitlements"] {
        case .dictionary(let value): entitlements = value
        case nil: throw AppBundleError("profile-malformed", "the profile has no Entitlements dictionary")
        default: throw AppBundleError("profile-malformed", "the profile's Entitlements is not a dictionary")
        }
        func strings(_ key: String) -> [String] {
            dictionary[key]?.stringArray?.compactMap { $0 } ?? []
        }
        var expiration: Date?
        if case .date(let date) = dictionary["ExpirationDate"] { expiration = date }
        return ProvisioningProfile(
            name: dictionary["Name"]?.stringValue,
            uuid: dictionary["UUID"]?.stringValue,
            teamIdentifiers: strings("TeamIdentifier"),
            teamName: dictionary["TeamName"]?.stringValue,
            applicationIdentifierPrefixes: strings("ApplicationIdentifierPrefix"),
            expirationDate: expiration,
            entitlements: entitlements
        )
    }
}
