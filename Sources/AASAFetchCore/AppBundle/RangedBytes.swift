import Foundation

/// Bytes read by range rather than whole: an executable in memory, in a file, or inside a zip
/// entry. A signature needs a few ranges of an executable that may be a gigabyte (the headers,
/// the load commands, the signature itself), so only those are read and kept.
protocol RangedBytes {
    /// How many bytes there are.
    var count: Int { get }

    /// The bytes of each range, read together; `nil` when some are still to come (a stream that
    /// has not reached them: asking for them has it keep them).
    /// - Parameter ranges: Ranges inside `0..<count`.
    /// - Throws: ``AppBundleError`` when the bytes cannot be read.
    func read(_ ranges: [Range<Int>]) throws(AppBundleError) -> [[UInt8]]?
}

/// Bytes held in memory.
struct InMemoryBytes: RangedBytes, Sendable {
    let bytes: [UInt8]

    var count: Int { bytes.count }

    func read(_ ranges: [Range<Int>]) -> [[UInt8]]? {
        ranges.map { Array(bytes[$0]) }
    }
}

/// A regular file, read with `pread` where a range lies (from any thread: nothing changes after
/// the open).
final class FileBytes: RangedBytes, Sendable {
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

    func read(_ ranges: [Range<Int>]) throws(AppBundleError) -> [[UInt8]]? {
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

/// The slices of an executable inside a zip archive, read in one pass where the layout allows:
/// the entry streams by once (checked whole, its size and CRC-32), and ``MachOFile`` is run again
/// on what was kept each time a range it asked for has come (the universal header, each slice's
/// header, its load commands, its signature: in a real executable each lies after the one it is
/// found from). A range the stream had passed when it was asked for (an unusual layout) is read
/// by ``ZipEntryBytes`` instead, which inflates the entry again.
enum ZipEntryReader {
    static func slices(of entry: ZipArchive.Entry, in archive: ZipArchive, limit: Int) throws(AppBundleError) -> [MachOFile.Slice] {
        let capture = StreamCapture(count: entry.uncompressedSize)
        var outcome: Result<[MachOFile.Slice], AppBundleError>?
        func attempt() {
            capture.startAttempt()
            do throws(AppBundleError) {
                if let slices = try MachOFile.slicesIfRead(of: capture) { outcome = .success(slices) }
            } catch {
                outcome = .failure(error)
            }
        }
        attempt()
        // The whole entry streams by, so that a damaged one is `zip-corrupt` whatever was parsed;
        // each piece is cut where a range asked for ends, so the next ask comes in time.
        try archive.stream(entry, limit: limit) { piece in
            var start = 0
            while start < piece.count {
                let end = outcome == nil ? capture.nextStop(before: piece.count - start).map { start + $0 } ?? piece.count : piece.count
                capture.absorb(UnsafeBufferPointer(rebasing: piece[start..<end]))
                start = end
                if outcome == nil, capture.ready { attempt() }
            }
            return true
        }
        if let outcome { return try outcome.get() }
        return try MachOFile.slices(of: ZipEntryBytes(archive: archive, entry: entry, limit: limit))
    }
}

/// Bytes kept from a stream as it passes: its first ``ZipEntryBytes/prefixBytes``, and the ranges
/// asked for before the stream reached them; a read of anything else is `nil` (and asks for it).
final class StreamCapture: RangedBytes {
    let count: Int
    private let prefixLimit: Int
    private var prefix: [UInt8] = []
    private var pieces: [(range: Range<Int>, bytes: [UInt8])] = []
    private var waiting: [Range<Int>] = []
    private var position = 0
    private var behind = false

    init(count: Int) {
        self.count = count
        prefixLimit = min(max(count, 0), ZipEntryBytes.prefixBytes)
    }

    /// Whether a range the last attempt asked for has come (and none had passed).
    var ready: Bool { !behind && waiting.contains { $0.upperBound <= position } }

    func startAttempt() { waiting.removeAll() }

    /// How many more bytes until the next range asked for is complete, if within `length`.
    func nextStop(before length: Int) -> Int? {
        waiting.lazy.map { $0.upperBound - self.position }.filter { $0 > 0 && $0 <= length }.min()
    }

    /// Keeps what the stream's next bytes hold of the prefix and of the ranges asked for.
    func absorb(_ piece: UnsafeBufferPointer<UInt8>) {
        let here = position..<(position + piece.count)
        if prefix.count < prefixLimit {
            prefix.append(contentsOf: piece.prefix(prefixLimit - prefix.count))
        }
        for index in pieces.indices where pieces[index].range.overlaps(here) {
            let overlap = pieces[index].range.clamped(to: here)
            pieces[index].bytes.append(contentsOf: piece[(overlap.lowerBound - position)..<(overlap.upperBound - position)])
        }
        position = here.upperBound
    }

    func read(_ ranges: [Range<Int>]) -> [[UInt8]]? {
        var result: [[UInt8]] = []
        for range in ranges {
            if range.isEmpty {
                result.append([])
            } else if let bytes = kept(range) {
                result.append(bytes)
            } else if range.upperBound <= prefixLimit || asked(range) {
                waiting.append(range)
            } else if range.lowerBound >= position {
                pieces.append((range, []))
                waiting.append(range)
            } else {
                behind = true
            }
        }
        return result.count == ranges.count ? result : nil
    }

    private func asked(_ range: Range<Int>) -> Bool {
        pieces.contains { $0.range.lowerBound <= range.lowerBound && range.upperBound <= $0.range.upperBound }
    }

    private func kept(_ range: Range<Int>) -> [UInt8]? {
        if range.upperBound <= prefix.count { return Array(prefix[range]) }
        for piece in pieces where piece.range.lowerBound <= range.lowerBound && range.upperBound <= piece.range.lowerBound + piece.bytes.count {
            return Array(piece.bytes[(range.lowerBound - piece.range.lowerBound)..<(range.upperBound - piece.range.lowerBound)])
        }
        return nil
    }
}

/// An entry of a zip archive, inflated once at the start to check it whole (its size and CRC-32,
/// keeping its first ``prefixBytes``), then again, up to the last byte needed, for each read past
/// that (``ZipEntryReader`` needs it only for unusual layouts).
final class ZipEntryBytes: RangedBytes {
    /// The bytes kept of an entry's start (by ``StreamCapture`` too): a thin executable's headers
    /// and load commands, nearly always.
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

    func read(_ ranges: [Range<Int>]) throws(AppBundleError) -> [[UInt8]]? {
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
