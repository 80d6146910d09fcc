/// A bounds-checked reader of Mach-O executables: thin (32- or 64-bit, either byte order) or
/// universal (`FAT`/`FAT64`). It walks the load commands to `LC_CODE_SIGNATURE` and returns each
/// slice's embedded code signature bytes.
public enum MachOFile {
    /// One architecture of an executable.
    public struct Slice: Sendable, Hashable {
        /// The architecture's name (`arm64`, `x86_64`, `arm64e`, … or `cpu 0x…`).
        public var architecture: String
        /// Where the slice starts in the file.
        public var offset: Int
        /// The slice's length.
        public var size: Int
        /// The embedded signature (`LC_CODE_SIGNATURE`'s data), or `nil` when the slice is unsigned.
        public var signature: [UInt8]?
    }

    /// The most slices a universal binary may list (real ones hold two or three).
    public static let maxSlices = 32

    /// Whether the bytes start with a Mach-O or universal magic number.
    public static func hasMagic(_ bytes: [UInt8]) -> Bool {
        let view = ByteView(bytes)
        guard let little = view.uint32LE(at: 0), let big = view.uint32BE(at: 0) else { return false }
        return [0xFEED_FACE, 0xFEED_FACF].contains(little) || [0xFEED_FACE, 0xFEED_FACF, 0xCAFE_BABE, 0xCAFE_BABF].contains(big)
    }

    /// Reads every slice of a thin or universal Mach-O.
    /// - Throws: ``AppBundleError``: `macho-not-macho`, `macho-truncated`, `macho-malformed`,
    ///   `signature-malformed` (a signature range outside the slice).
    public static func slices(of bytes: [UInt8]) throws(AppBundleError) -> [Slice] {
        try slices(of: InMemoryBytes(bytes: bytes))
    }

    /// The most bytes of load commands read, over all slices (real executables hold well under
    /// 1 MiB; a hostile header could name the whole file).
    static let maxLoadCommandBytes = 16 << 20
    /// The most bytes of code signatures read, over all slices (a 1 GiB executable's signature,
    /// page hashes included, is about 20 MiB; a hostile one could name the whole file).
    static let maxSignatureBytes = 64 << 20
    /// The bytes of a slice's header read: the fields up to `sizeofcmds` (a 64-bit header's last
    /// four bytes are reserved), so that the load commands start where the read ends.
    static let headerReadBytes = 28

    /// Reads every slice of a thin or universal Mach-O, reading only the ranges it needs: the
    /// universal header, then for each slice its header, its load commands and its signature.
    static func slices(of source: some RangedBytes) throws(AppBundleError) -> [Slice] {
        guard let slices = try slicesIfRead(of: source) else {
            throw AppBundleError("macho-truncated", "the executable could not be read")
        }
        return slices
    }

    /// ``slices(of:)``, or `nil` while some of what it needs is still to come (a stream: it has
    /// asked for it, and it is run again when that has come).
    ///
    /// The error is the one reading the file whole gives: the first slice that fails, at the
    /// first step it fails (its record, header, load commands, signature's place). A slice's
    /// failure waits while a slice before it waits.
    static func slicesIfRead(of source: some RangedBytes) throws(AppBundleError) -> [Slice]? {
        guard source.count >= 4 else {
            throw AppBundleError("macho-not-macho", "\(source.count) bytes is too short for a Mach-O header")
        }
        guard let first = try source.read([0..<min(source.count, 8 + maxSlices * 32)])?.first else { return nil }
        let prefix = ByteView(first)
        let big = prefix.uint32BE(at: 0) ?? 0
        let universal = big == 0xCAFE_BABE || big == 0xCAFE_BABF
        let (places, recordFailure) = universal
            ? try universalPlaces(prefix, fileSize: source.count, wide: big == 0xCAFE_BABF)
            : ([(offset: 0, size: source.count)], nil)
        var slices: [Slice] = []
        var waiting = false
        var commandsTotal = 0
        var signaturesTotal = 0
        for (number, place) in places.enumerated() {
            do throws(AppBundleError) {
                guard let start = try source.read([place.offset..<(place.offset + min(place.size, headerReadBytes))])?.first else {
                    waiting = true
                    continue
                }
                let view = ByteView(start)
                if universal {
                    guard let magic = view.uint32BE(at: 0), magic != 0xCAFE_BABE, magic != 0xCAFE_BABF else {
                        throw AppBundleError("macho-malformed", "architecture \(number) is not a thin Mach-O")
                    }
                }
                let header = try header(view, sliceSize: place.size)
                commandsTotal += header.commandsSize
                guard commandsTotal <= maxLoadCommandBytes else {
                    throw AppBundleError("macho-malformed", "the load commands hold \(commandsTotal) bytes, more than the \(maxLoadCommandBytes >> 20) MiB read")
                }
                let commandsStart = place.offset + header.size
                guard let commands = try source.read([commandsStart..<(commandsStart + header.commandsSize)])?.first else {
                    waiting = true
                    continue
                }
                var signature: [UInt8]?
                if let range = try signatureRange(ByteView(commands), header: header, sliceSize: place.size) {
                    signaturesTotal += range.count
                    guard signaturesTotal <= maxSignatureBytes else {
                        throw AppBundleError("signature-malformed", "the code signatures hold \(signaturesTotal) bytes, more than the \(maxSignatureBytes >> 20) MiB read")
                    }
                    guard let bytes = try source.read([(place.offset + range.lowerBound)..<(place.offset + range.upperBound)])?.first else {
                        waiting = true
                        continue
                    }
                    signature = bytes
                }
                slices.append(Slice(architecture: header.architecture, offset: place.offset, size: place.size, signature: signature))
            } catch {
                if waiting { return nil }
                throw error
            }
        }
        if waiting { return nil }
        if let recordFailure { throw recordFailure }
        return slices
    }

