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
