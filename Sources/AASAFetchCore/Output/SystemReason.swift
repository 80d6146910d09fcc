import Foundation
import Glibc

/// The system's words for why a file operation failed ("Not a directory", "No space left on
/// device"), for messages that name a path and then the reason.
///
/// Foundation's file APIs throw a `CocoaError` whose own description is a generic sentence ("The
/// operation could not be completed. (NSCocoaErrorDomain error 512.)"); the POSIX error under it
/// says what actually happened.
public enum SystemReason {
    /// Whether this process cannot open three more descriptors now (`EMFILE` or `ENFILE`): told
    /// right after a failure whose own words do not say (SQLite's "unable to open database file",
    /// a resolver's "Name or service not known"), it was the process's shortage. Three: SQLite
    /// opens a database, its WAL and its shared memory, and closes what it opened when one fails.
    public static var descriptorsExhaustedNow: Bool {
        descriptorsOpenable(upTo: 3) < 3
    }

    /// How many descriptors this process can open now, counted up to `limit` (each opened and
    /// closed again); `limit` as well when `/dev/null` cannot be opened for another reason than
    /// a shortage (nothing can be told then).
    public static func descriptorsOpenable(upTo limit: Int) -> Int {
        var opened: [Int32] = []
        defer { for descriptor in opened { close(descriptor) } }
        while opened.count < limit {
            let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return errno == EMFILE || errno == ENFILE ? opened.count : limit }
            opened.append(descriptor)
        }
        return limit
    }

    /// Whether the file system holding `path` (a file or folder; its parent when it does not
    /// exist) has no block left for this process: SQLite reports a full disk as an I/O error
    /// when it cannot size its shared-memory file.
    public static func diskFull(at path: String) -> Bool {
        var status = statvfs()
        let folder = FileManager.default.fileExists(atPath: path) ? path : (path as NSString).deletingLastPathComponent
        guard statvfs(folder.isEmpty ? "." : folder, &status) == 0 else { return false }
        return status.f_bavail == 0
    }

    /// `strerror(3)` of an error number.
    public static func text(errno number: Int32) -> String {
        String(cString: strerror(number))
    }

    /// The reason in `error`: the POSIX error it is or holds, in the system's words; otherwise the
    /// error number its Cocoa code stands for; otherwise its own description.
    public static func of(_ error: any Error) -> String {
        if let number = errorNumber(of: error) { return text(errno: number) }
        let described = (error as NSError).localizedDescription
        return described.isEmpty ? String(describing: error) : described
    }

    /// The POSIX error number `error` is or holds, when there is one.
    public static func errorNumber(of error: any Error) -> Int32? {
        if let posix = error as? POSIXError { return posix.code.rawValue }
        let object = error as NSError
        if object.domain == NSPOSIXErrorDomain { return Int32(truncatingIfNeeded: object.code) }
        if let underlying = object.userInfo[NSUnderlyingErrorKey] as? any Error, let number = errorNumber(of: underlying) {
            return number
        }
        guard object.domain == NSCocoaErrorDomain else { return nil }
        switch CocoaError.Code(rawValue: object.code) {
        case .fileNoSuchFile, .fileReadNoSuchFile: return ENOENT
        case .fileReadNoPermission, .fileWriteNoPermission: return EACCES
        case .fileWriteOutOfSpace: return ENOSPC
        case .fileWriteVolumeReadOnly: return EROFS
        case .fileWriteFileExists: return EEXIST
        case .fileReadTooLarge: return EFBIG
        default: return nil
        }
    }
}

extension SystemReason {
    /// Creates the folder `path` with `mode` (less the umask). With `parents`, as `mkdir -p`:
    /// missing parents are created too and a folder already there (or a link to one) is fine.
    /// Without, `path` must be new (`EEXIST` otherwise), as a private folder in a shared one must.
    /// Returns `nil` on success, otherwise the error number of the `mkdir(2)` that failed, or
    /// `ENOTDIR` when `path` or a part of it is something other than a folder.
    public static func createFolder(_ path: String, parents: Bool, mode: mode_t = 0o755) -> Int32? {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        let folder = String(trimmed)
        guard !folder.isEmpty else { return ENOENT }
        if mkdir(folder, mode) == 0 { return nil }
        var number = errno
        if number == EEXIST { return !parents ? EEXIST : isFolder(folder) ? nil : ENOTDIR }
        if number == ENOENT, parents, let slash = folder.lastIndex(of: "/"), slash != folder.startIndex {
            let parent = String(folder[..<slash])
            if let failure = createFolder(parent, parents: true, mode: mode) { return failure }
            if mkdir(folder, mode) == 0 { return nil }
            number = errno
            if number == EEXIST { return isFolder(folder) ? nil : ENOTDIR }
        }
        return number
    }

    private static func isFolder(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR
    }
}
