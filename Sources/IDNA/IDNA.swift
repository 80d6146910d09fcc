internal import CIDN2

/// Internationalised domain names (IDNA2008 with the UTS #46 mapping), through libidn2.
///
/// This is the only module that sees libidn2's C types.
public enum IDNA {
    /// Why a name could not be converted.
    public struct ConversionError: Error, Sendable, Hashable, CustomStringConvertible {
        /// libidn2's error name, e.g. `IDN2_DISALLOWED`, or `INVALID_ALABEL` for a bad `xn--` label.
        public var reason: String
        /// libidn2's message.
        public var message: String

        public var description: String { "\(reason): \(message)" }
    }

    /// Converts a host name to its ASCII (Punycode) form with UTS #46 non-transitional processing:
    /// upper case is folded, full-width dots become dots, `ß` stays `ß` (→ `xn--…`).
    ///
    /// - Returns: the lower-case ASCII host.
    /// - Throws: ``ConversionError`` when the name holds disallowed code points or a bad `xn--` label.
    public static func toASCII(_ host: String) throws(ConversionError) -> String {
        if let plain = plainASCII(host) { return plain }
        do {
            return try toASCIIThroughLibidn2(host)
        } catch where error.reason == "IDN2_2HYPHEN" {
            // A plain label with hyphens in its third and fourth place beside a Unicode one
            // (`r3---sn-abc.bücher.example`): libidn2 refuses the whole name for the plain label.
            if let converted = try labelByLabel(host) { return converted }
            throw error
        }
    }

    /// The name converted label by label: plain labels as ``plainASCII(_:)`` takes them, the
    /// others through libidn2; `nil` when no label is a plain one with hyphens in its third and
    /// fourth place (libidn2's refusal stands).
    static func labelByLabel(_ host: String) throws(ConversionError) -> String? {
        // UTS #46 separates labels by the full stop and the ideographic and full-width ones.
        let labels = host.split(omittingEmptySubsequences: false) { ["\u{2E}", "\u{3002}", "\u{FF0E}", "\u{FF61}"].contains($0) }
            .map(String.init)
        guard !labels.contains(where: \.isEmpty), labels.contains(where: { label in
            plainASCII(label) != nil && label.utf8.count >= 4 && Array(label.utf8)[2...3] == [45, 45]
        }) else { return nil }
        var converted: [String] = []
        for label in labels {
            if let plain = plainASCII(label) {
                converted.append(plain)
            } else {
                converted.append(try toASCIIThroughLibidn2(label))
            }
        }
        let ascii = converted.joined(separator: ".")
        guard ascii.utf8.count <= 253 else {
            throw ConversionError(reason: "IDN2_TOO_BIG_DOMAIN", message: "the name is longer than 253 bytes")
        }
        return ascii
    }

