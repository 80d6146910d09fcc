import Inflate

/// A read-only, bounds-checked zip reader for `.ipa` files: end of central directory (ZIP64 too),
/// central directory, local headers; stored and DEFLATE entries with CRC and size checks.
///
/// Hostile archives give an ``AppBundleError`` (`zip-truncated`, `zip-corrupt`, `zip-unsafe-path`,
/// `zip-unsupported`, `zip-too-large`), never a crash: every offset and length is checked, entry
/// counts are bounded by the directory's size, names that could escape a folder (`..`, absolute,
/// backslashes, NUL) are refused, and decompression stops at a cap.
public struct ZipArchive: Sendable {
    /// One file of the archive, from its central-directory record.
    public struct Entry: Sendable, Hashable {
        /// The path inside the archive (`Payload/Demo.app/Demo`).
        public var name: String
        /// 0 stored, 8 DEFLATE.
        public var method: UInt16
        /// General-purpose flags (bit 0: encrypted).
        public var flags: UInt16
        /// The CRC-32 of the uncompressed bytes.
        public var crc32: UInt32
        /// Bytes stored in the archive.
        public var compressedSize: Int
        /// Bytes after decompression.
        public var uncompressedSize: Int
        /// Where the entry's local header starts.
        public var localHeaderOffset: Int

        /// Whether the name denotes a folder.
        public var isDirectory: Bool { name.hasSuffix("/") }
    }

    /// The most entries an archive may list.
    public static let maxEntries = 1_000_000

    /// Every entry, in central-directory order.
    public let entries: [Entry]
    private let view: ByteView
    private let index: [String: Int]

    /// Reads the central directory of a zip archive held in memory.
    /// - Throws: ``AppBundleError`` when the archive is truncated, corrupt or holds an unsafe name.
    public init(bytes: [UInt8]) throws(AppBundleError) {
        view = ByteView(bytes)
        let directory = try Self.locateCentralDirectory(view)
        var entries: [Entry] = []
        entries.reserveCapacity(min(directory.count, 4096))
        var index: [String: Int] = [:]
        var offset = directory.offset
        let end = directory.offset + directory.size
        for number in 0..<directory.count {
            guard offset <= end - 46, view.uint32LE(at: offset) == 0x0201_4B50 else {
                throw AppBundleError("zip-corrupt", "central directory record \(number) is missing or damaged")
            }
            let entry = try Self.readCentralRecord(view, at: offset, directoryEnd: end, number: number)
            guard index[entry.record.name] == nil else {
                throw AppBundleError("zip-corrupt", "two entries are named '\(entry.record.name)'")
            }
            index[entry.record.name] = entries.count
            entries.append(entry.record)
            offset = entry.next
        }
        self.entries = entries
        self.index = index
    }

    /// The entry with exactly this name.
    public func entry(named name: String) -> Entry? {
        index[name].map { entries[$0] }
    }

    /// The uncompressed bytes of an entry.
    /// - Parameters:
    ///   - entry: An entry of this archive.
    ///   - limit: The most bytes the entry may expand to.
    /// - Throws: ``AppBundleError``: `zip-truncated`, `zip-corrupt`, `zip-unsupported`, `zip-too-large`.
    public func contents(of entry: Entry, limit: Int) throws(AppBundleError) -> [UInt8] {
        var output: [UInt8] = []
        // Room for the whole entry at once (growing by doubling would hold the old and the new
        // buffer together: 384 MB at the step from 128 to 256 MB).
        if entry.uncompressedSize <= limit { output.reserveCapacity(expandedSizeBound(entry)) }
        try stream(entry, limit: limit) { piece in
            output.append(contentsOf: piece)
            return true
        }
        return output
    }

    /// The most bytes an entry can expand to: its recorded size, but no more than its compressed
    /// bytes can give (DEFLATE's best ratio is 1,032 to 1), so a size a hostile header claims
    /// reserves nothing large.
    public func expandedSizeBound(_ entry: Entry) -> Int {
        let compressed = max(0, min(entry.compressedSize, view.count))
        return max(0, min(entry.uncompressedSize, entry.method == 0 ? compressed : compressed * 1032 + 1024))
    }

