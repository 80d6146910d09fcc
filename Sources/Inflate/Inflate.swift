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

    /// Decompresses raw DEFLATE bytes (no zlib or gzip header).
    ///
    /// - Parameters:
    ///   - input: The compressed bytes.
    ///   - limit: The most bytes the output may hold.
    ///   - expectedSize: A size hint for the output buffer (the zip's uncompressed size), clamped to `limit`.
    /// - Returns: The decompressed bytes.
    /// - Throws: ``Failure`` on corrupt or truncated input, or output past `limit`.
    public static func raw(_ input: ArraySlice<UInt8>, limit: Int, expectedSize: Int = 0) throws(Failure) -> [UInt8] {
        guard input.count <= Int(UInt32.max) else { throw .tooLarge(limit: limit) }
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer {
            stream.deinitialize(count: 1)
            stream.deallocate()
        }
        guard czlib_inflate_init_raw(stream) == Z_OK else { throw .corrupt("zlib could not start") }
        defer { inflateEnd(stream) }

        var output: [UInt8] = []
        // Room for the whole output at once (growing by doubling would hold the old and the new
        // buffer together: 384 MB at the step from 128 to 256 MB), but never more than the input
        // can expand to (DEFLATE's best ratio is 1,032 to 1), so a size a hostile header claims
        // reserves nothing large.
        output.reserveCapacity(min(max(expectedSize, 0), limit, input.count * 1032 + 1024))
        let chunkSize = 64 * 1024
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        let result: Result<Void, Failure> = input.withUnsafeBufferPointer { inputBuffer in
            stream.pointee.next_in = inputBuffer.baseAddress.map { UnsafeMutablePointer(mutating: $0) }
            stream.pointee.avail_in = UInt32(inputBuffer.count)
            while true {
                let status: Int32 = chunk.withUnsafeMutableBufferPointer { chunkBuffer in
                    stream.pointee.next_out = chunkBuffer.baseAddress
                    stream.pointee.avail_out = UInt32(chunkBuffer.count)
                    return inflate(stream, Z_NO_FLUSH)
                }
                let produced = chunkSize - Int(stream.pointee.avail_out)
                if produced > limit - output.count { return .failure(.tooLarge(limit: limit)) }
                output += chunk[0..<produced]
                switch status {
                case Z_STREAM_END:
                    return .success(())
                case Z_OK:
                    continue
                case Z_BUF_ERROR:
                    // No progress possible: the input ran out before the end of the stream.
                    if stream.pointee.avail_in == 0 { return .failure(.truncated) }
                    if produced == 0 { return .failure(.corrupt("zlib made no progress")) }
                    continue
                default:
                    let message = stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                    return .failure(.corrupt(message))
                }
            }
        }
        try result.get()
        return output
    }
}

extension Inflate {
    /// The CRC-32 (ISO 3309, as zip stores it) of some bytes.
    public static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: uLong = CZlib.crc32(0, nil, 0)
        var offset = 0
        bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            while offset < buffer.count {
                let length = min(buffer.count - offset, Int(UInt32.max))
                crc = CZlib.crc32(crc, base + offset, UInt32(length))
                offset += length
            }
        }
        return UInt32(truncatingIfNeeded: crc)
    }
}
