import Foundation
import Glibc

/// Errors of the test harnesses, with messages meant for a failing test's log.
public struct TestSupportError: Error, CustomStringConvertible, Sendable {
    /// What went wrong.
    public var message: String

    /// Creates an error.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

/// Runs short-lived helper programs (openssl) with a hard time bound.
public enum ChildProcess {
    /// What a finished program left behind.
    public struct Output: Sendable {
        /// The exit status.
        public var status: Int32
        /// Everything written to standard output.
        public var standardOutput: String
        /// Everything written to standard error.
        public var standardError: String

        /// An output read some other way (a child started by the test itself).
        public init(status: Int32, standardOutput: String, standardError: String) {
            self.status = status
            self.standardOutput = standardOutput
            self.standardError = standardError
        }
    }

    /// This process's environment without the `AASA_FETCH_*` variables, which would otherwise set
    /// options of every `aasa-fetch` a test runs (a developer's shell may have them); when the
    /// suite runs with ``TestThreads/requested`` (`AASA_TEST_THREADS`), its `AASA_FETCH_THREADS`.
    public static var inheritedEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AASA_FETCH_") }
        if let threads = TestThreads.requested {
            environment["AASA_FETCH_THREADS"] = String(threads)
        }
        return environment
    }

    /// A command line that starts `executable` with SIGINT, SIGTERM and SIGHUP at their default
    /// action and unblocked, except `ignored`, which it inherits ignored (as under `nohup`): the
    /// disposition a test sends a signal against, whatever the test runner's own is. A python3
    /// wrapper sets them and `exec`s the program, so the program keeps the wrapper's process ID.
    public static func withSignalDispositions(ignored: [Int32], _ executable: String, _ arguments: [String]) -> (executable: String, arguments: [String]) {
        let script = """
            import os, signal, sys
            stopping = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
            for number in stopping: signal.signal(number, signal.SIG_DFL)
            for number in filter(None, sys.argv[1].split(",")): signal.signal(int(number), signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, stopping)
            os.execv(sys.argv[2], sys.argv[2:])
            """
        return ("/usr/bin/env", ["python3", "-c", script, ignored.map(String.init).joined(separator: ","), executable] + arguments)
    }

    /// Runs a program to completion and returns its output; kills it when it runs too long.
    /// - Parameters:
    ///   - executable: Absolute path of the program.
    ///   - arguments: Its arguments.
    ///   - environment: Extra environment variables (added to ``inheritedEnvironment``).
    ///   - inherit: Whether to start from ``inheritedEnvironment``; with `false`, `environment` is all there is
    ///     but for the sanitizers' settings (``TestSanitizer/settings``).
    ///   - workingDirectory: The folder it runs in (default: this process's).
    ///   - standardInput: A file to read standard input from (default: none, `/dev/null`).
    ///   - mergingStandardError: Whether standard error goes to the same file as standard output (`2>&1`).
    ///   - timeout: The most the program may run.
    /// - Returns: Exit status and output.
    /// - Throws: ``TestSupportError`` when it cannot start or times out.
    @discardableResult
    public static func run(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String] = [:],
        inherit: Bool = true,
        workingDirectory: URL? = nil,
        standardInput: URL? = nil,
        mergingStandardError: Bool = false,
        timeout: Duration = .seconds(30)
    ) throws -> Output {
        let scratch = FileManager.default.temporaryDirectory
            .appendingPathComponent("aasa-child-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outURL = scratch.appendingPathComponent("stdout")
        let errURL = scratch.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        defer {
            try? out.close()
            try? err.close()
        }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = inherit
            ? inheritedEnvironment.merging(environment) { _, new in new }
            : TestSanitizer.settings.merging(environment) { _, new in new }
        if let workingDirectory { process.currentDirectoryURL = workingDirectory }
        if let standardInput {
            do {
                process.standardInput = try FileHandle(forReadingFrom: standardInput)
            } catch {
                throw TestSupportError("cannot read \(standardInput.path) for standard input: \(error)")
            }
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        process.standardOutput = out
        process.standardError = mergingStandardError ? out : err
        do {
            try process.run()
        } catch {
            throw TestSupportError("cannot start \(executable): \(error)")
        }
        let finished = waitForExit(process, timeout: timeout)
        if !finished {
            kill(process.processIdentifier, SIGKILL)
            _ = waitForExit(process, timeout: .seconds(2))
            throw TestSupportError("\(executable) \(arguments.joined(separator: " ")) did not finish within \(timeout)")
        }
        let stdout = (try? String(contentsOf: outURL, encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
        return Output(status: process.terminationStatus, standardOutput: stdout, standardError: stderr)
    }

    /// Waits (polling, bounded) until the process has exited.
    /// - Returns: Whether it exited within `timeout`.
    @discardableResult
    public static func waitForExit(_ process: Process, timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while process.isRunning {
            if ContinuousClock.now >= deadline {
                return false
            }
            usleep(10_000)
        }
        return true
    }

    /// Stops a long-running child: SIGTERM, then SIGKILL after `grace`.
    public static func terminate(_ process: Process, grace: Duration = .seconds(5)) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        if !waitForExit(process, timeout: grace) {
            kill(process.processIdentifier, SIGKILL)
            _ = waitForExit(process, timeout: .seconds(2))
        }
    }

    /// Finds a program in a list of usual places, then on `PATH`.
    public static func find(_ name: String, preferring paths: [String] = []) -> String? {
        let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        let candidates = paths + searchPath.split(separator: ":").map { "\($0)/\(name)" }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts a watchdog shell that kills `pid` (SIGTERM, then SIGKILL) and removes `directory`
    /// if this test process dies first. It exits by itself once `pid` is gone.
    public static func startWatchdog(for pid: Int32, removing directory: URL?) -> Process? {
        let parent = getpid()
        let cleanup = directory.map { "rm -rf '\($0.path)'" } ?? ":"
        let script = """
            while kill -0 \(parent) 2>/dev/null && kill -0 \(pid) 2>/dev/null; do sleep 1; done
            if ! kill -0 \(parent) 2>/dev/null; then
              kill -TERM \(pid) 2>/dev/null; sleep 3; kill -KILL \(pid) 2>/dev/null; \(cleanup)
            fi
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return nil
        }
        return process
    }
}

/// The sanitizer the suite runs under (`scripts/sanitize`, which sets `AASA_TEST_SANITIZER`), and the
/// runtime settings it gives every process the tests start.
public enum TestSanitizer {
    /// `address` or `thread` under `scripts/sanitize`; `nil` otherwise.
    public static var active: String? {
        ProcessInfo.processInfo.environment["AASA_TEST_SANITIZER"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `ASAN_OPTIONS` and `TSAN_OPTIONS` from this process's environment (where the reports go,
    /// leaks not looked for), kept even for a child whose environment is otherwise fixed.
    public static var settings: [String: String] {
        ProcessInfo.processInfo.environment.filter { $0.key == "ASAN_OPTIONS" || $0.key == "TSAN_OPTIONS" }
    }
}

/// The curl loops the suite's clients run: `AASA_TEST_THREADS=1 swift test` runs every transport
/// test and every `aasa-fetch` the tests start with one loop (`--threads 1`); unset, each uses its
/// default (one loop per core).
public enum TestThreads {
    /// `AASA_TEST_THREADS` as a number, `nil` when unset or not a number.
    public static var requested: Int? {
        ProcessInfo.processInfo.environment["AASA_TEST_THREADS"].flatMap { Int($0) }
    }
}
