import Foundation

/// Times in JSON and messages: ISO 8601 in UTC, whole seconds.
public enum Timestamp {
    /// `2026-01-02T03:04:05Z`.
    public static func string(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC") ?? .current))
    }

    /// Parses `2026-01-02T03:04:05Z` (or with an offset) or seconds since 1970; `nil` outside
    /// the years 1970 to 9999 (`inf`, `nan` or `1e300` seconds made a clock on which a refreshed
    /// host was due again at once, and `refresh` fetched it without end).
    public static func parse(_ text: String) -> Date? {
        let date: Date?
        if let seconds = Double(text) {
            date = seconds.isFinite ? Date(timeIntervalSince1970: seconds) : nil
        } else {
            date = try? Date.ISO8601FormatStyle().parse(text)
        }
        guard let date, date.timeIntervalSince1970 >= 0, date.timeIntervalSince1970 < latest else { return nil }
        return date
    }

    /// 10000-01-01T00:00:00Z.
    private static let latest: TimeInterval = 253_402_300_800
}
