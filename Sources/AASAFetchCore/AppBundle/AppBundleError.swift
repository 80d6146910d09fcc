/// Why an app, archive, binary, signature or provisioning profile could not be read, with a stable code.
///
/// Codes: `app-unreadable`, `app-not-found`, `app-too-large`, `app-no-executable`, `zip-truncated`,
/// `zip-corrupt`, `zip-unsafe-path`, `zip-unsupported`, `zip-too-large`, `zip-no-payload`,
/// `macho-not-macho`, `macho-truncated`, `macho-malformed`, `macho-no-signature`,
/// `signature-malformed`, `signature-no-entitlements`, `entitlements-malformed`,
/// `profile-not-cms`, `profile-malformed`, `plist-too-complex` (an `Info.plist`, XML entitlements
/// or profile over ``PropertyListReader/Limits``).
public struct AppBundleError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stable code.
    public var code: String
    /// What went wrong, for people.
    public var message: String

    /// Creates an error.
    public init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

/// A bounds-checked window over a byte array: every read names an offset relative to the window
/// and returns `nil` instead of reading outside it. Offsets and counts are checked for overflow.
struct ByteView: Sendable {
    let bytes: [UInt8]
    /// Where the window starts in `bytes`.
    let base: Int
    /// How many bytes the window holds.
    let count: Int

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        base = 0
        count = bytes.count
    }

    private init(bytes: [UInt8], base: Int, count: Int) {
        self.bytes = bytes
        self.base = base
        self.count = count
    }

    /// Whether `offset..<offset+length` lies inside the window (no overflow possible).
    func contains(offset: Int, length: Int) -> Bool {
        offset >= 0 && length >= 0 && offset <= count && length <= count - offset
    }

    /// A sub-window, or `nil` when it does not fit.
    func view(offset: Int, length: Int) -> ByteView? {
        guard contains(offset: offset, length: length) else { return nil }
        return ByteView(bytes: bytes, base: base + offset, count: length)
    }

    /// The bytes `offset..<offset+length`, or `nil` when they do not fit.
    func slice(offset: Int, length: Int) -> ArraySlice<UInt8>? {
        guard contains(offset: offset, length: length) else { return nil }
        return bytes[(base + offset)..<(base + offset + length)]
    }

    /// The window's bytes as an array.
    var array: [UInt8] { Array(bytes[base..<(base + count)]) }

    func uint8(at offset: Int) -> UInt8? {
        guard contains(offset: offset, length: 1) else { return nil }
        return bytes[base + offset]
    }

    private func unsigned(at offset: Int, width: Int, bigEndian: Bool) -> UInt64? {
        guard contains(offset: offset, length: width) else { return nil }
        var value: UInt64 = 0
        for position in 0..<width {
            let byte = UInt64(bytes[base + offset + (bigEndian ? position : width - 1 - position)])
            value = value << 8 | byte
        }
        return value
    }

    func uint16LE(at offset: Int) -> UInt16? { unsigned(at: offset, width: 2, bigEndian: false).map { UInt16($0) } }
    func uint32LE(at offset: Int) -> UInt32? { unsigned(at: offset, width: 4, bigEndian: false).map { UInt32($0) } }
    func uint64LE(at offset: Int) -> UInt64? { unsigned(at: offset, width: 8, bigEndian: false) }
    func uint32BE(at offset: Int) -> UInt32? { unsigned(at: offset, width: 4, bigEndian: true).map { UInt32($0) } }
    func uint64BE(at offset: Int) -> UInt64? { unsigned(at: offset, width: 8, bigEndian: true) }

    func uint32(at offset: Int, bigEndian: Bool) -> UInt32? {
        bigEndian ? uint32BE(at: offset) : uint32LE(at: offset)
    }
}

extension Int {
    /// A `UInt64` as an `Int` when it fits, else `nil`.
    init?(checked value: UInt64) {
        guard value <= UInt64(Int.max) else { return nil }
        self = Int(value)
    }
}
