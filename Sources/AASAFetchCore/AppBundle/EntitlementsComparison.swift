import Foundation

/// Compares what the signed binary, its provisioning profile and the project's `.entitlements`
/// file say about associated domains, the app ID and the team, as findings with stable codes:
///
/// - signature: `signature-missing-domains`, `signature-wildcard-domains`, `entitlements-wrong-type`,
///   `entitlements-empty`;
/// - binary vs profile: `profile-missing-domain`, `profile-extra-domain`, `profile-wildcard-domains`,
///   `profile-expired`, `app-id-mismatch`, `team-id-mismatch`;
/// - binary vs project (`--compare`): `compare-missing-in-binary`, `compare-missing-in-project`,
///   `app-id-mismatch`, `app-id-unresolved`.
public enum EntitlementsComparison {
    private static let key = EntitlementsFile.associatedDomainsKey

    /// Problems of the signed associated-domains entitlement on its own (of a plain
    /// `.entitlements` file: the key missing, of the wrong type or empty).
    static func signatureFindings(_ signature: SignedEntitlements?) -> [Finding] {
        guard let signature else { return [] }
        if signature.source == .plist {
            switch signature.entitlements[key] {
            case nil:
                return [.error("entitlements-missing-key", "no \(key) key: the app has no associated domains",
                               fix: "add the Associated Domains capability (an array of service:domain strings)")]
            case .array(let values) where values.isEmpty:
                return [.warning("entitlements-empty", "the \(key) list is empty")]
            case .array(let values) where values.allSatisfy({ $0.stringValue != nil }):
                return []
            case .some(let other):
                return [.error("entitlements-wrong-type", "\(key) is \(wrongType(other)), not an array of strings")]
            }
        }
        switch signature.entitlements[key] {
        case nil:
            return [.error("signature-missing-domains",
                           "the app is signed without \(key): no domain can associate (a release build signed without it?)",
                           fix: "add the Associated Domains capability to the configuration that builds this app and sign again")]
        case .string(let value) where value.trimmingCharacters(in: .whitespaces) == "*":
            return [.error("signature-wildcard-domains",
                           "the app is signed with \(key) = '*' (copied from the provisioning profile) instead of its list of domains; no domain associates",
                           fix: "sign with the project's .entitlements file, not the profile's entitlements")]
        case .array(let values):
            if values.isEmpty {
                return [.warning("entitlements-empty", "the app is signed with an empty \(key) list")]
            }
            if values.contains(.string("*")) {
                return [.error("signature-wildcard-domains",
                               "the signed \(key) holds '*', which names no domain",
                               fix: "sign with the project's .entitlements file, not the profile's entitlements")]
            }
            // As in a file: an item that is not a string is no entry (fetch fails it).
            if values.contains(where: { $0.stringValue == nil }) {
                return [.error("entitlements-wrong-type", "the signed \(key) is \(wrongType(.array(values))), not an array of strings")]
            }
            return []
        case .some(let other):
            return [.error("entitlements-wrong-type", "the signed \(key) is \(wrongType(other)), not an array of strings")]
        }
    }

    /// What a value of the wrong type is, for a message: its type, and for an array the first
    /// element that is not a string (the value itself can be a 100,000-element list).
    static func wrongType(_ value: PlistValue) -> String {
        if case .array(let values) = value, let index = values.firstIndex(where: { $0.stringValue == nil }) {
            return "an array whose item \(index + 1) of \(values.count) is \(article(values[index]))"
        }
        return article(value)
    }

    private static func article(_ value: PlistValue) -> String {
        switch value.typeName {
        case "array", "integer": "an \(value.typeName)"
        case "data": "data"
        default: "a \(value.typeName)"
        }
    }

