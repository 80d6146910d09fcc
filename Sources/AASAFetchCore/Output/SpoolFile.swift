import Foundation

/// A temporary file that keeps what a command writes until it can be written out whole or in
/// order (`report`'s page, `show`'s table and JSON): made in `TMPDIR` (else `/tmp`) and unlinked at
/// once, so it goes with the process whatever happens. A failure to make it or write it is kept
/// (``failure``) and thrown by every read.
public final class SpoolFile: @unchecked Sendable {
    /// Why what was written could not be kept or read back.
    public struct Failure: Error, CustomStringConvertible {
        /// What failed, with the system's reason.
        public var description: String
    }

    private let lock = NSLock()
    private var descriptor: Int32 = -1
    private var written = 0
    private var storedFailure: Failure?
    private let purpose: String

    /// A spool; `purpose` names it in messages (`the page`, `the table`).
    public init(for purpose: String) {
        self.purpose = purpose
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Why what was written could not be kept; `nil` while all is well.
    public var failure: Failure? { lock.withLock { storedFailure } }

    /// The bytes written so far.
    public var size: Int { lock.withLock { written } }

    /// Appends `bytes`; returns where they start. A failure is kept, not thrown (``failure``).
    @discardableResult
    public func append(_ bytes: [UInt8]) -> Int {
        lock.withLock {
            let offset = written
            guard storedFailure == nil else { return offset }
            if descriptor < 0 {
                let folder = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
                var template = Array("\(folder)/aasa-fetch-spool.XXXXXX".utf8CString)
                descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
                guard descriptor >= 0 else {
                    storedFailure = Failure(description: "cannot create a temporary file in \(folder) for \(purpose): \(SystemReason.text(errno: errno))")
                    return offset
                }
                _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
                template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
            }
            var done = 0
            while done < bytes.count {
                let count = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress! + done, $0.count - done, off_t(offset + done)) }
                if count < 0 {
                    if errno == EINTR { continue }
                    storedFailure = Failure(description: "cannot write the temporary file of \(purpose): \(SystemReason.text(errno: errno))")
                    return offset
                }
                done += count
            }
            written += bytes.count
            return offset
        }
    }

    /// The `count` bytes at `offset`.
    public func read(at offset: Int, count: Int) throws -> [UInt8] {
        try lock.withLock {
            if let storedFailure { throw storedFailure }
            var bytes = [UInt8](repeating: 0, count: count)
            var done = 0
            while done < count {
                let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, count - done, off_t(offset + done)) }
                if got < 0, errno == EINTR { continue }
                guard got > 0 else {
                    throw Failure(description: "cannot read the temporary file of \(purpose) back: \(got < 0 ? SystemReason.text(errno: errno) : "it ended early")")
                }
                done += got
            }
            return bytes
        }
    }

    /// Everything written, in order, as text about `chunk` bytes at a time: each piece ends on a
    /// character's boundary (a piece cut inside a UTF-8 sequence would decode as U+FFFD).
    public func forEachText(_ chunk: Int = 1 << 16, _ body: (String) throws -> Void) throws {
        var carry: [UInt8] = []
        try forEachChunk(chunk) { bytes in
            carry += bytes
            // The last byte that starts a character (not 10xxxxxx): what comes before it is whole.
            var end = carry.endIndex
            while end > carry.startIndex, carry[end - 1] & 0xC0 == 0x80 { end -= 1 }
            if end > carry.startIndex, carry[end - 1] >= 0xC0 { end -= 1 }
            guard end > carry.startIndex else { return }
            try body(String(decoding: carry[..<end], as: UTF8.self))
            carry.removeSubrange(..<end)
        }
        if !carry.isEmpty { try body(String(decoding: carry, as: UTF8.self)) }
    }

    /// Everything written, in order, `chunk` bytes at a time.
    public func forEachChunk(_ chunk: Int = 1 << 16, _ body: ([UInt8]) throws -> Void) throws {
        if let failure { throw failure }
        let total = size
        var offset = 0
        while offset < total {
            let count = min(chunk, total - offset)
            try body(try read(at: offset, count: count))
            offset += count
        }
    }
}
