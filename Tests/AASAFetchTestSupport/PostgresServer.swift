import Foundation
import Glibc
import Synchronization

/// A real PostgreSQL server for tests: a fresh cluster in a temp folder, listening on 127.0.0.1 at
/// a free port with trust authentication, started with `pg_ctl` (as the `postgres` user when the
/// tests run as root, since the server refuses to run as root) and stopped with `stop()`.
public final class PostgresServer: Sendable {
    /// The port on 127.0.0.1.
    public let port: Int
    /// The cluster's folder.
    public let directory: URL
    /// The `postgres` user's password when the server checks passwords (`start(password:)`).
    public let password: String?
    private let process: Mutex<Process?>

    /// A libpq URL for the `postgres` database (with the password, when there is one).
    public var url: String { "postgresql://postgres\(password.map { ":\($0)" } ?? "")@127.0.0.1:\(port)/postgres?connect_timeout=5" }

    private init(port: Int, directory: URL, process: Process, password: String?) {
        self.port = port
        self.directory = directory
        self.process = Mutex(process)
        self.password = password
    }

    deinit {
        stop()
    }

    /// The newest installed server's `bin` folder, e.g. `/usr/lib/postgresql/15/bin`.
    public static var binDirectory: String? {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap { Int($0) }.sorted()
        guard let newest = versions.last else { return nil }
        let bin = "\(root)/\(newest)/bin"
        return FileManager.default.isExecutableFile(atPath: "\(bin)/pg_ctl") ? bin : nil
    }

    /// Creates a cluster and starts the server; waits (bounded) until it accepts connections.
    /// - Parameter password: when given, TCP logins need it (SCRAM), so tests can try a wrong one;
    ///   otherwise every login is trusted.
    /// - Throws: ``TestSupportError`` when PostgreSQL is not installed or does not start.
    public static func start(password: String? = nil) async throws -> PostgresServer {
        guard let bin = binDirectory else {
            throw TestSupportError("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/pg_ctl); run scripts/install-deps")
        }
        let root = getuid() == 0
        let directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("aasa-pg-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if root {
            let chown = try ChildProcess.run("/bin/chown", ["-R", "postgres:postgres", directory.path], timeout: .seconds(10))
            guard chown.status == 0 else { throw TestSupportError("chown failed: \(chown.standardError)") }
        }
        func run(_ tool: String, _ arguments: [String], timeout: Duration = .seconds(60)) throws -> ChildProcess.Output {
            if root {
                return try ChildProcess.run("/usr/sbin/runuser", ["-u", "postgres", "--", "\(bin)/\(tool)"] + arguments, timeout: timeout)
            }
            return try ChildProcess.run("\(bin)/\(tool)", arguments, timeout: timeout)
        }
        let data = directory.appendingPathComponent("data").path
        var authentication = ["--auth=trust"]
        if let password {
            let file = directory.appendingPathComponent("pwfile")
            try Data((password + "\n").utf8).write(to: file)
            if root { _ = try ChildProcess.run("/bin/chown", ["postgres:postgres", file.path], timeout: .seconds(10)) }
            authentication = ["--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile=\(file.path)"]
        }
        let initdb = try run("initdb", ["-D", data, "-U", "postgres", "-E", "UTF8", "--no-sync", "--locale=C"] + authentication)
        guard initdb.status == 0 else { throw TestSupportError("initdb failed: \(initdb.standardError)") }
        var lastError = ""
        for _ in 0..<5 {
            let port = try Loopback.freePort()
            switch try await launch(bin: bin, data: data, directory: directory, port: port) {
            case .success(let process):
                return PostgresServer(port: port, directory: directory, process: process, password: password)
            case .failure(let error):
                lastError = error.description
            }
        }
        try? FileManager.default.removeItem(at: directory)
        throw TestSupportError("PostgreSQL did not start: \(lastError)")
    }