    /// Reads an entry's uncompressed bytes piece by piece (in order, at most 64 KiB each) without
    /// keeping them: each goes to `consume`, which returns `false` to stop there. An entry read
    /// to its end is checked (its size and CRC-32); one stopped early is not.
    /// - Parameters:
    ///   - entry: An entry of this archive.
    ///   - limit: The most bytes the entry may expand to.
    ///   - consume: Called with each piece; valid only during the call.
    /// - Returns: Whether the entry was read to its end, and checked.
    /// - Throws: ``AppBundleError``: `zip-truncated`, `zip-corrupt`, `zip-unsupported`, `zip-too-large`.
    @discardableResult
    public func stream(_ entry: Entry, limit: Int, consume: (UnsafeBufferPointer<UInt8>) -> Bool) throws(AppBundleError) -> Bool {
        guard entry.flags & 0x1 == 0 else {
            throw AppBundleError("zip-unsupported", "'\(entry.name)' is encrypted")
        }
        guard entry.uncompressedSize <= limit else {
            throw AppBundleError("zip-too-large", "'\(entry.name)' expands to \(entry.uncompressedSize) bytes, more than the \(limit)-byte cap")
        }
        let offset = entry.localHeaderOffset
        guard let signature = view.uint32LE(at: offset), let nameLength = view.uint16LE(at: offset + 26),
              let extraLength = view.uint16LE(at: offset + 28) else {
            throw AppBundleError("zip-truncated", "the local header of '\(entry.name)' lies past the end of the archive")
        }
        guard signature == 0x0403_4B50 else {
            throw AppBundleError("zip-corrupt", "'\(entry.name)' has no local header at offset \(offset)")
        }
        let dataOffset = offset + 30 + Int(nameLength) + Int(extraLength)
        guard let data = view.slice(offset: dataOffset, length: entry.compressedSize) else {
            throw AppBundleError("zip-truncated", "the data of '\(entry.name)' runs past the end of the archive")
        }
        var crc: UInt32 = 0
        var produced = 0
        let complete: Bool
        switch entry.method {
        case 0:
            guard entry.compressedSize == entry.uncompressedSize else {
                throw AppBundleError("zip-corrupt", "stored entry '\(entry.name)' has different compressed and uncompressed sizes")
            }
            complete = data.withUnsafeBufferPointer { buffer in
                var start = 0
                while start < buffer.count {
                    let piece = UnsafeBufferPointer(rebasing: buffer[start..<min(buffer.count, start + 64 * 1024)])
                    crc = Inflate.crc32(piece, continuing: crc)
                    produced += piece.count
                    start += piece.count
                    if !consume(piece) { return false }
                }
                return true
            }
        case 8:
            do {
                complete = try Inflate.raw(data, limit: min(limit, entry.uncompressedSize)) { piece in
                    crc = Inflate.crc32(piece, continuing: crc)
                    produced += piece.count
                    return consume(piece)
                }
            } catch {
                switch error {
                case .truncated:
                    throw AppBundleError("zip-corrupt", "'\(entry.name)': \(error.description)")
                case .tooLarge:
                    throw AppBundleError("zip-corrupt", "'\(entry.name)' expands past its recorded size of \(entry.uncompressedSize) bytes")
                case .corrupt:
                    throw AppBundleError("zip-corrupt", "'\(entry.name)': \(error.description)")
                }
            }
        default:
            throw AppBundleError("zip-unsupported", "'\(entry.name)' uses compression method \(entry.method); only stored and DEFLATE are read")
        }
        guard complete else { return false }
        guard produced == entry.uncompressedSize else {
            throw AppBundleError("zip-corrupt", "'\(entry.name)' expands to \(produced) bytes, not the recorded \(entry.uncompressedSize)")
        }
        guard crc == entry.crc32 else {
            throw AppBundleError("zip-corrupt", "'\(entry.name)' fails its CRC-32 check")
        }
        return true
    }

    // MARK: - Central directory

    private struct Directory {
        var offset: Int
        var size: Int
        var count: Int
    }

    /// Finds the end-of-central-directory record (and the ZIP64 one when present).
    private static func locateCentralDirectory(_ view: ByteView) throws(AppBundleError) -> Directory {
        guard view.count >= 22 else {
            throw AppBundleError(view.uint32LE(at: 0) == 0x0403_4B50 ? "zip-truncated" : "zip-corrupt",
                                 "\(view.count) bytes is too short for a zip archive")
        }
        var eocd: Int?
        var position = view.count - 22
        let lowest = max(0, view.count - 22 - 0xFFFF)
        while position >= lowest {
            if view.uint32LE(at: position) == 0x0605_4B50,
               let commentLength = view.uint16LE(at: position + 20), position + 22 + Int(commentLength) <= view.count {
                eocd = position
                break
            }
            position -= 1
        }
        guard let eocd else {
            if view.uint32LE(at: 0) == 0x0403_4B50 {
                throw AppBundleError("zip-truncated", "no end-of-central-directory record: the archive is cut short")
            }
            throw AppBundleError("zip-corrupt", "not a zip archive: no end-of-central-directory record")
        }
        guard let disk = view.uint16LE(at: eocd + 4), let directoryDisk = view.uint16LE(at: eocd + 6),
              let count16 = view.uint16LE(at: eocd + 10), let size32 = view.uint32LE(at: eocd + 12),
              let offset32 = view.uint32LE(at: eocd + 16) else {
            throw AppBundleError("zip-truncated", "the end-of-central-directory record is cut short")
        }
        var count = Int(count16)
        var size = Int(size32)
        var offset = Int(offset32)
        if count16 == 0xFFFF || size32 == 0xFFFF_FFFF || offset32 == 0xFFFF_FFFF {
            // ZIP64: the locator sits just before the classic record.
            if eocd >= 20, view.uint32LE(at: eocd - 20) == 0x0706_4B50 {
                guard let recordOffset64 = view.uint64LE(at: eocd - 12), let recordOffset = Int(checked: recordOffset64),
                      view.uint32LE(at: recordOffset) == 0x0606_4B50,
                      let count64 = view.uint64LE(at: recordOffset + 32), let size64 = view.uint64LE(at: recordOffset + 40),
                      let offset64 = view.uint64LE(at: recordOffset + 48) else {
                    throw AppBundleError("zip-corrupt", "the ZIP64 end-of-central-directory record is missing or damaged")
                }
                guard let wideCount = Int(checked: count64), let wideSize = Int(checked: size64),
                      let wideOffset = Int(checked: offset64) else {
                    throw AppBundleError("zip-corrupt", "the ZIP64 record holds impossible sizes")
                }
                count = wideCount
                size = wideSize
                offset = wideOffset
            }
        } else if disk != 0 || directoryDisk != 0 {
            throw AppBundleError("zip-unsupported", "multi-part (spanned) archives are not read")
        }
        guard view.contains(offset: offset, length: size) else {
            throw AppBundleError("zip-corrupt", "the central directory (offset \(offset), \(size) bytes) lies outside the \(view.count)-byte archive")
        }
        guard count <= maxEntries, count <= size / 46 else {
            throw AppBundleError("zip-corrupt", "the archive claims \(count) entries in a \(size)-byte central directory")
        }
        return Directory(offset: offset, size: size, count: count)
    }

