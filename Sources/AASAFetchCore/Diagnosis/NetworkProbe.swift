import Foundation
import Glibc
import Synchronization

/// The two socket-level checks `diagnose` makes before its download (its `dns` and `tcp` steps):
/// every address of a host and a bare TCP connect. ``SystemNetworkProbe`` makes them for real;
/// unit tests of the diagnosis script them.
public protocol NetworkProbing: Sendable {
    /// Every address `host` resolves to (IPv4 and IPv6, deduplicated, in resolver order), or the
    /// resolver's words; a failure with ``NetworkProbeError/timedOut`` when no answer came within
    /// `timeout` seconds.
    func resolve(_ host: String, timeout: Double) async -> Result<[String], NetworkProbeError>
    /// Connects to `address`:`port` (a numeric address) and closes at once.
    func connect(address: String, port: Int, timeout: Double) async -> NetworkConnectOutcome
}

/// What a TCP connect attempt gave.
public enum NetworkConnectOutcome: Sendable, Equatable {
    /// Connected after this many milliseconds.
    case connected(milliseconds: Int)
    /// Refused or unreachable, with the system's words.
    case failed(String)
    /// No answer within the timeout.
    case timedOut
    /// This process has no descriptor left for the socket (the system's words): the run's
    /// shortage, not the host's failure.
    case descriptorsExhausted(String)
}

/// A resolver failure.
public struct NetworkProbeError: Error, Sendable, Equatable {
    /// The resolver's words.
    public var message: String
    /// Whether the resolver failed because this process has no descriptor left (it could not
    /// read `/etc/hosts` or open its socket): the run's shortage, not the host's failure.
    public var descriptorsExhausted: Bool
    /// Whether no answer came within the time allowed (the name servers are silent or slow).
    public var timedOut: Bool

    /// Creates an error.
    public init(message: String, descriptorsExhausted: Bool = false, timedOut: Bool = false) {
        self.message = message
        self.descriptorsExhausted = descriptorsExhausted
        self.timedOut = timedOut
    }
}

/// The real probe: `getaddrinfo` and a non-blocking `connect`, each on a thread of its own.
public struct SystemNetworkProbe: NetworkProbing {
    /// Creates the probe.
    public init() {}

    public func resolve(_ host: String, timeout: Double) async -> Result<[String], NetworkProbeError> {
        await NetworkProbe.resolve(host, timeout: timeout)
    }

    public func connect(address: String, port: Int, timeout: Double) async -> NetworkConnectOutcome {
        await NetworkProbe.connect(address: address, port: port, timeout: timeout)
    }
}

/// The two socket-level checks of `diagnose` that libcurl does not expose step by step: every
/// address of a host (`getaddrinfo`) and a bare TCP connect with a timeout. The only file of the
/// core that calls the C library directly; nothing of it leaks out (strings and numbers only).
enum NetworkProbe {
    /// What a TCP connect attempt gave.
    typealias ConnectOutcome = NetworkConnectOutcome
    /// A resolver failure.
    typealias ProbeError = NetworkProbeError

    /// Every address `host` resolves to (IPv4 and IPv6, deduplicated, in resolver order), or the
    /// resolver's error text. Runs off the cooperative thread pool, at most `timeout` seconds: the
    /// system resolver waits its own timeouts (5 s a try by default, several tries) for silent
    /// name servers; past the limit the lookup is left to end on its own thread, as libcurl's is.
    static func resolve(_ host: String, timeout: Double) async -> Result<[String], ProbeError> {
        await withCheckedContinuation { continuation in
            let once = ResumeOnce(continuation)
            let thread = Thread { once.resume(resolveNow(host)) }
            thread.start()
            DispatchQueue.global().asyncAfter(deadline: .now() + max(0.001, timeout)) {
                once.resume(.failure(ProbeError(message: "no answer from the name servers within \(Diagnoser.Walk.seconds(timeout)) s", timedOut: true)))
            }
        }
    }

