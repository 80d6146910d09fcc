import Foundation
import Synchronization

/// What the ``FaultServer`` does with a connection or request.
public struct FaultBehavior: Sendable, Hashable, Encodable {
    /// `never-answer`, `stall-after-headers`, `reset-mid-body`, `respond`, `slow`, `barrier`, `sequence`,
    /// `endless-trailers`, `big-header`, `raw` or `hold-until-file`.
    public var action: String
    /// The HTTP status.
    public var status: Int?
    /// Response headers, in order, as `[name, value]` pairs.
    public var headers: [[String]]?
    /// The body as text.
    public var body: String?
    /// The body as base64 (wins over ``body``).
    public var bodyBase64: String?
    /// How many times the body is repeated.
    public var `repeat`: Int?
    /// Whether to gzip the body and send `Content-Encoding: gzip`.
    public var gzip: Bool?
    /// Text sent after the gzip stream, as part of the body (bytes libcurl's decoder refuses).
    public var afterGzip: String?
    /// Whether to use chunked encoding without `Content-Length`.
    public var chunked: Bool?
    /// The `Content-Length` announced by `stall-after-headers` and `reset-mid-body`.
    public var contentLength: Int?
    /// Bytes of body sent by `reset-mid-body` before the reset.
    public var partialBytes: Int?
    /// Bytes per drip for `slow`.
    public var dripBytes: Int?
    /// Seconds between drips for `slow`.
    public var dripInterval: Double?
    /// For `sequence`: the behaviour of each request in turn (the last one repeats).
    public var steps: [FaultBehavior]?
    /// For `barrier`: how many barrier requests must have arrived before any is answered.
    public var count: Int?
    /// For `barrier`: the most seconds a request waits for the others (then it gets a 503);
    /// for `hold-until-file`: the most seconds it waits for ``releaseFile``.
    public var wait: Double?
    /// For `endless-trailers`: the most trailer bytes sent.
    public var trailerBytes: Int?
    /// For `big-header`: the length of the `X-Big` header line.
    public var headerBytes: Int?
    /// For `hold-until-file`: the file whose creation releases the request.
    public var releaseFile: String?
    /// Seconds to wait after reading the request, before answering (any action).
    public var delay: Double?

    /// A chunked 200 whose trailers never end (at most `trailerBytes`).
    public static func endlessTrailers(body: String, trailerBytes: Int? = nil) -> FaultBehavior {
        var behavior = respond(body: body)
        behavior.action = "endless-trailers"
        behavior.trailerBytes = trailerBytes
        return behavior
    }

    /// A 200 with one header line of `headerBytes` bytes.
    public static func bigHeader(headerBytes: Int, body: String = "{}") -> FaultBehavior {
        var behavior = respond(body: body)
        behavior.action = "big-header"
        behavior.headerBytes = headerBytes
        return behavior
    }

    /// Bytes sent as they are, without any HTTP framing (an HTTP/0.9 answer, garbage).
    public static func raw(_ body: String) -> FaultBehavior {
        var behavior = FaultBehavior(action: "raw")
        behavior.body = body
        return behavior
    }

    /// Answers like ``respond(status:headers:body:repeat:gzip:chunked:)`` once `file` exists.
    public static func holdUntilFile(_ file: String, body: String, headers: [(String, String)] = [], wait: Double = 30) -> FaultBehavior {
        var behavior = respond(headers: headers, body: body)
        behavior.action = "hold-until-file"
        behavior.releaseFile = file
        behavior.wait = wait
        return behavior
    }

    /// Answers the Nth request (per path, SNI name or default) with the Nth behaviour; the last repeats.
    public static func sequence(_ steps: [FaultBehavior]) -> FaultBehavior {
        var behavior = FaultBehavior(action: "sequence")
        behavior.steps = steps
        return behavior
    }

    /// Accepts TCP and never completes the TLS handshake (or, per path, never answers).
    public static let neverAnswer = FaultBehavior(action: "never-answer")