    /// Reads one central-directory record; returns it and the offset of the next.
    private static func readCentralRecord(_ view: ByteView, at offset: Int, directoryEnd: Int, number: Int)
        throws(AppBundleError) -> (record: Entry, next: Int) {
        func field16(_ at: Int) -> Int { Int(view.uint16LE(at: offset + at) ?? 0) }
        func field32(_ at: Int) -> UInt32 { view.uint32LE(at: offset + at) ?? 0 }
        let nameLength = field16(28)
        let extraLength = field16(30)
        let commentLength = field16(32)
        let next = offset + 46 + nameLength + extraLength + commentLength
        guard next <= directoryEnd, let nameBytes = view.slice(offset: offset + 46, length: nameLength) else {
            throw AppBundleError("zip-corrupt", "central directory record \(number) runs past the directory's end")
        }
        let name = String(decoding: nameBytes, as: UTF8.self)
        try checkSafe(name: name, raw: nameBytes)
        var uncompressed = UInt64(field32(24))
        var compressed = UInt64(field32(20))
        var localOffset = UInt64(field32(42))
        if uncompressed == 0xFFFF_FFFF || compressed == 0xFFFF_FFFF || localOffset == 0xFFFF_FFFF {
            // The ZIP64 extra field (id 1) carries, in order, only the values that overflowed.
            var cursor = offset + 46 + nameLength
            let extraEnd = cursor + extraLength
            var found = false
            while cursor + 4 <= extraEnd, let id = view.uint16LE(at: cursor), let length = view.uint16LE(at: cursor + 2) {
                let dataStart = cursor + 4
                guard dataStart + Int(length) <= extraEnd else { break }
                if id == 0x0001 {
                    var field = dataStart
                    func take(_ value: inout UInt64) throws(AppBundleError) {
                        guard value == 0xFFFF_FFFF else { return }
                        guard field + 8 <= dataStart + Int(length), let wide = view.uint64LE(at: field) else {
                            throw AppBundleError("zip-corrupt", "'\(name)' has a short ZIP64 extra field")
                        }
                        value = wide
                        field += 8
                    }
                    try take(&uncompressed)
                    try take(&compressed)
                    try take(&localOffset)
                    found = true
                    break
                }
                cursor = dataStart + Int(length)
            }
            guard found else { throw AppBundleError("zip-corrupt", "'\(name)' needs a ZIP64 extra field and has none") }
        }
        guard let uncompressedSize = Int(checked: uncompressed), let compressedSize = Int(checked: compressed),
              let localHeaderOffset = Int(checked: localOffset), localHeaderOffset < view.count else {
            throw AppBundleError("zip-corrupt", "'\(name)' has sizes or an offset outside the archive")
        }
        let entry = Entry(
            name: name, method: UInt16(field16(10)), flags: UInt16(field16(8)), crc32: field32(16),
            compressedSize: compressedSize, uncompressedSize: uncompressedSize, localHeaderOffset: localHeaderOffset
        )
        return (entry, next)
    }

    /// Refuses names that could escape an extraction folder or confuse a reader.
    private static func checkSafe(name: String, raw: ArraySlice<UInt8>) throws(AppBundleError) {
        let unsafe = raw.contains(0) || raw.contains(UInt8(ascii: "\\")) || name.hasPrefix("/") || name.isEmpty
            || name.split(separator: "/", omittingEmptySubsequences: false).contains("..")
            || (name.count >= 2 && name.dropFirst().first == ":")
        if unsafe {
            let shown = String(decoding: raw.map { $0 == 0 ? UInt8(ascii: "?") : $0 }, as: UTF8.self)
            throw AppBundleError("zip-unsafe-path", "the archive holds an unsafe entry name '\(shown)' (absolute, '..', backslash or NUL)")
        }
    }
}