    /// How the signed entitlements agree with the embedded profile.
    static func profileFindings(signature: SignedEntitlements?, profile: ProvisioningProfile?, now: Date) -> [Finding] {
        guard let profile else { return [] }
        var findings: [Finding] = []
        if profile.isExpired(at: now), let expiry = profile.expirationDate {
            findings.append(.warning("profile-expired", "the provisioning profile '\(profile.name ?? "?")' expired on \(ISO8601DateFormatter().string(from: expiry))",
                                     fix: "download a current profile and sign again"))
        }
        let signedDomains = signature?.associatedDomains?.compactMap { $0 } ?? []
        switch profile.associatedDomains {
        case nil:
            if !signedDomains.isEmpty {
                findings.append(.error("profile-missing-domain",
                                       "the provisioning profile does not allow \(key) at all, but the app is signed with \(signedDomains.count) domain\(signedDomains.count == 1 ? "" : "s"); the device refuses the entitlement",
                                       location: "profile",
                                       fix: "enable Associated Domains for the App ID and download the profile again"))
            }
        case .any:
            findings.append(.info("profile-wildcard-domains",
                                  "the provisioning profile allows any associated domain ('*'): the list that counts is the signed one; a signing step that copies the profile's entitlements would ship '*'",
                                  location: "profile"))
        case .list(let allowed):
            // Without a signature (a profile given alone, a signature that could not be read)
            // there is nothing to compare: every allowed domain was reported as not signed.
            guard signature != nil else { break }
            let parser = EntryParser()
            let allowedKeys = allowed.map { normalizedKey($0, parser: parser) }
            for domain in signedDomains where !allowedKeys.contains(where: { glob($0, matches: normalizedKey(domain, parser: parser)) }) {
                findings.append(.error("profile-missing-domain",
                                       "the app is signed with '\(domain)' but the provisioning profile allows only \(allowed.map { "'\($0)'" }.joined(separator: ", "))",
                                       location: "profile",
                                       fix: "add the domain to the App ID's associated domains and download the profile again"))
            }
            let signedKeys = Set(signedDomains.map { normalizedKey($0, parser: parser) })
            for (domain, allowedKey) in zip(allowed, allowedKeys) where !allowedKey.contains("*") && !signedKeys.contains(allowedKey) {
                findings.append(.warning("profile-extra-domain", "the provisioning profile allows '\(domain)' but the app is not signed with it",
                                         location: "profile"))
            }
        }
        if let signed = signature?.applicationIdentifier, let allowed = profile.applicationIdentifier, !glob(allowed, matches: signed) {
            findings.append(.error("app-id-mismatch", "the app is signed as '\(signed)' but the provisioning profile is for '\(allowed)'",
                                   location: "profile", fix: "sign with a profile for \(signed)"))
        }
        if let team = signature?.teamIdentifier, !profile.teamIdentifiers.isEmpty, !profile.teamIdentifiers.contains(team) {
            findings.append(.error("team-id-mismatch",
                                   "the app is signed for team \(team) but the provisioning profile belongs to \(profile.teamIdentifiers.joined(separator: ", "))",
                                   location: "profile"))
        }
        return findings
    }

    /// Xcode variables an app defines: `AppIdentifierPrefix`, `TeamIdentifierPrefix`,
    /// `CFBundleIdentifier`, `PRODUCT_BUNDLE_IDENTIFIER` (from its app ID, team and `Info.plist`).
    public static func definitions(for inspection: AppInspection) -> [String: String] {
        var table: [String: String] = [:]
        // (An unexpanded `$(…)` or `${…}` app ID of a plain .entitlements file defines nothing.)
        if let appID = inspection.appID, !appID.contains("$("), !appID.contains("${"), let dot = appID.firstIndex(of: ".") {
            table["AppIdentifierPrefix"] = String(appID[...dot])
            let bundleID = String(appID[appID.index(after: dot)...])
            table["CFBundleIdentifier"] = bundleID
            table["PRODUCT_BUNDLE_IDENTIFIER"] = bundleID
        }
        if let bundleID = inspection.bundleIdentifier {
            table["CFBundleIdentifier"] = bundleID
            table["PRODUCT_BUNDLE_IDENTIFIER"] = bundleID
        }
        if let team = inspection.teamID { table["TeamIdentifierPrefix"] = team + "." }
        return table
    }

