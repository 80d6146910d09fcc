/// Orders hosts the way Apple's downloader prioritises them: tier 0 `.com`, `.net`,
/// `.org`; tier 1 the ccTLDs and internationalised ccTLDs of the user's region; tier 2 the rest.
/// Inside a tier the entitlement order is kept. Priority orders downloads; it never drops one.
public struct DomainPrioritizer: Sendable, Hashable {
    /// The ISO 3166-1 region whose ccTLDs get tier 1, upper case; `nil` when unknown.
    public let region: String?
    private let regionTLDs: Set<String>

    /// Creates a prioritizer for a region (`"CN"`, `"gb"`, `"UK"`); `nil` gives no region tier.
    public init(region: String?) {
        var code = region?.uppercased()
        if code == "UK" { code = "GB" }
        self.region = code
        self.regionTLDs = Set(code.flatMap { RegionTLDs.byRegion[$0] } ?? [])
    }

    /// The generic top-level domains that always come first.
    public static let topTierTLDs: Set<String> = ["com", "net", "org"]

    /// The tier of an ASCII host: 0, 1 or 2.
    public func tier(of host: String) -> Int {
        let tld = Self.topLevelLabel(of: host)
        if Self.topTierTLDs.contains(tld) { return 0 }
        if regionTLDs.contains(tld) { return 1 }
        return 2
    }

    /// The last label of `host` (trailing dots ignored), lower-cased: what
    /// `host.split(separator: ".").last?.lowercased()` gives, found by bytes in an ASCII name.
    static func topLevelLabel(of host: String) -> String {
        // By characters otherwise: a dot followed by a combining mark is another character.
        guard EntryText.isASCII(host) else { return host.split(separator: ".").last.map { String($0).lowercased() } ?? "" }
        let utf8 = host.utf8
        var end = utf8.endIndex
        while end > utf8.startIndex, utf8[utf8.index(before: end)] == UInt8(ascii: ".") { end = utf8.index(before: end) }
        let start = utf8[..<end].lastIndex(of: UInt8(ascii: ".")).map { utf8.index(after: $0) } ?? utf8.startIndex
        let label = utf8[start..<end]
        guard label.contains(where: { (0x41...0x5A).contains($0) }) else { return String(host[start..<end]) }
        return String(decoding: label.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// The ccTLDs that form tier 1 for this region.
    public var tierOneTLDs: [String] { region.flatMap { RegionTLDs.byRegion[$0] } ?? [] }

    /// Whether a region code is known to the table.
    public static func isKnownRegion(_ code: String) -> Bool {
        let upper = code.uppercased()
        return RegionTLDs.byRegion[upper == "UK" ? "GB" : upper] != nil
    }

    /// The region from POSIX locale variables, in glibc's order of precedence for messages:
    /// `LC_ALL`, then `LC_MESSAGES`, then `LANG` (`zh_CN.UTF-8` → `CN`, `en_GB@euro` → `GB`).
    /// `C`, `POSIX` and values without a region give `nil`. Foundation's `Locale.current` is not
    /// used: on Linux it ignores these variables.
    public static func region(fromEnvironment environment: [String: String]) -> String? {
        for name in ["LC_ALL", "LC_MESSAGES", "LANG"] {
            guard let value = environment[name], !value.isEmpty else { continue }
            // The first non-empty variable decides, even when it names no region.
            return region(fromLocale: value)
        }
        return nil
    }

    /// The region of one POSIX locale name (`language[_TERRITORY][.codeset][@modifier]`).
    public static func region(fromLocale locale: String) -> String? {
        var name = Substring(locale)
        if let at = name.firstIndex(of: "@") { name = name[..<at] }
        if let dot = name.firstIndex(of: ".") { name = name[..<dot] }
        let parts = name.split(whereSeparator: { $0 == "_" || $0 == "-" })
        guard parts.count >= 2, let territory = parts.last, territory.count == 2,
              territory.allSatisfy({ $0.isASCII && $0.isLetter }) else { return nil }
        return territory.uppercased()
    }
}
