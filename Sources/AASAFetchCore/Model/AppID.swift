import Foundation

/// Helpers for application identifiers (`PREFIX.bundle.id`).
public enum AppID {
    /// Whether a string has the shape of an app ID: 10 upper-case letters or digits, a dot, and a
    /// bundle ID of letters, digits, hyphens and dots.
    public static func isWellFormed(_ appID: String) -> Bool {
        let parts = appID.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 10,
              parts[0].unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) || ("0"..."9").contains($0) }),
              !parts[1].isEmpty, !parts[1].hasPrefix("."), !parts[1].hasSuffix(".") else { return false }
        return parts[1].unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "."
        }
    }

    /// Whether an app ID holds a control character (U+0000–U+001F, U+007F): never an app ID, and
    /// a NUL would cut it short in a store.
    public static func hasControlCharacter(_ appID: String) -> Bool {
        appID.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }

    /// Expands `$(NAME)` and `${NAME}` variables in an `application-identifier`; `nil` when one
    /// is undefined. `$(AppIdentifierPrefix)` and `$(TeamIdentifierPrefix)` end with a dot, as
    /// Xcode defines them.
    public static func expand(_ identifier: String, definitions: [String: String]) -> String? {
        try? XcodeVariables.expand(identifier, definitions: definitions).get()
    }
}
