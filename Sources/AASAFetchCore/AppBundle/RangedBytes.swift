import Foundation

/// Bytes read by range rather than whole: an executable in memory, in a file, or inside a zip
/// entry. A signature needs a few ranges of an executable that may be a gigabyte (the headers,
/// the load commands, the signature itself), so only those are read and kept.
protocol RangedBytes {
    /// How many bytes there are.
    var count: Int { get }

    /// The bytes of each range, read together.
    /// - Parameter ranges: Ranges inside `0..<count`.
    /// - Throws: ``AppBundleError`` when the bytes cannot be read.
    func read(_ ranges: [Range<Int>]) throws(AppBundleError) -> [[UInt8]]
}

/// Bytes held in memory.
struct InMemoryBytes: RangedBytes {
    let bytes: [UInt8]

    var count: Int { bytes.count }

    func read(_ ranges: [Range<Int>]) -> [[UInt8]] {
        ranges.map { Array(bytes[$0]) }
    }
}

/// A regular file, read with `pread` where a range lies.
final class FileBytes: RangedBytes {
    /// The path, for messages.
    let path: String
    let count: Int
    private let handle: FileHandle

    /// Takes an open descriptor of a regular file of `count` bytes (closed when this goes away).
    init(descriptor: Int32, count: Int, path: String) {
        handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        self.count = count
        self.path = path
    }

    func read(_ ranges: [Range<Int>]) throws(AppBundleError) -> [[UInt8]] {
        var pieces: [[UInt8]] = []
        for range in ranges {
            var bytes = [UInt8](repeating: 0, count: range.count)
            var done = 0
            while done < range.count {
                let result = bytes.withUnsafeMutableBytes { buffer in
                    pread(handle.fileDescriptor, buffer.baseAddress! + done, range.count - done, off_t(range.lowerBound + done))
                }
                if result < 0, errno == EINTR { continue }
                guard result >= 0 else {
                    throw AppBundleError("app-unreadable", "cannot read \(path): \(SystemReason.text(errno: errno))")
                }
                guard result > 0 else {
                    throw AppBundleError("app-unreadable", "cannot read \(path): it became shorter while it was read")
                }
                done += result
            }
            pieces.append(bytes)
        }
        return pieces
    }
}

/// An entry of a zip archive, inflated once at the start to check it whole (its size and CRC-32,
/// keeping its first ``prefixBytes``), then again, up to the last byte needed, for ranges past
/// that: a 200 MB executable costs its ranges, not 200 MB.
final class ZipEntryBytes: RangedBytes {
    /// The bytes kept from the first reading: a thin executable's headers and load commands.
    static let prefixBytes = 1 << 20

    let count: Int
    private let archive: ZipArchive
    private let entry: ZipArchive.Entry
    private let limit: Int
    private let prefix: [UInt8]

    /// Reads and checks the entry.
    /// - Throws: the zip's errors (`zip-corrupt`, `zip-too-large`, …).
    init(archive: ZipArchive, entry: ZipArchive.Entry, limit: Int) throws(AppBundleError) {
        self.archive = archive
        self.entry = entry
        self.limit = limit
        var prefix: [UInt8] = []
        var total = 0
        prefix.reserveCapacity(min(archive.expandedSizeBound(entry), Self.prefixBytes))
        try archive.stream(entry, limit: limit) { piece in
            if prefix.count < Self.prefixBytes {
                prefix.append(contentsOf: piece.prefix(Self.prefixBytes - prefix.count))
            }
            total += piece.count
            return true
        }
        self.prefix = prefix
        count = total
    }

    func read(_ ranges: [Range<Int>]) throws(AppBundleError) -> [[UInt8]] {
        if ranges.allSatisfy({ $0.upperBound <= prefix.count }) {
            return ranges.map { Array(prefix[$0]) }
        }
        var pieces = ranges.map { range -> [UInt8] in
            var piece: [UInt8] = []
            piece.reserveCapacity(range.count)
            return piece
        }
        let end = ranges.map(\.upperBound).max() ?? 0
        var position = 0
        try archive.stream(entry, limit: limit) { piece in
            let here = position..<(position + piece.count)
            for (number, range) in ranges.enumerated() where range.overlaps(here) {
                let overlap = range.clamped(to: here)
                pieces[number].append(contentsOf: piece[(overlap.lowerBound - position)..<(overlap.upperBound - position)])
            }
            position = here.upperBound
            return position < end
        }
        guard zip(pieces, ranges).allSatisfy({ $0.count == $1.count }) else {
            throw AppBundleError("zip-corrupt", "'\(entry.name)' changed between two readings")
        }
        return pieces
    }
}
