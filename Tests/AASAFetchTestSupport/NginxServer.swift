import Foundation
import Glibc
import Synchronization

/// One `server {}` block of an ``NginxServer``.
public struct NginxVirtualHost: Sendable {
    /// The `server_name` list (SNI and Host are matched against it).
    public var serverNames: [String]
    /// PEM certificate served for these names.
    public var certificatePath: String
    /// PEM private key of the certificate.
    public var keyPath: String
    /// The `root` folder files are served from.
    public var documentRoot: String
    /// Raw directives placed inside the block, each ending with `;` or `}`
    /// (e.g. `return 301 https://elsewhere.test/;`, `location /x { gzip_static on; }`, `add_header X-A b;`).
    public var directives: [String]

    /// Creates a virtual host.
    public init(serverNames: [String], certificatePath: String, keyPath: String, documentRoot: String, directives: [String] = []) {
        self.serverNames = serverNames
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        self.documentRoot = documentRoot
        self.directives = directives
    }

    /// Creates a virtual host serving `leaf` for its names.
    public init(certificate leaf: LeafCertificate, serverNames: [String]? = nil, documentRoot: String, directives: [String] = []) {
        self.init(
            serverNames: serverNames ?? leaf.names, certificatePath: leaf.certificatePath, keyPath: leaf.keyPath,
            documentRoot: documentRoot, directives: directives)
    }
}

/// A request nginx logged.
public struct NginxRequest: Sendable, Hashable {
    /// The request URI (path and query).
    public var uri: String
    /// The Host header (or SNI name).
    public var host: String
    /// The User-Agent header.
    public var userAgent: String
    /// `HTTP/1.1` or `HTTP/2.0`.
    public var serverProtocol: String
    /// The status nginx answered.
    public var status: Int
    /// nginx's serial number of the connection that carried the request (equal numbers: one connection).
    public var connection: Int
}

/// A real nginx on 127.0.0.1 serving HTTPS virtual hosts from a temporary prefix.
///
/// ``start(hosts:http2:httpDirectives:)`` writes the configuration, starts `nginx` as a child
/// (master and one worker, not daemonised), and waits until it accepts connections. Always call
/// ``stop()`` (e.g. in a `defer`); a watchdog shell also stops nginx if the test process dies.
public final class NginxServer: Sendable {
    /// The port nginx listens on (on 127.0.0.1).
    public let port: Int
    /// The temporary prefix holding configuration and logs.
    public let prefix: URL
    private let process: Mutex<Process?>
    private let watchdog: Mutex<Process?>

    /// The curl `--connect-to` entry sending every host to this server.
    public var connectTo: String { "::127.0.0.1:\(port)" }

    private init(port: Int, prefix: URL, process: Process, watchdog: Process?) {
        self.port = port
        self.prefix = prefix
        self.process = Mutex(process)
        self.watchdog = Mutex(watchdog)
    }

    deinit {
        stop()
    }

    /// The path of nginx, or `nil` when it is not installed.
    public static var executable: String? {
        ChildProcess.find("nginx", preferring: ["/usr/sbin/nginx"])
    }

