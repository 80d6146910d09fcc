/// The parts of an embedded code signature (a big-endian `SuperBlob`, magic `0xfade0cc0`) this tool
/// reads: the XML entitlements blob (`0xfade7171`) and the DER one (`0xfade7172`).
///
/// Every count, offset and length is checked against the superblob's own length and the bytes
/// available; anything outside gives `signature-malformed`.
public struct CodeSignature: Sendable, Hashable {
    /// The magics of the blobs the superblob indexes, in index order (for reports).
    public var blobMagics: [UInt32]
    /// The XML entitlements plist, when present.
    public var xmlEntitlements: [UInt8]?
    /// Apple's DER-encoded entitlements, when present.
    public var derEntitlements: [UInt8]?

    /// The embedded-signature superblob magic.
    public static let superBlobMagic: UInt32 = 0xFADE_0CC0
    /// The XML entitlements blob magic.
    public static let xmlEntitlementsMagic: UInt32 = 0xFADE_7171
    /// The DER entitlements blob magic.
    public static let derEntitlementsMagic: UInt32 = 0xFADE_7172
    /// The most blobs a superblob may index (real ones hold fewer than ten).
    public static let maxBlobs = 64

    /// Parses an embedded signature.
    /// - Throws: ``AppBundleError`` `signature-malformed`.
    public static func parse(_ bytes: [UInt8]) throws(AppBundleError) -> CodeSignature {
        let all = ByteView(bytes)
        guard let magic = all.uint32BE(at: 0), let length32 = all.uint32BE(at: 4), let count32 = all.uint32BE(at: 8) else {
            throw AppBundleError("signature-malformed", "the code signature is shorter than a superblob header")
        }
        guard magic == superBlobMagic else {
            throw AppBundleError("signature-malformed", "the code signature does not start with the superblob magic 0xfade0cc0 (found 0x\(String(magic, radix: 16)))")
        }
        // The load command's size may be padded past the superblob; the superblob's length rules.
        guard let view = all.view(offset: 0, length: Int(length32)), length32 >= 12 else {
            throw AppBundleError("signature-malformed", "the superblob claims \(length32) bytes but \(bytes.count) are present")
        }
        let count = Int(count32)
        guard count <= maxBlobs, count <= (view.count - 12) / 8 else {
            throw AppBundleError("signature-malformed", "the superblob claims \(count32) blobs in \(length32) bytes")
        }
        let indexEnd = 12 + count * 8
        var signature = CodeSignature(blobMagics: [], xmlEntitlements: nil, derEntitlements: nil)
        for number in 0..<count {
            guard let offset32 = view.uint32BE(at: 12 + number * 8 + 4) else {
                throw AppBundleError("signature-malformed", "blob index \(number) is cut short")
            }
            let offset = Int(offset32)
            guard offset >= indexEnd, let blobMagic = view.uint32BE(at: offset), let blobLength32 = view.uint32BE(at: offset + 4) else {
                throw AppBundleError("signature-malformed", "blob \(number) starts at \(offset32), outside the \(length32)-byte superblob")
            }
            let blobLength = Int(blobLength32)
            guard blobLength >= 8, let blob = view.slice(offset: offset + 8, length: blobLength - 8) else {
                throw AppBundleError("signature-malformed", "blob \(number) (magic 0x\(String(blobMagic, radix: 16))) claims \(blobLength32) bytes at offset \(offset32), past the superblob's end")
            }
            signature.blobMagics.append(blobMagic)
            switch blobMagic {
            case xmlEntitlementsMagic:
                guard signature.xmlEntitlements == nil else {
                    throw AppBundleError("signature-malformed", "the superblob holds two XML entitlements blobs")
                }
                signature.xmlEntitlements = Array(blob)
            case derEntitlementsMagic:
                guard signature.derEntitlements == nil else {
                    throw AppBundleError("signature-malformed", "the superblob holds two DER entitlements blobs")
                }
                signature.derEntitlements = Array(blob)
            default:
                break
            }
        }
        return signature
    }
}
