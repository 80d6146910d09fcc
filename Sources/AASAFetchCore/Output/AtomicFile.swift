import Foundation
import Glibc

/// A file replaced in one step, for readers that may look at any moment (node_exporter's textfile
/// collector, a web server serving the status page).
///
/// The bytes go to a temporary file in the same folder, named `.NAME.XXXXXX` (hidden, and never
/// ending in the target's extension, so a collector that reads `*.prom` never picks it up), are
/// flushed to disk, get their mode, and the file is renamed over the target. `rename(2)` within one
/// file system is atomic: a reader opens either the old file or the new one, never a part of
/// either. On failure the temporary file is removed and the old file stays as it was.
///
/// Only a regular file is replaced. A symbolic link is followed, so the link stays and the file it
/// leads to is replaced (in that file's folder). A device, pipe, socket or folder is refused:
/// renaming over `/dev/null` or `/dev/stdout` would replace the node itself (as root, `/dev` is
/// writable), which is never what was meant.
public enum AtomicFile {
    /// Why a write failed.
    public struct WriteError: Error, Sendable, CustomStringConvertible {
        /// What failed, with the system's reason.
        public var message: String
        public var description: String { message }
    }

    /// Writes `bytes` to `path` atomically (see ``AtomicFile``), with permissions `mode`
    /// (default `0644`: a collector usually runs as another user).
    public static func write(_ bytes: [UInt8], to given: String, mode: mode_t = 0o644) throws(WriteError) {
        try write(to: given, mode: mode) { emit in try emit(bytes) }
    }

    /// Writes what `produce` hands to its `emit`, piece by piece, to `path` atomically, with
    /// permissions `mode`: a large file (a status page of many hosts) is never whole in memory.
    /// An error `produce` throws leaves the old file as it was (a ``WriteError`` as it is, any
    /// other error as its description).
    public static func write(
        to given: String, mode: mode_t = 0o644, producing produce: (_ emit: ([UInt8]) throws -> Void) throws -> Void
    ) throws(WriteError) {
        let path: String
        switch target(of: given) {
        case .success(let resolved): path = resolved
        case .failure(let error): throw error
        }
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().path
        var template = Array("\(folder)/.\(url.lastPathComponent).XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw WriteError(message: "cannot create a file in \(folder): \(lastError())") }
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var closed = false
        defer {
            if !closed { close(fd) }
        }
        func fail(_ what: String) -> WriteError {
            let error = WriteError(message: "\(what) \(temporary): \(lastError())")
            unlink(temporary)
            return error
        }
        func writeAll(_ bytes: [UInt8]) throws(WriteError) {
            var written = 0
            while written < bytes.count {
                let count = bytes.withUnsafeBytes { buffer in
                    Glibc.write(fd, buffer.baseAddress! + written, buffer.count - written)
                }
                if count < 0 {
                    if errno == EINTR { continue }
                    throw fail("cannot write")
                }
                written += count
            }
        }
        // Pieces gathered to 64 KiB a write; a piece that large on its own is written as it is.
        var pending: [UInt8] = []
        do {
            try produce { bytes in
                if pending.isEmpty && bytes.count >= 1 << 16 {
                    try writeAll(bytes)
                    return
                }
                pending += bytes
                if pending.count >= 1 << 16 {
                    try writeAll(pending)
                    pending.removeAll(keepingCapacity: true)
                }
            }
            try writeAll(pending)
        } catch let error as WriteError {
            unlink(temporary)
            throw error
        } catch {
            unlink(temporary)
            throw WriteError(message: "\(error)")
        }
        guard fchmod(fd, mode) == 0 else { throw fail("cannot set the mode of") }
        guard fsync(fd) == 0 else { throw fail("cannot flush") }
        closed = true
        guard close(fd) == 0 else { throw fail("cannot close") }
        guard rename(temporary, path) == 0 else {
            let error = WriteError(message: "cannot rename \(temporary) to \(path): \(lastError())")
            unlink(temporary)
            throw error
        }
        // Make the rename itself durable (best effort: some file systems refuse fsync on a folder).
        let directory = open(folder, O_RDONLY | O_DIRECTORY)
        if directory >= 0 {
            _ = fsync(directory)
            close(directory)
        }
    }

    /// Whether a file can be written at `path` (nothing or a regular file is there, through its
    /// symbolic links, and its folder exists and is writable), with the reason when not: checked
    /// before a long run, so a typo fails at once.
    public static func checkWritable(_ given: String) -> String? {
        let path: String
        switch target(of: given) {
        case .success(let resolved): path = resolved
        case .failure(let error): return error.message
        }
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().path
        var info = stat()
        guard stat(folder, &info) == 0 else {
            return errno == ENOENT ? "the folder \(folder) does not exist" : "cannot look at the folder \(folder): \(lastError())"
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { return "\(folder) is not a folder" }
        guard access(folder, W_OK) == 0 else { return "cannot write in \(folder): \(lastError())" }
        return nil
    }

    /// The file a write to `path` replaces: `path` when nothing or a regular file is there, the
    /// file its symbolic links lead to when it is one; an error for anything else.
    static func target(of path: String) -> Result<String, WriteError> {
        // `/dev/stdout` under cron is a link to the log file that standard output appends to:
        // renaming over it would replace the log, so a descriptor's name is refused whatever it
        // leads to.
        if let name = descriptorName(on: path) {
            return .failure(WriteError(message: "\(path) names a descriptor of this process (\(name)), not a file, so it is not replaced; give a file name (- for standard output where a command takes it)"))
        }
        var info = stat()
        guard lstat(path, &info) == 0 else {
            // Nothing there (or a folder on the way is missing: the folder check says which).
            return errno == ENOENT || errno == ENOTDIR ? .success(path) : .failure(WriteError(message: "cannot look at \(path): \(lastError())"))
        }
        var resolved = path
        if info.st_mode & S_IFMT == S_IFLNK {
            guard let real = realpath(path, nil) else {
                return .failure(WriteError(message: "\(path) is a symbolic link that leads nowhere (\(lastError()))"))
            }
            resolved = String(cString: real)
            free(real)
            guard stat(resolved, &info) == 0 else { return .failure(WriteError(message: "cannot look at \(resolved): \(lastError())")) }
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            return .success(resolved)
        case S_IFDIR:
            return .failure(WriteError(message: "\(path) is a folder"))
        default:
            return .failure(WriteError(message: "\(path) is not a regular file (a device, pipe or socket), so it is not replaced; give a file name (- for standard output where a command takes it)"))
        }
    }

    /// The first name on the way from `path` to its file (`path` itself, then each symbolic link's
    /// target) that names an open descriptor: `/dev/stdout`, `/dev/stderr`, `/dev/stdin`,
    /// `/dev/fd/N`, `/proc/PID/fd/N`. `nil` when none does.
    static func descriptorName(on path: String) -> String? {
        var current = URL(fileURLWithPath: path).standardizedFileURL.path
        for _ in 0..<40 {
            if ["/dev/stdout", "/dev/stderr", "/dev/stdin"].contains(current) || current.hasPrefix("/dev/fd/")
                || current.hasPrefix("/proc/") && current.split(separator: "/").dropFirst(2).first == "fd" {
                return current
            }
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let count = readlink(current, &buffer, buffer.count - 1)
            guard count > 0 else { return nil }
            let target = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let base = URL(fileURLWithPath: current).deletingLastPathComponent()
            current = (target.hasPrefix("/") ? URL(fileURLWithPath: target) : base.appendingPathComponent(target)).standardizedFileURL.path
        }
        return nil
    }

    private static func lastError() -> String { SystemReason.text(errno: errno) }
}