    /// Starts nginx with these virtual hosts (the first is the default server).
    /// - Parameters:
    ///   - hosts: The virtual hosts.
    ///   - http2: Whether to offer HTTP/2 in ALPN.
    ///   - httpDirectives: Raw directives for the `http {}` block.
    /// - Throws: ``TestSupportError`` when nginx is missing or does not come up within 10 s.
    public static func start(hosts: [NginxVirtualHost], http2: Bool = true, httpDirectives: [String] = []) async throws
        -> NginxServer
    {
        guard let nginx = executable else {
            throw TestSupportError(
                "nginx is not installed (looked in /usr/sbin and PATH); install it with `apt-get install -y nginx-light`")
        }
        guard !hosts.isEmpty else { throw TestSupportError("NginxServer needs at least one virtual host") }
        Loopback.ignoreSIGPIPE()
        let version = (try? ChildProcess.run(nginx, ["-V"], timeout: .seconds(10)).standardError) ?? ""
        var lastError = "no attempt made"
        for _ in 0..<5 {
            let port = try Loopback.freePort()
            let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-nginx-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: prefix.appendingPathComponent("tmp"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: prefix.appendingPathComponent("logs"), withIntermediateDirectories: true)
            let configuration = Self.configuration(
                prefix: prefix.path, port: port, hosts: hosts, http2: http2, httpDirectives: httpDirectives,
                nginxVersionText: version)
            try configuration.write(to: prefix.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)

            let process = Process()
            process.executableURL = URL(fileURLWithPath: nginx)
            process.arguments = [
                "-p", prefix.path + "/", "-c", prefix.appendingPathComponent("nginx.conf").path,
                "-e", prefix.appendingPathComponent("error.log").path,
            ]
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let watchdog = ChildProcess.startWatchdog(for: process.processIdentifier, removing: prefix)

            let up = await waitUntil(timeout: .seconds(10)) {
                !process.isRunning || Loopback.accepts(port: port)
            }
            if up, process.isRunning {
                return NginxServer(port: port, prefix: prefix, process: process, watchdog: watchdog)
            }
            ChildProcess.terminate(process)
            if let watchdog, watchdog.isRunning { kill(watchdog.processIdentifier, SIGKILL) }
            let log = (try? String(contentsOf: prefix.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(at: prefix)
            lastError = up ? log : "nginx did not accept connections within 10 s\n\(log)"
            if !log.contains("Address already in use") {
                break
            }
        }
        throw TestSupportError("nginx failed to start: \(lastError)")
    }

    /// Stops nginx (SIGTERM, SIGKILL after 5 s) and removes its prefix. Idempotent.
    public func stop() {
        let running = process.withLock { process -> Process? in
            let current = process
            process = nil
            return current
        }
        let guardian = watchdog.withLock { watchdog -> Process? in
            let current = watchdog
            watchdog = nil
            return current
        }
        if let running {
            ChildProcess.terminate(running, grace: .seconds(5))
            try? FileManager.default.removeItem(at: prefix)
        }
        if let guardian, guardian.isRunning {
            // The watchdog shell defers SIGTERM while it sleeps; it holds no resources, so kill it.
            kill(guardian.processIdentifier, SIGKILL)
        }
    }

    /// The requests nginx logged so far, oldest first.
    public func requests() -> [NginxRequest] {
        let log = (try? String(contentsOf: prefix.appendingPathComponent("access.log"), encoding: .utf8)) ?? ""
        return log.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 6 else { return nil }
            return NginxRequest(
                uri: fields[0], host: fields[1], userAgent: fields[2], serverProtocol: fields[3],
                status: Int(fields[4]) ?? 0, connection: Int(fields[5]) ?? 0)
        }
    }

    /// The contents of nginx's error log (for failure messages).
    public func errorLog() -> String {
        (try? String(contentsOf: prefix.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
    }

    // MARK: - Configuration

    static func configuration(
        prefix: String, port: Int, hosts: [NginxVirtualHost], http2: Bool, httpDirectives: [String],
        nginxVersionText: String
    ) -> String {
        var temporaryPaths = ["client_body_temp_path \(prefix)/tmp/client_body;"]
        for module in ["proxy", "fastcgi", "uwsgi", "scgi"] where !nginxVersionText.contains("--without-http_\(module)_module") {
            temporaryPaths.append("\(module)_temp_path \(prefix)/tmp/\(module);")
        }
        let servers = hosts.enumerated().map { index, host in
            """
                server {
                    listen 127.0.0.1:\(port) ssl\(http2 ? " http2" : "")\(index == 0 ? " default_server" : "");
                    server_name \(host.serverNames.joined(separator: " "));
                    ssl_certificate \(host.certificatePath);
                    ssl_certificate_key \(host.keyPath);
                    root \(host.documentRoot);
                    \(host.directives.joined(separator: "\n            "))
                }
            """
        }
        return """
            daemon off;
            master_process on;
            worker_processes 1;
            pid \(prefix)/nginx.pid;
            error_log \(prefix)/error.log info;
            \(getuid() == 0 ? "user root;" : "")
            events {
                worker_connections 1024;
            }
            http {
                default_type application/octet-stream;
                types {
                    application/json json;
                    text/plain txt;
                    text/html html;
                }
                log_format aasa '$request_uri\\t$host\\t$http_user_agent\\t$server_protocol\\t$status\\t$connection';
                access_log \(prefix)/access.log aasa;
                \(temporaryPaths.joined(separator: "\n    "))
                keepalive_requests 100000;
                ssl_protocols TLSv1.2 TLSv1.3;
                \(httpDirectives.joined(separator: "\n    "))
            \(servers.joined(separator: "\n"))
            }

            """
    }
}