    /// Where each slice of a universal file lies, from the header's records: the slices before
    /// the first record that fails, and its error.
    /// - Throws: when the header itself is unusable (no slice can be read).
    private static func universalPlaces(_ view: ByteView, fileSize: Int, wide: Bool) throws(AppBundleError)
        -> (places: [(offset: Int, size: Int)], failure: AppBundleError?) {
        guard let count32 = view.uint32BE(at: 4) else {
            throw AppBundleError("macho-truncated", "the universal header is cut short")
        }
        let count = Int(count32)
        guard count >= 1, count <= maxSlices else {
            // 0xCAFEBABE is also a Java class file's magic; its version makes a huge "count".
            throw AppBundleError("macho-not-macho", "a universal header with \(count32) architectures is not a Mach-O")
        }
        let recordSize = wide ? 32 : 20
        var places: [(offset: Int, size: Int)] = []
        // Where each slice lies: slices may not overlap the header or each other (a hostile file
        // could otherwise point every record at one large slice and have it read 32 times).
        var taken: [Range<Int>] = [0..<(8 + count * recordSize)]
        for number in 0..<count {
            let record = 8 + number * recordSize
            guard view.contains(offset: record, length: recordSize),
                  let cpuType = view.uint32BE(at: record), let cpuSubtype = view.uint32BE(at: record + 4) else {
                return (places, AppBundleError("macho-truncated", "universal architecture record \(number) is cut short"))
            }
            let offset64: UInt64?
            let size64: UInt64?
            if wide {
                offset64 = view.uint64BE(at: record + 8)
                size64 = view.uint64BE(at: record + 16)
            } else {
                offset64 = view.uint32BE(at: record + 8).map(UInt64.init)
                size64 = view.uint32BE(at: record + 12).map(UInt64.init)
            }
            guard let offset64, let size64, let offset = Int(checked: offset64), let size = Int(checked: size64),
                  offset <= fileSize, size <= fileSize - offset else {
                return (places, AppBundleError("macho-truncated", "architecture \(architectureName(cpuType, cpuSubtype)) lies outside the file"))
            }
            let range = offset..<(offset + size)
            if let other = taken.firstIndex(where: { $0.overlaps(range) }) {
                return (places, AppBundleError("macho-malformed", "architecture \(architectureName(cpuType, cpuSubtype)) overlaps "
                                               + (other == 0 ? "the universal header" : "architecture \(other - 1)")))
            }
            taken.append(range)
            places.append((offset, size))
        }
        return (places, nil)
    }

    /// A thin Mach-O's header, as far as the load commands need it.
    private struct Header {
        var architecture: String
        var bigEndian: Bool
        /// The header's own size (28 or 32 bytes).
        var size: Int
        var commandCount: Int
        var commandsSize: Int
    }