    /// Compares the app with the project's entitlements file.
    /// - Parameters:
    ///   - inspection: What the app ships.
    ///   - project: The `.entitlements` file the project builds with.
    ///   - projectPath: Its path, for messages.
    ///   - definitions: Values for Xcode variables (merged over ``definitions(for:)``).
    /// - Returns: One finding per difference.
    public static func compare(_ inspection: AppInspection, project: EntitlementsFile, projectPath: String,
                               definitions: [String: String] = [:]) -> [Finding] {
        let table = self.definitions(for: inspection).merging(definitions) { _, given in given }
        let parser = EntryParser(definitions: table)
        var findings: [Finding] = []
        // A plain .entitlements file is compared as it is written, its variables expanded too.
        let plain = inspection.kind == .entitlements
        let subject = plain ? inspection.path : "the signed app"
        let subjectAppID = plain ? inspection.appID.flatMap { AppID.expand($0, definitions: table) } : inspection.appID
        let projectDomains = project.associatedDomains.compactMap { $0 }
        let projectKeys = projectDomains.map { normalizedKey($0, parser: parser) }
        if let signed = inspection.signature?.associatedDomains?.compactMap({ $0 }) {
            let signedKeys = signed.map { normalizedKey($0, parser: parser) }
            for (domain, key) in zip(projectDomains, projectKeys) where !signedKeys.contains(key) {
                findings.append(.error("compare-missing-in-binary",
                                       "'\(domain)' is in \(projectPath) but \(plain ? "\(subject) does not list it" : "the signed app does not carry it")",
                                       location: projectPath,
                                       fix: plain ? "add it to \(subject), or remove it from \(projectPath)"
                                           : "build and sign the app with \(projectPath) (check the configuration's CODE_SIGN_ENTITLEMENTS)"))
            }
            for (domain, key) in zip(signed, signedKeys) where !projectKeys.contains(key) {
                findings.append(.warning("compare-missing-in-project",
                                         "\(plain ? "\(subject) lists" : "the signed app carries") '\(domain)', which \(projectPath) does not list",
                                         location: projectPath,
                                         fix: plain ? "add it to \(projectPath), or remove it from \(subject)"
                                             : "compare with the .entitlements file of the configuration that built this app"))
            }
        } else if inspection.signature == nil, let profile = inspection.profile, case .list(let allowed)? = profile.associatedDomains {
            // A profile alone: compare what it allows.
            let allowedKeys = allowed.map { normalizedKey($0, parser: parser) }
            for (domain, key) in zip(projectDomains, projectKeys) where !allowedKeys.contains(where: { glob($0, matches: key) }) {
                findings.append(.error("profile-missing-domain", "'\(domain)' is in \(projectPath) but the provisioning profile does not allow it",
                                       location: "profile"))
            }
        }
        if let identifier = project.applicationIdentifier {
            if let expanded = AppID.expand(identifier, definitions: table) {
                if let appID = subjectAppID, appID != expanded {
                    findings.append(.error("app-id-mismatch", "\(projectPath) names the app '\(expanded)' but \(plain ? "\(subject) names" : "the app is signed as") '\(appID)'",
                                           location: projectPath))
                }
            } else {
                findings.append(.info("app-id-unresolved", "\(projectPath)'s application-identifier '\(identifier)' holds Xcode variables the app does not define",
                                      location: projectPath, fix: "pass --define NAME=VALUE"))
            }
        }
        return findings
    }

    /// An entry's normalized form for comparison (the raw string, trimmed, when it does not parse).
    static func normalizedKey(_ raw: String, parser: EntryParser) -> String {
        if raw.contains("*") && !raw.contains("*.") { return raw.trimmingCharacters(in: .whitespaces) }
        return parser.parse(raw, index: 0).normalized ?? raw.trimmingCharacters(in: .whitespaces)
    }

    /// Whether an allowed value matches: `*` matches anything, a trailing `*` a prefix, otherwise equality.
    static func glob(_ pattern: String, matches value: String) -> Bool {
        if pattern.hasSuffix("*") { return value.hasPrefix(pattern.dropLast()) }
        return pattern == value
    }
}