    /// Sends status and headers announcing `contentLength` bytes, then nothing.
    public static func stallAfterHeaders(contentLength: Int = 1000) -> FaultBehavior {
        var behavior = FaultBehavior(action: "stall-after-headers")
        behavior.contentLength = contentLength
        return behavior
    }

    /// Sends part of the announced body, then resets the connection.
    public static func resetMidBody(contentLength: Int = 1000, partialBytes: Int = 100) -> FaultBehavior {
        var behavior = FaultBehavior(action: "reset-mid-body")
        behavior.contentLength = contentLength
        behavior.partialBytes = partialBytes
        return behavior
    }

    /// Answers with a status, headers and a body (repeated `repeat` times), optionally gzipped or chunked.
    public static func respond(
        status: Int = 200, headers: [(String, String)] = [], body: String = "", repeat count: Int = 1,
        gzip: Bool = false, chunked: Bool = false
    ) -> FaultBehavior {
        var behavior = FaultBehavior(action: "respond")
        behavior.status = status
        behavior.headers = headers.map { [$0.0, $0.1] }
        behavior.body = body
        behavior.repeat = count
        behavior.gzip = gzip
        behavior.chunked = chunked
        return behavior
    }

    /// Answers like ``respond(status:headers:body:repeat:gzip:chunked:)`` but drips the body.
    public static func slow(body: String, dripBytes: Int = 1, dripInterval: Double = 0.5) -> FaultBehavior {
        var behavior = respond(body: body)
        behavior.action = "slow"
        behavior.dripBytes = dripBytes
        behavior.dripInterval = dripInterval
        return behavior
    }

    /// Holds each request until `count` such requests have arrived, then answers `body` with 200;
    /// a request that waited `wait` seconds in vain gets 503 `barrier not reached`. When all get
    /// 200, the first was still held when the last arrived: `count` transfers were in flight at once.
    public static func barrier(count: Int, body: String, wait: Double = 10) -> FaultBehavior {
        var behavior = respond(body: body)
        behavior.action = "barrier"
        behavior.count = count
        behavior.wait = wait
        return behavior
    }

    /// Creates a behaviour from its action name; set the other fields as needed.
    public init(action: String) {
        self.action = action
    }
}

/// The script of a ``FaultServer``: a behaviour per request path, else per SNI name, else the default.
public struct FaultScript: Sendable, Hashable, Encodable {
    /// Used when neither the path nor the SNI name has its own behaviour.
    public var `default`: FaultBehavior
    /// Behaviours per SNI host name.
    public var hosts: [String: FaultBehavior]
    /// Behaviours per request path (with or without the query).
    public var paths: [String: FaultBehavior]

    /// Creates a script.
    public init(
        default defaultBehavior: FaultBehavior = .respond(status: 404, body: "not found"),
        hosts: [String: FaultBehavior] = [:],
        paths: [String: FaultBehavior] = [:]
    ) {
        self.default = defaultBehavior
        self.hosts = hosts
        self.paths = paths
    }
}

/// A request (or held connection) the ``FaultServer`` logged.
public struct FaultRequest: Sendable, Hashable, Decodable {
    /// `request`, `connection` (TCP accepted, handshake never started) or `handshake-held`.
    public var event: String
    /// The request target.
    public var path: String?
    /// The Host header.
    public var host: String?
    /// The User-Agent header.
    public var userAgent: String?
    /// The TLS server name the client sent.
    public var sni: String?
    /// Every request header, names lower-cased.
    public var headers: [String: String]
    /// The request method (`GET`, `POST`); absent for connection events.
    public var method: String?
    /// The request body as UTF-8 text (a webhook's POST); absent for connection events.
    public var body: String?
    /// Requests read and not yet being answered when this one arrived, itself included (for
    /// `request` events): the largest is the most the client had waiting on the server at once.
    public var inFlight: Int?
}

