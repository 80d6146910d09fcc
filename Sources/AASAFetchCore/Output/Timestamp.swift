import Foundation

/// Times in JSON and messages: ISO 8601 in UTC, whole seconds.
public enum Timestamp {
    /// `2026-01-02T03:04:05Z`.
    public static func string(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC") ?? .current))
    }

    /// Parses `2026-01-02T03:04:05Z` (or with an offset) or seconds since 1970.
    public static func parse(_ text: String) -> Date? {
        if let seconds = Double(text) { return Date(timeIntervalSince1970: seconds) }
        return try? Date.ISO8601FormatStyle().parse(text)
    }
}
