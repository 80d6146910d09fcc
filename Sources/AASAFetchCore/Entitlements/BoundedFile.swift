import Foundation

/// Why ``BoundedFile/read(path:limit:)`` returned no bytes.
public enum BoundedFileError: Error, Sendable, Hashable {
    /// The file could not be opened or read; the system's message.
    case unreadable(String)
    /// The file holds more than `limit` bytes; `size` when it is known (a regular file), else
    /// `nil` (a pipe or device: reading stopped after `limit + 1` bytes).
    case tooLarge(size: Int?, limit: Int)

    /// A sentence for people that names `path`.
    public func message(path: String) -> String {
        switch self {
        case .unreadable(let reason): "cannot read \(path): \(reason)"
        case .tooLarge(let size?, let limit): "\(path) is \(size) bytes, over the \(limit)-byte limit"
        case .tooLarge(nil, let limit): "\(path) holds more than \(limit) bytes, the limit"
        }
    }
}

/// Reads a whole file that is expected to be small, never more than a limit: a regular file over
/// the limit is refused from its size without reading it, and anything else (standard input, a
/// pipe, `/dev/zero`) is read in chunks and refused as soon as it passes the limit. Every command
/// that reads a file from disk whole (association files, entitlements, app parts) reads it here.
public enum BoundedFile {
    /// The bytes of `path` (`-` is standard input), at most `limit` of them.
    /// - Throws: ``BoundedFileError``.
    public static func read(path: String, limit: Int) throws(BoundedFileError) -> [UInt8] {
        let handle: FileHandle
        if path == "-" {
            handle = FileHandle.standardInput
        } else {
            // open(2) itself, so that the reason is the system's words ("No such file or
            // directory"), not Foundation's generic ones.
            // Non-blocking, so a FIFO with no writer (a config file name taken by `mkfifo`) opens
            // at once instead of waiting forever; blocking again for the reads, which then end
            // at once there (no writer: end of file) and wait for data from a writer that is there.
            let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
            guard descriptor >= 0 else { throw .unreadable(SystemReason.text(errno: errno)) }
            let flags = fcntl(descriptor, F_GETFL)
            if flags >= 0 { _ = fcntl(descriptor, F_SETFL, flags & ~O_NONBLOCK) }
            handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: false)
        }
        defer { if path != "-" { try? handle.close() } }
        return try read(handle, limit: limit)
    }

    /// The bytes of an open file, at most `limit` of them.
    public static func read(_ handle: FileHandle, limit: Int) throws(BoundedFileError) -> [UInt8] {
        let limit = max(0, limit)
        var status = stat()
        var bytes: [UInt8] = []
        if fstat(handle.fileDescriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG {
            guard Int(status.st_size) <= limit else { throw .tooLarge(size: Int(status.st_size), limit: limit) }
            // Room for the whole file at once: growing by doubling held the old and the new buffer
            // together (a 220 MB .ipa peaked at 281 MB). One byte more sees a file that grew.
            bytes.reserveCapacity(Int(status.st_size) + 1)
        }
        while true {
            let chunk: Data?
            do {
                chunk = try handle.read(upToCount: min(1 << 20, limit - bytes.count + 1))
            } catch {
                throw .unreadable(SystemReason.of(error))
            }
            guard let chunk, !chunk.isEmpty else { return bytes }
            bytes.append(contentsOf: chunk)
            if bytes.count > limit {
                // A regular file that grew while it was read has a size again.
                let size = fstat(handle.fileDescriptor, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG ? Int(status.st_size) : nil
                throw .tooLarge(size: size.flatMap { $0 > limit ? $0 : nil }, limit: limit)
            }
        }
    }
}