    /// Resumes a continuation with the first result handed to it; later ones are dropped.
    private final class ResumeOnce<T: Sendable>: Sendable {
        private let continuation: Mutex<CheckedContinuation<T, Never>?>

        init(_ continuation: CheckedContinuation<T, Never>) {
            self.continuation = Mutex(continuation)
        }

        func resume(_ value: T) {
            continuation.withLock { waiting in
                waiting?.resume(returning: value)
                waiting = nil
            }
        }
    }

    /// Connects to `address`:`port` and closes at once. Runs off the cooperative thread pool.
    static func connect(address: String, port: Int, timeout: Double) async -> ConnectOutcome {
        await offPool { connectNow(address: address, port: port, timeout: timeout) }
    }

    /// Whether `text` is a numeric IPv4 or IPv6 address (optionally in brackets).
    static func isNumeric(_ text: String) -> Bool {
        let bare = text.hasPrefix("[") && text.hasSuffix("]") ? String(text.dropFirst().dropLast()) : text
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, bare, &v4) == 1 || inet_pton(AF_INET6, bare, &v6) == 1
    }

    private static func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: work()) }
            thread.start()
        }
    }

    private static func resolveNow(_ host: String) -> Result<[String], ProbeError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, "443", &hints, &list)
        guard status == 0 else {
            let failedErrno = errno
            // The resolver hides why it could not read its files: EAI_SYSTEM with EMFILE says it,
            // a name "not known" says nothing, so a descriptor that cannot be opened now tells.
            let exhausted = (status == EAI_SYSTEM && (failedErrno == EMFILE || failedErrno == ENFILE)) || SystemReason.descriptorsExhaustedNow
            return .failure(ProbeError(message: String(cString: gai_strerror(status)), descriptorsExhausted: exhausted))
        }
        defer { freeaddrinfo(list) }
        var addresses: [String] = []
        var node = list
        while let current = node {
            if let text = numericAddress(current.pointee.ai_addr, length: current.pointee.ai_addrlen), !addresses.contains(text) {
                addresses.append(text)
            }
            node = current.pointee.ai_next
        }
        return addresses.isEmpty ? .failure(ProbeError(message: "no addresses")) : .success(addresses)
    }

    private static func numericAddress(_ address: UnsafeMutablePointer<sockaddr>?, length: socklen_t) -> String? {
        guard let address else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(address, length, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0 else { return nil }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func connectNow(address: String, port: Int, timeout: Double) -> ConnectOutcome {
        var storage = sockaddr_storage()
        var length: socklen_t = 0
        var family: Int32 = AF_INET
        let bare = address.hasPrefix("[") && address.hasSuffix("]") ? String(address.dropFirst().dropLast()) : address
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, bare, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = UInt16(truncatingIfNeeded: port).bigEndian
            withUnsafeBytes(of: v4) { bytes in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) } }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        } else if inet_pton(AF_INET6, bare, &v6.sin6_addr) == 1 {
            family = AF_INET6
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = UInt16(truncatingIfNeeded: port).bigEndian
            withUnsafeBytes(of: v6) { bytes in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) } }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            return .failed("'\(address)' is not a numeric address")
        }
        let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else {
            let failedErrno = errno
            if failedErrno == EMFILE || failedErrno == ENFILE { return .descriptorsExhausted(SystemReason.text(errno: failedErrno)) }
            return .failed(SystemReason.text(errno: failedErrno))
        }
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let started = ContinuousClock.now
        let result = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
        }
        if result != 0 && errno != EINPROGRESS {
            return .failed(SystemReason.text(errno: errno))
        }
        if result != 0 {
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&poller, 1, Int32(max(1, min(timeout, 600) * 1000)))
            if ready == 0 { return .timedOut }
            if ready < 0 { return .failed(SystemReason.text(errno: errno)) }
            var error: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size)
            if error != 0 { return .failed(SystemReason.text(errno: error)) }
        }
        let elapsed = ContinuousClock.now - started
        return .connected(milliseconds: Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000))
    }
}
