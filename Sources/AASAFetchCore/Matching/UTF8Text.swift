/// Byte-level helpers shared by the URL splitter and the pattern engine.
///
/// Every string the matcher compares is UTF-8 bytes: the URL parts as written (ASCII after
/// percent-encoding), or percent-decoded for `percentEncoded: false` (valid UTF-8, else the
/// encoded bytes are kept). Case-insensitive comparison folds both sides the same way.
enum UTF8Text {
    /// Whether `byte` is an ASCII hexadecimal digit.
    @inline(__always)
    static func isHex(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }

    /// The value of an ASCII hexadecimal digit.
    @inline(__always)
    static func hexValue(_ byte: UInt8) -> UInt8 {
        if byte <= 0x39 { return byte &- 0x30 }
        if byte <= 0x46 { return byte &- 0x41 &+ 10 }
        return byte &- 0x61 &+ 10
    }

    /// Whether the bytes hold a `%` escape (so decoding could change them).
    static func containsPercent(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.contains(0x25)
    }

    /// Percent-decodes `bytes` the way `removingPercentEncoding` does, except that an invalid
    /// escape is kept as written. Returns `nil` when the result is not valid UTF-8 (the caller
    /// then keeps the encoded text).
    static func percentDecoded(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x25, index + 2 < bytes.count, isHex(bytes[index + 1]), isHex(bytes[index + 2]) {
                out.append(hexValue(bytes[index + 1]) << 4 | hexValue(bytes[index + 2]))
                index += 3
            } else {
                out.append(byte)
                index += 1
            }
        }
        return isValidUTF8(out) ? out : nil
    }

    /// Whether `bytes` is well-formed UTF-8.
    static func isValidUTF8(_ bytes: [UInt8]) -> Bool {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    /// Whether every byte is ASCII.
    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in bytes where byte >= 0x80 { return false }
        return true
    }

    /// The simple (one-to-one) lower-case mapping of a scalar; scalars whose lower case is
    /// several scalars are kept, so that `?` still counts one character on both sides.
    static func folded(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
        if scalar.isASCII {
            let value = scalar.value
            if value >= 0x41 && value <= 0x5A, let lower = Unicode.Scalar(value + 0x20) { return lower }
            return scalar
        }
        let mapping = scalar.properties.lowercaseMapping.unicodeScalars
        if mapping.count == 1, let only = mapping.first { return only }
        return scalar
    }

    /// Case-folds UTF-8 bytes with ``folded(_:)``.
    static func caseFolded(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        if isASCII(bytes) {
            return bytes.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        }
        var out = [UInt8]()
        out.reserveCapacity(bytes.count)
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        loop: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                out.append(contentsOf: UTF8.encode(folded(scalar)))
            case .emptyInput:
                break loop
            case .error:
                out.append(0xEF)
                out.append(0xBF)
                out.append(0xBD)
            }
        }
        return out
    }

    /// Case-folds a string with ``folded(_:)``.
    static func caseFolded(_ string: String) -> String {
        var result = String.UnicodeScalarView()
        for scalar in string.unicodeScalars { result.append(folded(scalar)) }
        return String(result)
    }
}

extension UTF8 {
    /// The UTF-8 bytes of one scalar.
    static func encode(_ scalar: Unicode.Scalar) -> [UInt8] {
        var bytes = [UInt8]()
        UTF8.encode(scalar) { bytes.append($0) }
        return bytes
    }
}
