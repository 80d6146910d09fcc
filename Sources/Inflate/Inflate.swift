internal import CZlib

/// Raw DEFLATE decompression (RFC 1951, as stored in zip entries) through zlib.
///
/// This is the only module that sees zlib's C types. Output is capped: a hostile entry cannot
/// expand past `limit` bytes (a zip bomb stops at the cap with ``Failure/tooLarge(limit:)``).
public enum Inflate {
    /// Why a DEFLATE stream could not be decompressed.
    public enum Failure: Error, Sendable, Hashable, CustomStringConvertible {
        /// The stream is not valid DEFLATE data (zlib's message).
        case corrupt(String)
        /// The input ended before the stream's last block.
        case truncated
        /// The output would exceed the cap.
        case tooLarge(limit: Int)

        public var description: String {
            switch self {
            case .corrupt(let message): "invalid DEFLATE data: \(message)"
            case .truncated: "the DEFLATE data ends before its last block"
            case .tooLarge(let limit): "the entry expands past \(limit) bytes"
            }
        }
    }

    /// Decompresses raw DEFLATE bytes (no zlib or gzip header) piece by piece, keeping none of
    /// them: each piece of output (at most 64 KiB, in order) goes to `consume`, which returns
    /// `false` to stop there.
    ///
    /// - Parameters:
    ///   - input: The compressed bytes.
    ///   - limit: The most bytes the output may hold.
    ///   - consume: Called with each piece of output; valid only during the call.
    /// - Returns: Whether the stream was read to its end (`false`: `consume` stopped it).
    /// - Throws: ``Failure`` on corrupt or truncated input, or output past `limit`.
    @discardableResult
    public static func raw(_ input: ArraySlice<UInt8>, limit: Int,
                           consume: (UnsafeBufferPointer<UInt8>) -> Bool) throws(Failure) -> Bool {
        var given = false
        return try raw(limit: limit, input: {
            defer { given = true }
            return given ? nil : input
        }, consume: consume)
    }

    /// Decompresses raw DEFLATE bytes that arrive piece by piece (a file read in chunks): `input`
    /// gives the next piece of compressed bytes, or `nil` when there are no more. Output goes to
    /// `consume` as in ``raw(_:limit:consume:)``.
    ///
    /// - Parameters:
    ///   - limit: The most bytes the output may hold.
    ///   - input: Called for each next piece of input; `nil` ends it (then a stream not yet at its
    ///     last block is ``Failure/truncated``).
    ///   - consume: Called with each piece of output; valid only during the call.
    /// - Returns: Whether the stream was read to its end (`false`: `consume` stopped it).
    /// - Throws: ``Failure`` on corrupt or truncated input, or output past `limit`.
    @discardableResult
    public static func raw(limit: Int, input: () -> ArraySlice<UInt8>?,
                           consume: (UnsafeBufferPointer<UInt8>) -> Bool) throws(Failure) -> Bool {
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer {
            stream.deinitialize(count: 1)
            stream.deallocate()
        }
        guard czlib_inflate_init_raw(stream) == Z_OK else { throw .corrupt("zlib could not start") }
        defer { inflateEnd(stream) }

        let chunkSize = 64 * 1024
        let chunk = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: chunkSize)
        defer { chunk.deallocate() }
        var total = 0
        enum Step { case ended, stopped, needsInput }
        while let piece = input() {
            // zlib counts its input in 32 bits (a zip entry's pieces are 64 KiB).
            guard piece.count <= Int(UInt32.max) else { throw .tooLarge(limit: limit) }
            let step: Result<Step, Failure> = piece.withUnsafeBufferPointer { inputBuffer in
                stream.pointee.next_in = inputBuffer.baseAddress.map { UnsafeMutablePointer(mutating: $0) }
                stream.pointee.avail_in = UInt32(inputBuffer.count)
                defer {
                    stream.pointee.next_in = nil
                    stream.pointee.avail_in = 0
                }
                while true {
                    stream.pointee.next_out = chunk.baseAddress
                    stream.pointee.avail_out = UInt32(chunkSize)
                    let status = inflate(stream, Z_NO_FLUSH)
                    let produced = chunkSize - Int(stream.pointee.avail_out)
                    if produced > limit - total { return .failure(.tooLarge(limit: limit)) }
                    total += produced
                    if produced > 0, !consume(UnsafeBufferPointer(rebasing: chunk[0..<produced])) { return .success(.stopped) }
                    switch status {
                    case Z_STREAM_END:
                        return .success(.ended)
                    case Z_OK:
                        // Output filled the buffer: there may be more without more input.
                        if stream.pointee.avail_in == 0, produced < chunkSize { return .success(.needsInput) }
                        continue
                    case Z_BUF_ERROR:
                        // No progress possible: this piece of input is used up.
                        if stream.pointee.avail_in == 0 { return .success(.needsInput) }
                        if produced == 0 { return .failure(.corrupt("zlib made no progress")) }
                        continue
                    default:
                        let message = stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                        return .failure(.corrupt(message))
                    }
                }
            }
            switch try step.get() {
            case .ended: return true
            case .stopped: return false
            case .needsInput: continue
            }
        }
        // The input ran out before the end of the stream.
        throw .truncated
    }
}

extension Inflate {
    /// The CRC-32 (ISO 3309, as zip stores it) of bytes that follow those whose CRC-32 is `crc`
    /// (0 to start).
    public static func crc32(_ bytes: UnsafeBufferPointer<UInt8>, continuing crc: UInt32) -> UInt32 {
        var value = uLong(crc)
        guard let base = bytes.baseAddress else { return crc }
        var offset = 0
        while offset < bytes.count {
            let length = min(bytes.count - offset, Int(UInt32.max))
            value = CZlib.crc32(value, base + offset, UInt32(length))
            offset += length
        }
        return UInt32(truncatingIfNeeded: value)
    }
}
