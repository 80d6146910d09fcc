import Foundation

/// Times in JSON and messages: ISO 8601 in UTC, whole seconds.
public enum Timestamp {
    /// `2026-01-02T03:04:05Z`, in the proleptic Gregorian calendar (ISO 8601's; Foundation's
    /// calendar turns Julian before 1582-10-15, so `1500-01-01` came out as `1499-12-23`).
    /// Times outside the years 0001 to 9999, which have no such form, are written as the nearest
    /// end of that range; a time that is not a number as 1970-01-01T00:00:00Z.
    public static func string(_ date: Date) -> String {
        let raw = date.timeIntervalSince1970
        let seconds = raw.isNaN ? 0 : Int64(min(max(raw, earliest), latest - 1).rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let time = seconds - days * 86_400
        // Days since 1970-01-01 to a civil date (H. Hinnant's algorithm, public domain).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shifted = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shifted + 2) / 5 + 1
        let month = shifted < 10 ? shifted + 3 : shifted - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(time / 3_600, 2)):\(pad(time / 60 % 60, 2)):\(pad(time % 60, 2))Z"
    }

    /// 0001-01-01T00:00:00Z.
    private static let earliest: TimeInterval = -62_135_596_800

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