    /// The lower-cased host when it is plain ASCII that IDNA leaves as it is: letters, digits and
    /// hyphens in labels of 1 to 63 bytes that neither start nor end with a hyphen, with no `xn--`
    /// label, at most 253 bytes; `nil` for anything else. Nearly every name of a crawl is such a
    /// name, and libidn2 costs about 5 µs each (`IDNATests` check that it gives the same answer
    /// for them).
    ///
    /// A label with hyphens in its third and fourth place that is not an `xn--` label
    /// (`r3---sn-abc.googlevideo.com`, `ab--cd.example`) is taken as it is: it is a valid host name
    /// (RFC 1123), in DNS and on devices, which look names up with UTS #46's `CheckHyphens` off
    /// (as browsers do); libidn2's IDNA2008 check would refuse it.
    static func plainASCII(_ host: String) -> String? {
        let utf8 = host.utf8
        guard utf8.count <= 253 else { return nil }
        var hasUpper = false
        var labelLength = 0
        var previous: UInt8 = UInt8(ascii: ".")
        var hyphenAtThird = false
        var startsWithXN = false
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
                if byte <= UInt8(ascii: "Z") && byte >= UInt8(ascii: "A") { hasUpper = true }
                labelLength += 1
                let lower = byte | 0x20
                if labelLength == 1 { startsWithXN = lower == UInt8(ascii: "x") }
                if labelLength == 2 { startsWithXN = startsWithXN && lower == UInt8(ascii: "n") }
            case UInt8(ascii: "-"):
                guard previous != UInt8(ascii: ".") else { return nil }
                labelLength += 1
                if labelLength == 2 { startsWithXN = false }
                if labelLength == 3 { hyphenAtThird = true }
                // An `xn--` label is Punycode: libidn2 checks that it decodes.
                if labelLength == 4 && hyphenAtThird && startsWithXN { return nil }
            case UInt8(ascii: "."):
                guard labelLength > 0, previous != UInt8(ascii: "-") else { return nil }
                labelLength = 0
                hyphenAtThird = false
                startsWithXN = false
            default:
                return nil
            }
            guard labelLength <= 63 else { return nil }
            previous = byte
        }
        guard labelLength > 0, previous != UInt8(ascii: "-") else { return nil }
        return hasUpper ? host.lowercased() : host
    }

    /// ``toASCII(_:)`` through libidn2 for every name.
    static func toASCIIThroughLibidn2(_ host: String) throws(ConversionError) -> String {
        guard !host.utf8.contains(0) else {
            throw ConversionError(reason: "IDN2_NUL", message: "the name contains a NUL character")
        }
        var output: UnsafeMutablePointer<CChar>?
        let flags = Int32(IDN2_NONTRANSITIONAL.rawValue | IDN2_NFC_INPUT.rawValue)
        let rc = idn2_to_ascii_8z(host, &output, flags)
        guard rc == Int32(IDN2_OK.rawValue), let output else {
            throw error(rc)
        }
        defer { idn2_free(output) }
        let ascii = String(cString: output).lowercased()
        try validateALabels(ascii)
        return ascii
    }

    /// Converts an ASCII host with `xn--` labels to its Unicode form for display.
    ///
    /// - Throws: ``ConversionError`` when an `xn--` label does not decode.
    public static func toUnicode(_ host: String) throws(ConversionError) -> String {
        guard !host.utf8.contains(0) else {
            throw ConversionError(reason: "IDN2_NUL", message: "the name contains a NUL character")
        }
        try validateALabels(host.lowercased())
        var output: UnsafeMutablePointer<CChar>?
        let rc = idn2_to_unicode_8z8z(host, &output, 0)
        guard rc == Int32(IDN2_OK.rawValue), let output else {
            throw error(rc)
        }
        defer { idn2_free(output) }
        return String(cString: output)
    }

    /// Checks that every `xn--` label decodes to a valid U-label that encodes back to the same A-label.
    private static func validateALabels(_ ascii: String) throws(ConversionError) {
        for label in ascii.split(separator: ".", omittingEmptySubsequences: false)
        where label.hasPrefix("xn--") {
            var unicode: UnsafeMutablePointer<CChar>?
            let rc = idn2_to_unicode_8z8z(String(label), &unicode, 0)
            guard rc == Int32(IDN2_OK.rawValue), let unicode else {
                throw ConversionError(reason: "INVALID_ALABEL", message: "'\(label)' is not valid Punycode")
            }
            let decoded = String(cString: unicode)
            idn2_free(unicode)
            var back: UnsafeMutablePointer<CChar>?
            let rc2 = idn2_to_ascii_8z(decoded, &back, Int32(IDN2_NONTRANSITIONAL.rawValue))
            guard rc2 == Int32(IDN2_OK.rawValue), let back else {
                throw ConversionError(
                    reason: "INVALID_ALABEL",
                    message: "'\(label)' decodes to '\(decoded)', which is not a valid IDNA2008 label"
                )
            }
            let roundTrip = String(cString: back)
            idn2_free(back)
            guard roundTrip == label else {
                throw ConversionError(
                    reason: "INVALID_ALABEL",
                    message: "'\(label)' decodes to '\(decoded)', whose A-label is '\(roundTrip)'"
                )
            }
        }
    }

    private static func error(_ rc: Int32) -> ConversionError {
        let name = idn2_strerror_name(rc).map { String(cString: $0) } ?? "IDN2_ERROR"
        let message = idn2_strerror(rc).map { String(cString: $0) } ?? "conversion failed"
        return ConversionError(reason: name, message: message)
    }
}