    /// Reads the header of a thin Mach-O of `sliceSize` bytes from its first bytes.
    private static func header(_ view: ByteView, sliceSize: Int) throws(AppBundleError) -> Header {
        guard let magic = view.uint32LE(at: 0) else {
            throw AppBundleError("macho-not-macho", "too short for a Mach-O header")
        }
        let bigEndian: Bool
        let is64: Bool
        switch magic {
        case 0xFEED_FACE: (bigEndian, is64) = (false, false)
        case 0xFEED_FACF: (bigEndian, is64) = (false, true)
        case 0xCEFA_EDFE: (bigEndian, is64) = (true, false)
        case 0xCFFA_EDFE: (bigEndian, is64) = (true, true)
        default:
            throw AppBundleError("macho-not-macho", "not a Mach-O executable (magic 0x\(String(magic, radix: 16)))")
        }
        let headerSize = is64 ? 32 : 28
        guard sliceSize >= headerSize, view.count >= headerReadBytes, let cpuType = view.uint32(at: 4, bigEndian: bigEndian),
              let cpuSubtype = view.uint32(at: 8, bigEndian: bigEndian),
              let commandCount = view.uint32(at: 16, bigEndian: bigEndian),
              let commandsSize = view.uint32(at: 20, bigEndian: bigEndian) else {
            throw AppBundleError("macho-truncated", "the Mach-O header is cut short")
        }
        let architecture = architectureName(cpuType, cpuSubtype)
        guard Int(commandsSize) <= sliceSize - headerSize else {
            throw AppBundleError("macho-truncated", "\(architecture): the load commands (\(commandsSize) bytes) run past the end of the file")
        }
        guard Int(commandCount) <= Int(commandsSize) / 8 else {
            throw AppBundleError("macho-malformed", "\(architecture): \(commandCount) load commands cannot fit in \(commandsSize) bytes")
        }
        return Header(architecture: architecture, bigEndian: bigEndian, size: headerSize,
                      commandCount: Int(commandCount), commandsSize: Int(commandsSize))
    }

    /// Walks the load commands (`view`: the commands alone) to `LC_CODE_SIGNATURE`: where the
    /// signature lies in the slice, or `nil` when it is unsigned.
    private static func signatureRange(_ view: ByteView, header: Header, sliceSize: Int) throws(AppBundleError) -> Range<Int>? {
        let (architecture, bigEndian) = (header.architecture, header.bigEndian)
        let commandsEnd = header.commandsSize
        var cursor = 0
        var signature: Range<Int>?
        for number in 0..<header.commandCount {
            guard cursor <= commandsEnd - 8, let command = view.uint32(at: cursor, bigEndian: bigEndian),
                  let size = view.uint32(at: cursor + 4, bigEndian: bigEndian) else {
                throw AppBundleError("macho-malformed", "\(architecture): load command \(number) lies outside the load commands")
            }
            guard size >= 8, Int(size) <= commandsEnd - cursor else {
                throw AppBundleError("macho-malformed", "\(architecture): load command \(number) has an impossible size \(size)")
            }
            if command == 0x1D { // LC_CODE_SIGNATURE
                guard signature == nil else {
                    throw AppBundleError("signature-malformed", "\(architecture): more than one LC_CODE_SIGNATURE")
                }
                guard size >= 16, let dataOffset = view.uint32(at: cursor + 8, bigEndian: bigEndian),
                      let dataSize = view.uint32(at: cursor + 12, bigEndian: bigEndian) else {
                    throw AppBundleError("signature-malformed", "\(architecture): LC_CODE_SIGNATURE is too short")
                }
                guard Int(dataOffset) <= sliceSize, Int(dataSize) <= sliceSize - Int(dataOffset) else {
                    throw AppBundleError("signature-malformed",
                                         "\(architecture): the code signature (offset \(dataOffset), \(dataSize) bytes) lies outside the \(sliceSize)-byte binary")
                }
                signature = Int(dataOffset)..<(Int(dataOffset) + Int(dataSize))
            }
            cursor += Int(size)
        }
        return signature
    }

    /// A readable name for a CPU type and subtype.
    static func architectureName(_ type: UInt32, _ subtype: UInt32) -> String {
        let sub = subtype & 0x00FF_FFFF
        switch type {
        case 7: return "i386"
        case 0x0100_0007: return sub == 8 ? "x86_64h" : "x86_64"
        case 12: return sub == 9 ? "armv7" : sub == 11 ? "armv7s" : sub == 12 ? "armv7k" : "arm"
        case 0x0100_000C: return sub == 2 ? "arm64e" : "arm64"
        case 0x0200_000C: return "arm64_32"
        case 18: return "ppc"
        case 0x0100_0012: return "ppc64"
        default: return "cpu 0x\(String(type, radix: 16))"
        }
    }
}