/// Our own scriptable TLS server (`Resources/faultserver.py`) for faults nginx cannot produce:
/// handshakes that never finish, stalls, resets, chunked or gzipped bodies, drips.
///
/// It listens on 127.0.0.1, exits by itself after `lifetime` seconds, and is stopped by ``stop()``
/// (call it in a `defer`).
public final class FaultServer: Sendable {
    /// The port it listens on (on 127.0.0.1).
    public let port: Int
    /// Its scratch folder (log, port file).
    public let directory: URL
    private let process: Mutex<Process?>

    /// The curl `--connect-to` entry sending every host to this server.
    public var connectTo: String { "::127.0.0.1:\(port)" }

    private init(port: Int, directory: URL, process: Process) {
        self.port = port
        self.directory = directory
        self.process = Mutex(process)
    }

    deinit {
        stop()
    }

    /// The fault server script shipped as a resource.
    public static var scriptPath: String {
        if let url = Bundle.module.url(forResource: "faultserver", withExtension: "py", subdirectory: "Resources") {
            return url.path
        }
        return TestPaths.repository.appendingPathComponent("Tests/AASAFetchTestSupport/Resources/faultserver.py").path
    }

    /// Starts a fault server.
    /// - Parameters:
    ///   - script: What to do per path and SNI name.
    ///   - certificate: The certificate and key to serve.
    ///   - lifetime: Seconds after which the server exits by itself.
    /// - Throws: ``TestSupportError`` when python3 is missing or the server does not start within 10 s.
    public static func start(script: FaultScript, certificate: LeafCertificate, lifetime: Int = 120) async throws
        -> FaultServer
    {
        guard let python = ChildProcess.find("python3", preferring: ["/usr/bin/python3", "/usr/local/bin/python3"]) else {
            throw TestSupportError("python3 is not installed")
        }
        Loopback.ignoreSIGPIPE()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-fault-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let portFile = directory.appendingPathComponent("port")
        // In a file: a script with large bodies would pass the 128 KiB limit of one argument.
        let scriptFile = directory.appendingPathComponent("script.json")
        try JSONEncoder().encode(script).write(to: scriptFile)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [
            scriptPath, "--cert", certificate.certificatePath, "--key", certificate.keyPath, "--script", "@" + scriptFile.path,
            "--log", directory.appendingPathComponent("requests.jsonl").path, "--port-file", portFile.path,
            "--lifetime", String(lifetime),
        ]
        process.standardInput = FileHandle.nullDevice
        let output = directory.appendingPathComponent("output.txt")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let handle = try FileHandle(forWritingTo: output)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        try? handle.close()

        var port = 0
        _ = await waitUntil(timeout: .seconds(10)) {
            if let text = try? String(contentsOf: portFile, encoding: .utf8), let value = Int(text) {
                port = value
                return true
            }
            return !process.isRunning
        }
        guard port > 0, process.isRunning else {
            ChildProcess.terminate(process, grace: .seconds(1))
            let log = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(at: directory)
            throw TestSupportError("the fault server did not start: \(log)")
        }
        return FaultServer(port: port, directory: directory, process: process)
    }

    /// The requests logged so far, oldest first.
    public func requests() -> [FaultRequest] {
        let log = (try? String(contentsOf: directory.appendingPathComponent("requests.jsonl"), encoding: .utf8)) ?? ""
        let decoder = JSONDecoder()
        return log.split(separator: "\n").compactMap { line in
            try? decoder.decode(FaultRequest.self, from: Data(line.utf8))
        }
    }

    /// Stops the server (SIGTERM, then SIGKILL) and removes its folder. Idempotent.
    public func stop() {
        let running = process.withLock { process -> Process? in
            let current = process
            process = nil
            return current
        }
        guard let running else { return }
        ChildProcess.terminate(running, grace: .seconds(5))
        try? FileManager.default.removeItem(at: directory)
    }
}
