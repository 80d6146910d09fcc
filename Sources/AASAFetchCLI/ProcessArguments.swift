import Glibc

/// The process's command line.
///
/// The Swift runtime's `CommandLine.arguments` comes back empty on Linux when a library loaded
/// before the program (`LD_PRELOAD`: libfaketime, for one) changed the environment first, and
/// without `/proc`. So when it is empty, `/proc/self/cmdline` is read here; empty only when that
/// fails too (no `/proc`), which ``AASAFetchCommand/prepareProcess()`` reports.
enum ProcessArguments {
    /// The arguments, the program's name first.
    static let current: [String] = {
        let runtime = CommandLine.arguments
        return runtime.isEmpty ? parse(readCommandLine()) : runtime
    }()

    /// The first argument that is not UTF-8, by its position (1 is the first after the program's
    /// name), with its bytes escaped (`st\xFF`); `nil` when all are. Such an argument reaches the
    /// commands with U+FFFD in place of its bytes, so a path would name another file: the run
    /// refuses it instead (``AASAFetchCommand/runFromCommandLine()``).
    static let firstNotUTF8: (position: Int, escaped: String)? = {
        var raw: [[UInt8]] = []
        if !CommandLine.arguments.isEmpty {
            for index in 0..<Int(CommandLine.argc) {
                guard let pointer = CommandLine.unsafeArgv[index] else { continue }
                raw.append(Array(UnsafeBufferPointer(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: strlen(pointer))))
            }
        } else {
            raw = readCommandLine().split(separator: 0, omittingEmptySubsequences: false).map(Array.init)
        }
        for (position, bytes) in raw.enumerated().dropFirst() where String(validating: bytes, as: UTF8.self) == nil {
            let escaped = bytes.map { $0 >= 0x20 && $0 < 0x7F ? String(UnicodeScalar($0)) : "\\x" + String($0, radix: 16, uppercase: true).leftPadded(to: 2) }.joined()
            return (position, escaped)
        }
        return nil
    }()

    /// `/proc/self/cmdline`: the arguments, each ended by a NUL byte.
    static func parse(_ bytes: [UInt8]) -> [String] {
        guard !bytes.isEmpty else { return [] }
        var parts = bytes.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        if bytes.last == 0 { parts.removeLast() }
        return parts
    }

    private static func readCommandLine() -> [UInt8] {
        let descriptor = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return [] }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return bytes
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