    /// Starts the server of the cluster `data` on `port` and waits (bounded) until it accepts
    /// connections; `.failure` with its log when it does not (e.g. the port was taken).
    private static func launch(bin: String, data: String, directory: URL, port: Int) async throws -> Result<Process, TestSupportError> {
        // The server runs in the foreground (as nginx does in NginxServer): a daemonised one keeps
        // an inherited descriptor open and Foundation's Process never sees pg_ctl exit. setpriv
        // execs, so the child's pid is the server's own.
        let server = ["\(bin)/postgres", "-D", data, "-p", "\(port)", "-h", "127.0.0.1", "-k", directory.path,
                      "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=60", "-c", "shared_buffers=16MB"]
        let process = Process()
        if getuid() == 0 {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=postgres", "--regid=postgres", "--init-groups", "--"] + server
        } else {
            process.executableURL = URL(fileURLWithPath: server[0])
            process.arguments = Array(server.dropFirst())
        }
        let log = directory.appendingPathComponent("log-\(port)-\(UUID().uuidString.prefix(8))")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let logHandle = try FileHandle(forWritingTo: log)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = logHandle
        process.standardError = logHandle
        try process.run()
        try? logHandle.close()
        _ = ChildProcess.startWatchdog(for: process.processIdentifier, removing: directory)
        let deadline = ContinuousClock.now.advanced(by: .seconds(30))
        while process.isRunning, ContinuousClock.now < deadline {
            if (try? String(contentsOf: log, encoding: .utf8))?.contains("ready to accept connections") == true,
               Loopback.accepts(port: port) {
                return .success(process)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? "no log"
        ChildProcess.terminate(process, grace: .seconds(3))
        return .failure(TestSupportError(text))
    }

    /// Kills the server (SIGQUIT: an immediate shutdown, as a crash or a lost machine would end it)
    /// and keeps its cluster, so ``restart()`` can start it again on the same port.
    public func kill() {
        let running = process.withLock { process -> Process? in
            defer { process = nil }
            return process
        }
        guard let running, running.isRunning else { return }
        Glibc.kill(running.processIdentifier, SIGQUIT)
        if !ChildProcess.waitForExit(running, timeout: .seconds(10)) {
            Glibc.kill(running.processIdentifier, SIGKILL)
            _ = ChildProcess.waitForExit(running, timeout: .seconds(2))
        }
    }

    /// Freezes the server (SIGSTOP to the postmaster, then to its backends): connections stay
    /// open and the kernel still accepts new ones, but nothing answers, as with a hung machine.
    public func pause() {
        let postmaster = process.withLock { $0?.processIdentifier }
        guard let postmaster else { return }
        Glibc.kill(postmaster, SIGSTOP)
        for child in Self.children(of: postmaster) { Glibc.kill(child, SIGSTOP) }
    }

    /// Lets a frozen server go on (backends first, then the postmaster).
    public func resume() {
        let postmaster = process.withLock { $0?.processIdentifier }
        guard let postmaster else { return }
        for child in Self.children(of: postmaster) { Glibc.kill(child, SIGCONT) }
        Glibc.kill(postmaster, SIGCONT)
    }

    /// The processes whose parent is `parent` (`/proc/PID/stat`, field 4).
    private static func children(of parent: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == parent ? pid : nil
        }
    }

    /// Starts a killed server again on its port, with its data (crash recovery runs first).
    public func restart() async throws {
        guard let bin = Self.binDirectory else { throw TestSupportError("PostgreSQL is not installed") }
        let data = directory.appendingPathComponent("data").path
        var lastError = ""
        // The port may still be held for a moment by the dying server's sockets.
        for _ in 0..<10 {
            switch try await Self.launch(bin: bin, data: data, directory: directory, port: port) {
            case .success(let started):
                process.withLock { $0 = started }
                return
            case .failure(let error):
                lastError = error.description
                try await Task.sleep(for: .milliseconds(300))
            }
        }
        throw TestSupportError("PostgreSQL did not start again: \(lastError)")
    }

    /// Stops the server at once (SIGQUIT, then SIGKILL) and removes its folder. Idempotent.
    public func stop() {
        kill()
        try? FileManager.default.removeItem(at: directory)
    }
}
