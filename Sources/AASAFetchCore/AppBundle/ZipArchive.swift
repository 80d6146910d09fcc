import Inflate

/// A read-only, bounds-checked zip reader for `.ipa` files: end of central directory (ZIP64 too),
/// central directory, local headers; stored and DEFLATE entries with CRC and size checks. The
/// archive is held in memory or read from a file by range: its central directory once, then each
/// entry that is asked for, streamed in pieces of 64 KiB.
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

    /// The pieces an entry's bytes are read in.
    private static let pieceBytes = 64 * 1024

    /// Every entry, in central-directory order.
    public let entries: [Entry]
    private let source: any ZipSource
    private let index: [String: Int]

    /// Reads the central directory of a zip archive held in memory.
    /// - Throws: ``AppBundleError`` when the archive is truncated, corrupt or holds an unsafe name.
    public init(bytes: [UInt8]) throws(AppBundleError) {
        try self.init(source: InMemoryBytes(bytes: bytes))
    }

    /// Reads the central directory of an archive from `source` (memory, or a file read by range).
    init(source: any ZipSource) throws(AppBundleError) {
        self.source = source
        let directory = try Self.locateCentralDirectory(source)
        // The directory itself, read whole: it is the archive's index, a small part of an .ipa.
        guard let directoryBytes = try source.bytes(at: directory.offset, length: directory.size) else {
            throw AppBundleError("zip-corrupt", "the central directory (offset \(directory.offset), \(directory.size) bytes) lies outside the \(source.count)-byte archive")
        }
        let view = ByteView(directoryBytes)
        var entries: [Entry] = []
        entries.reserveCapacity(min(directory.count, 4096))
        var index: [String: Int] = [:]
        var offset = 0
        let end = directory.size
        for number in 0..<directory.count {
            guard offset <= end - 46, view.uint32LE(at: offset) == 0x0201_4B50 else {
                throw AppBundleError("zip-corrupt", "central directory record \(number) is missing or damaged")
            }
            let entry = try Self.readCentralRecord(view, at: offset, directoryEnd: end, archiveSize: source.count, number: number)
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
        let compressed = max(0, min(entry.compressedSize, source.count))
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
        guard let header = try source.bytes(at: offset, length: 30).map(ByteView.init), let signature = header.uint32LE(at: 0),
              let nameLength = header.uint16LE(at: 26), let extraLength = header.uint16LE(at: 28) else {
            throw AppBundleError("zip-truncated", "the local header of '\(entry.name)' lies past the end of the archive")
        }
        guard signature == 0x0403_4B50 else {
            throw AppBundleError("zip-corrupt", "'\(entry.name)' has no local header at offset \(offset)")
        }
        let dataOffset = offset + 30 + Int(nameLength) + Int(extraLength)
        guard source.contains(offset: dataOffset, length: entry.compressedSize) else {
            throw AppBundleError("zip-truncated", "the data of '\(entry.name)' runs past the end of the archive")
        }
        // The entry's bytes in pieces of 64 KiB, read as they are needed; a read that fails ends
        // the input and is thrown in place of what the decoder made of the cut.
        var position = dataOffset
        let dataEnd = dataOffset + entry.compressedSize
        var readError: AppBundleError?
        func nextPiece() -> ArraySlice<UInt8>? {
            guard position < dataEnd, readError == nil else { return nil }
            let length = min(dataEnd - position, Self.pieceBytes)
            do {
                guard let piece = try source.slice(at: position, length: length) else {
                    readError = AppBundleError("zip-truncated", "the data of '\(entry.name)' runs past the end of the archive")
                    return nil
                }
                position += length
                return piece
            } catch {
                readError = error
                return nil
            }
        }
        var crc: UInt32 = 0
        var produced = 0
        let complete: Bool
        switch entry.method {
        case 0:
            guard entry.compressedSize == entry.uncompressedSize else {
                throw AppBundleError("zip-corrupt", "stored entry '\(entry.name)' has different compressed and uncompressed sizes")
            }
            var stopped = false
            while !stopped, let data = nextPiece() {
                stopped = !data.withUnsafeBufferPointer { piece in
                    crc = Inflate.crc32(piece, continuing: crc)
                    produced += piece.count
                    return consume(piece)
                }
            }
            if let readError { throw readError }
            complete = !stopped
        case 8:
            do {
                complete = try Inflate.raw(limit: min(limit, entry.uncompressedSize), input: nextPiece) { piece in
                    crc = Inflate.crc32(piece, continuing: crc)
                    produced += piece.count
                    return consume(piece)
                }
            } catch {
                if let readError { throw readError }
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
    private static func locateCentralDirectory(_ source: any ZipSource) throws(AppBundleError) -> Directory {
        // Only an error needs it: an archive cut short still starts with a local header.
        func startsAsZip() throws(AppBundleError) -> Bool {
            try source.bytes(at: 0, length: 4).map(ByteView.init)?.uint32LE(at: 0) == 0x0403_4B50
        }
        guard source.count >= 22 else {
            throw AppBundleError(try startsAsZip() ? "zip-truncated" : "zip-corrupt", "\(source.count) bytes is too short for a zip archive")
        }
        // The record is in the last 22 bytes plus at most a 65,535-byte comment; offsets in
        // `view` count from `tailStart`.
        let tailStart = max(0, source.count - 22 - 0xFFFF)
        guard let tail = try source.bytes(at: tailStart, length: source.count - tailStart) else {
            throw AppBundleError("zip-truncated", "the end of the archive could not be read")
        }
        let view = ByteView(tail)
        var found: Int?
        var position = view.count - 22
        while position >= 0 {
            if view.uint32LE(at: position) == 0x0605_4B50,
               let commentLength = view.uint16LE(at: position + 20), position + 22 + Int(commentLength) <= view.count {
                found = position
                break
            }
            position -= 1
        }
        guard let found else {
            if try startsAsZip() {
                throw AppBundleError("zip-truncated", "no end-of-central-directory record: the archive is cut short")
            }
            throw AppBundleError("zip-corrupt", "not a zip archive: no end-of-central-directory record")
        }
        let eocd = tailStart + found
        guard let disk = view.uint16LE(at: found + 4), let directoryDisk = view.uint16LE(at: found + 6),
              let count16 = view.uint16LE(at: found + 10), let size32 = view.uint32LE(at: found + 12),
              let offset32 = view.uint32LE(at: found + 16) else {
            throw AppBundleError("zip-truncated", "the end-of-central-directory record is cut short")
        }
        var count = Int(count16)
        var size = Int(size32)
        var offset = Int(offset32)
        if count16 == 0xFFFF || size32 == 0xFFFF_FFFF || offset32 == 0xFFFF_FFFF {
            // ZIP64: the locator sits just before the classic record.
            if eocd >= 20, let locator = try source.bytes(at: eocd - 20, length: 20).map(ByteView.init),
               locator.uint32LE(at: 0) == 0x0706_4B50 {
                guard let recordOffset64 = locator.uint64LE(at: 8), let recordOffset = Int(checked: recordOffset64),
                      let record = try source.bytes(at: recordOffset, length: 56).map(ByteView.init),
                      record.uint32LE(at: 0) == 0x0606_4B50,
                      let count64 = record.uint64LE(at: 32), let size64 = record.uint64LE(at: 40),
                      let offset64 = record.uint64LE(at: 48) else {
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
        guard source.contains(offset: offset, length: size) else {
            throw AppBundleError("zip-corrupt", "the central directory (offset \(offset), \(size) bytes) lies outside the \(source.count)-byte archive")
        }
        guard count <= maxEntries, count <= size / 46 else {
            throw AppBundleError("zip-corrupt", "the archive claims \(count) entries in a \(size)-byte central directory")
        }
        return Directory(offset: offset, size: size, count: count)
    }

    /// Reads one central-directory record; returns it and the offset of the next.
    private static func readCentralRecord(_ view: ByteView, at offset: Int, directoryEnd: Int, archiveSize: Int, number: Int)
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
              let localHeaderOffset = Int(checked: localOffset), localHeaderOffset < archiveSize else {
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

/// Where a zip archive's bytes come from: memory, or a regular file read by range.
protocol ZipSource: Sendable {
    /// The archive's size in bytes.
    var count: Int { get }

    /// The bytes `offset..<offset+length`, or `nil` when they lie outside the archive.
    /// - Throws: ``AppBundleError`` (`app-unreadable`) when a file cannot be read.
    func slice(at offset: Int, length: Int) throws(AppBundleError) -> ArraySlice<UInt8>?
}

extension ZipSource {
    /// Whether `offset..<offset+length` lies inside the archive (no overflow possible).
    func contains(offset: Int, length: Int) -> Bool {
        offset >= 0 && length >= 0 && offset <= count && length <= count - offset
    }

    /// ``slice(at:length:)`` as an array.
    func bytes(at offset: Int, length: Int) throws(AppBundleError) -> [UInt8]? {
        try slice(at: offset, length: length).map { Array($0) }
    }
}

/// An archive held in memory.
extension InMemoryBytes: ZipSource {
    func slice(at offset: Int, length: Int) -> ArraySlice<UInt8>? {
        contains(offset: offset, length: length) ? bytes[offset..<(offset + length)] : nil
    }
}

/// An archive in a regular file.
extension FileBytes: ZipSource {
    func slice(at offset: Int, length: Int) throws(AppBundleError) -> ArraySlice<UInt8>? {
        guard contains(offset: offset, length: length) else { return nil }
        return try read([offset..<(offset + length)])?.first.map { $0[...] }
    }
}
