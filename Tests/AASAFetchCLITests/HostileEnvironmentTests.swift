import AASAFetchTestSupport
import Foundation
import Glibc
import Testing

/// The binary in a hostile environment: a standard output closed early or full, few file
/// descriptors, little address space, a read-only store, a temporary folder that is missing, not
/// writable or full, and several processes creating one store at once. Each run ends in a
/// documented code (or, for a closed pipe, by SIGPIPE as other Unix tools do) and loses nothing it
/// had: finished results are recorded, temporary files removed.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct HostileEnvironmentTests {
    /// Why the limit tests skip under ThreadSanitizer: it writes a report for every `Mutex` (a
    /// futex it does not see) and needs the descriptors and room those limits take.
    static let threadSanitizerNeedsRoom: Comment = "ThreadSanitizer writes a report for every Mutex and needs the descriptors and room this limit takes"

    static let appID = FetchIntegrationTests.appID
    static let good = FetchIntegrationTests.good

    // MARK: - Harness

    /// A fault server for `*.fault.test` that serves a valid file to every host by default.
    static func server(hosts: [String: FaultBehavior] = [:]) async throws -> (FaultServer, TestCA) {
        let ca = try TestCA.shared()
        let leaf = try ca.leaf(for: ["fault.test", "*.fault.test"])
        let script = FaultScript(default: .respond(headers: [("Content-Type", "application/json")], body: Self.good), hosts: hosts)
        return (try await FaultServer.start(script: script, certificate: leaf, lifetime: 300), ca)
    }

    static func network(_ server: FaultServer, _ ca: TestCA) -> [String] {
        ["--cacert", ca.caCertPath, "--connect-to", server.connectTo, "--allow-private", "--retry-delays", "",
         "--connect-timeout", "5", "--max-time", "30", "--quiet", "--app-id", appID]
    }

    static func folder(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Runs `script` with `/bin/sh -c`; the binary is `$AASA`.
    static func shell(_ script: String, environment: [String: String] = [:], timeout: Duration = .seconds(120)) throws -> ChildProcess.Output {
        try ChildProcess.run("/bin/sh", ["-c", script], environment: ["AASA": ToolRunner.binary, "NO_COLOR": "1"].merging(environment) { $1 },
                             timeout: timeout)
    }

    /// Single-quotes a path for `sh`.
    static func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    /// How a child ended.
    struct Ending {
        var signal: Int32?
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs the tool with its standard output on a pipe. The output is read until it contains
    /// `readUntil`, then the read end is closed (`nil`: closed before the tool starts); `afterClose`
    /// runs next (to release a held server answer). Returns how the tool ended and what was read.
    static func runIntoClosedPipe(_ arguments: [String], cache: String, environment: [String: String] = [:], readUntil: String? = nil,
                                  afterClose: () throws -> Void = {}) throws -> Ending {
        Loopback.ignoreSIGPIPE()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ToolRunner.binary)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(
            ["NO_COLOR": "1", "AASA_FETCH_CACHE": cache].merging(environment) { $1 }) { $1 }
        let output = Pipe()
        let errorFile = try folder("stderr").appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
        let errorHandle = try FileHandle(forWritingTo: errorFile)
        defer {
            try? errorHandle.close()
            try? FileManager.default.removeItem(at: errorFile.deletingLastPathComponent())
        }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = errorHandle
        var read = Data()
        if readUntil == nil { try output.fileHandleForReading.close() }
        try process.run()
        try output.fileHandleForWriting.close()
        if let readUntil {
            let reader = output.fileHandleForReading
            let deadline = ContinuousClock.now + .seconds(60)
            while !String(decoding: read, as: UTF8.self).contains(readUntil), ContinuousClock.now < deadline {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                read.append(chunk)
            }
            try reader.close()
        }
        try afterClose()
        if !ChildProcess.waitForExit(process, timeout: .seconds(120)) {
            ChildProcess.terminate(process)
            throw TestSupportError("\(arguments) did not end after its output was closed")
        }
        let stderr = (try? String(contentsOf: errorFile, encoding: .utf8)) ?? ""
        let signal = process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil
        return Ending(signal: signal, status: process.terminationStatus, stdout: String(decoding: read, as: UTF8.self), stderr: stderr)
    }

    /// Whether `unshare -rm` can give a child its own mount namespace (tmpfs, read-only binds).
    static let namespaces: Bool = {
        guard let unshare = ChildProcess.find("unshare") else { return false }
        return (try? ChildProcess.run(unshare, ["-rm", "/bin/sh", "-c", "mount -t tmpfs -o size=16k tmpfs /tmp"], timeout: .seconds(10)).status) == 0
    }()

    /// Records `hosts` (served a valid file) in a fresh store; returns its folder.
    static func recordedStore(_ server: FaultServer, _ ca: TestCA, hosts: [String], in work: URL) throws -> String {
        let cache = work.appendingPathComponent("cache").path
        let run = try ToolRunner.run(network(server, ca) + hosts.flatMap { ["--domain", "applinks:\($0)"] }, cache: cache)
        #expect(run.status == 0, "\(run.stderr)")
        return cache
    }

    /// The store's hosts with their last code (`nil`: never fetched), through `show --json`.
    /// Runs the tool through `sh` as `LAUNCHER "$AASA" …` (a limit set first, e.g. `ulimit -n 16 &&
    /// exec`) for `hosts` (`--domain applinks:HOST` each), with `extra`, `--json`, the store at
    /// `cache` and the fault server's network options.
    static func limitedRun(_ launcher: String, hosts: [String], extra: [String] = [], cache: String, _ server: FaultServer, _ ca: TestCA,
                           timeout: Duration = .seconds(120)) throws -> ChildProcess.Output {
        let arguments = (hosts.flatMap { ["--domain", "applinks:\($0)"] } + extra + ["--json", "--cache", cache] + network(server, ca))
            .map(quoted).joined(separator: " ")
        return try shell("\(launcher) \"$AASA\" \(arguments)", timeout: timeout)
    }

    /// Checks a `--json` run under a limit of the process: every host is `ok` or the shortage's
    /// `code`, the run exits 2 naming the code exactly when some host is short, and only the `ok`
    /// hosts are recorded (a shortage is never a host's failure). Returns whether any was short.
    static func expectShortageNeverBlamed(_ run: ChildProcess.Output, hosts: [String], code: String, cache: String, context: String) throws -> Bool {
        let codes = Dictionary(uniqueKeysWithValues: (run.jsonObject?["domains"] as? [[String: Any]] ?? []).compactMap { domain in
            (domain["host"] as? String).map { ($0, domain["code"] as? String ?? "") }
        })
        #expect(codes.count == hosts.count, "\(context)")
        #expect(codes.values.allSatisfy { $0 == "ok" || $0 == code }, "\(context): \(codes)")
        let short = codes.values.contains(code)
        #expect(run.status == (short ? 2 : 0), "\(context): \(codes)")
        if short {
            #expect(run.standardError.contains("aasa-fetch: \(code):"), "\(context)")
        }
        let stored = try storedCodes(cache)
        for host in hosts {
            let expected: String? = codes[host] == "ok" ? "ok" : nil
            #expect(stored[host] == .some(expected), "\(context): \(host) stored as \(String(describing: stored[host])), fetched \(codes[host] ?? "-")")
        }
        return short
    }

    static func storedCodes(_ cache: String) throws -> [String: String?] {
        let shown = try ToolRunner.run(["show", "--json"], cache: cache)
        #expect(shown.status == 0, "\(shown.stderr)")
        let hosts = try shown.json()["hosts"] as? [[String: Any]] ?? []
        var codes: [String: String?] = [:]
        for host in hosts {
            guard let name = host["host"] as? String else { continue }
            codes[name] = host["code"] as? String
        }
        return codes
    }

    // MARK: - Standard output closed early

    /// `… | true`: every command used to die of "Illegal instruction" (Foundation traps on EPIPE).
    /// Now the tool ends by SIGPIPE, silently, like `cat` or `grep`.
    @Test func commandsEndBySIGPIPEWhenTheReaderIsGone() async throws {
        let (server, ca) = try await Self.server()
        defer { server.stop() }
        let work = try Self.folder("sigpipe")
        defer { try? FileManager.default.removeItem(at: work) }
        let cache = try Self.recordedStore(server, ca, hosts: ["a.fault.test", "b.fault.test"], in: work)
        let file = work.appendingPathComponent("aasa.json")
        try Data(Self.good.utf8).write(to: file)
        let commands: [[String]] = [
            ["lint", file.path], ["lint", file.path, "--json"], ["show"], ["show", "--json"], ["show", "a.fault.test"],
            ["diff", file.path, file.path], ["match", "https://a.fault.test/x", "--aasa", file.path], ["plan", "--domain", "applinks:a.fault.test"],
            ["--domain", "applinks:a.fault.test"] + Self.network(server, ca),
        ]
        for command in commands {
            let ending = try Self.runIntoClosedPipe(command, cache: cache)
            #expect(ending.signal == SIGPIPE, "\(command): status \(ending.status), signal \(String(describing: ending.signal)): \(ending.stderr)")
            #expect(ending.stderr.isEmpty, "\(command): \(ending.stderr)")
        }
    }

    /// `--domains LIST | head -2`: the tool stops starting downloads, records every result it had,
    /// removes its run spool and ends by SIGPIPE (it used to crash, leave the spool and record nothing).
    @Test(arguments: [false, true])
    func aSpooledRunCutShortByHeadRecordsWhatItFetched(json: Bool) async throws {
        let work = try Self.folder("head")
        defer { try? FileManager.default.removeItem(at: work) }
        let release = work.appendingPathComponent("release").path
        // Only h0 and h1 answer at once; the others once the reader is gone, so the tool is
        // certainly still running then, with hosts it has not started.
        let answer = FaultBehavior.respond(headers: [("Content-Type", "application/json")], body: Self.good)
        let ca = try TestCA.shared()
        let script = FaultScript(default: .holdUntilFile(release, body: Self.good, headers: [("Content-Type", "application/json")]),
                                 hosts: ["h0.fault.test": answer, "h1.fault.test": answer])
        let server = try await FaultServer.start(script: script, certificate: try ca.leaf(for: ["fault.test", "*.fault.test"]), lifetime: 300)
        defer { server.stop() }
        let hosts = (0..<40).map { "h\($0).fault.test" }
        let list = work.appendingPathComponent("list.txt")
        try Data(hosts.joined(separator: "\n").utf8).write(to: list)
        let tmp = work.appendingPathComponent("tmp")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        let cache = work.appendingPathComponent("cache").path
        let arguments = ["--domains", list.path, "--concurrency", "2"] + Self.network(server, ca) + (json ? ["--json"] : [])
        let ending = try Self.runIntoClosedPipe(arguments, cache: cache, environment: ["TMPDIR": tmp.path], readUntil: "h0.fault.test") {
            _ = FileManager.default.createFile(atPath: release, contents: nil)
        }
        #expect(ending.signal == SIGPIPE, "status \(ending.status): \(ending.stderr)")
        #expect(ending.stderr.isEmpty, "\(ending.stderr)")
        #expect(ending.stdout.contains("h0.fault.test"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty, "the run spool was left in TMPDIR")
        let codes = try Self.storedCodes(cache)
        #expect(codes.count == 40, "every host registered")
        for host in ["h0.fault.test", "h1.fault.test"] {
            #expect(codes[host] == "ok", "\(host) was fetched before the reader left, and must be recorded")
        }
        #expect(codes.values.filter { $0 == nil }.count > 20, "the run went on instead of stopping")
        #expect(!codes.values.contains { $0 == "cancelled" }, "a cancelled download was recorded")
    }

    /// A full disk behind standard output (`/dev/full`) and a closed descriptor 1 (`>&-`) are
    /// `output-failed`, exit 2 (before: "Illegal instruction"; with `>&-` the store's database
    /// could even be given descriptor 1).
    @Test func anUnwritableStandardOutputIsOutputFailed() async throws {
        let work = try Self.folder("full")
        defer { try? FileManager.default.removeItem(at: work) }
        let file = work.appendingPathComponent("aasa.json")
        try Data(Self.good.utf8).write(to: file)
        for redirect in ["> /dev/full", ">&-"] {
            for command in ["lint \(Self.quoted(file.path))", "lint --json \(Self.quoted(file.path))", "diff \(Self.quoted(file.path)) \(Self.quoted(file.path))",
                            "--help", "--version", "fetch --help"] {
                let run = try Self.shell("exec \"$AASA\" \(command) \(redirect)")
                #expect(run.status == 2, "\(command) \(redirect): \(run.standardError)")
                #expect(run.standardError.contains("aasa-fetch: output-failed: cannot write standard output"), "\(command) \(redirect): \(run.standardError)")
            }
        }
    }

    // MARK: - File descriptors

    /// `ulimit -n` of 4 to 6: every command ends with `descriptors-exhausted` (exit 2, the error
    /// document with `--json`) before the runtime starts; it died of SIGILL in libdispatch, which
    /// traps when it cannot open its epoll set.
    @Test func tooFewDescriptorsToStartIsARunError() throws {
        for limit in 4...6 {
            for command in ["--version", "lint examples/broken.json --json", "plan --domain example.com --json"] {
                let run = try Self.shell("cd \(Self.quoted(TestPaths.repository.path)) && ulimit -n \(limit) && exec \"$AASA\" \(command)")
                #expect(run.status == 2, "ulimit -n \(limit) \(command): \(run.status) \(run.standardError)")
                #expect(run.standardError.contains("aasa-fetch: descriptors-exhausted: this process can open only"), "\(run.standardError)")
                if command.hasSuffix("--json") {
                    let document = try JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [String: Any]
                    #expect((document?["error"] as? [String: Any])?["code"] as? String == "descriptors-exhausted", "\(run.standardOutput)")
                }
            }
        }
    }

    /// Just above that: a file, the store or the spool that cannot be opened for want of a
    /// descriptor is `descriptors-exhausted` (exit 2), never the input's fault: it was a usage
    /// error (`--cacert: cannot read ca.pem: Too many open files`), `store-unreadable` or
    /// `spool-error`.
    @Test func runningOutOfDescriptorsWhileOpeningInputsIsARunError() throws {
        let work = try Self.folder("inputs-nofile")
        defer { try? FileManager.default.removeItem(at: work) }
        let cache = work.appendingPathComponent("cache").path
        let made = try ToolRunner.run(["--domain", "applinks:x.invalid", "--app-id", "ABCDE12345.com.example.app", "--retry-delays", ""], cache: cache)
        #expect(made.status == 1, "\(made.stderr)")
        let ca = try TestCA.shared().caCertPath
        let hosts = TestPaths.repository.appendingPathComponent("examples/hosts.txt").path
        var seen: Set<String> = []
        for limit in 7...12 {
            for command in [["refresh", "--all", "--cache", cache, "--cacert", ca], ["--domains", hosts, "--no-store", "--cacert", ca]] {
                let arguments = (command + ["--no-config", "--json"]).map(Self.quoted).joined(separator: " ")
                let run = try Self.shell("ulimit -n \(limit) && exec \"$AASA\" \(arguments)")
                guard run.status != 0, let line = run.standardError.split(separator: "\n").first(where: { $0.hasPrefix("aasa-fetch: ") && !$0.hasPrefix("aasa-fetch: note") }) else { continue }
                let code = String(line.dropFirst("aasa-fetch: ".count).prefix { $0 != ":" })
                seen.insert(code)
                #expect(run.status == 2 && code == "descriptors-exhausted",
                        "ulimit -n \(limit) \(command.first ?? ""): \(run.status) \(line)")
            }
        }
        #expect(seen.contains("descriptors-exhausted"), "\(seen)")

        // A store that could not be made for want of a descriptor leaves no file behind: its
        // empty file, or its header page, read as "holds no store" to every later command.
        var storesRefused = 0
        for limit in 7...9 {
            let fresh = work.appendingPathComponent("fresh\(limit)").path
            let arguments = ["--domain", "applinks:x.invalid", "--cache", fresh, "--no-config", "--app-id", Self.appID].map(Self.quoted).joined(separator: " ")
            let run = try Self.shell("ulimit -n \(limit) && exec \"$AASA\" \(arguments)")
            guard run.standardError.contains("descriptors-exhausted: cannot use") else { continue }
            storesRefused += 1
            #expect(!FileManager.default.fileExists(atPath: fresh + "/aasa-fetch.sqlite"), "ulimit -n \(limit): \(run.standardError)")
        }
        #expect(storesRefused > 0, "no limit refused the store")
    }

    /// `ulimit -n 256` and `--concurrency 400`: the concurrency is lowered to what fits (said on
    /// stderr) and every host is fetched (before: hundreds reported and recorded `connect-failure`).
    @Test func fewDescriptorsLowerTheConcurrencyInsteadOfFailingHosts() async throws {
        let (server, ca) = try await Self.server()
        defer { server.stop() }
        let work = try Self.folder("nofile")
        defer { try? FileManager.default.removeItem(at: work) }
        let hosts = (0..<400).map { "n\($0).fault.test" }
        let list = work.appendingPathComponent("list.txt")
        try Data(hosts.joined(separator: "\n").utf8).write(to: list)
        let cache = work.appendingPathComponent("cache").path
        let arguments = (["--domains", list.path, "--concurrency", "400", "--json", "--cache", cache] + Self.network(server, ca))
            .map(Self.quoted).joined(separator: " ")
        let run = try Self.shell("ulimit -n 256 && exec \"$AASA\" \(arguments)", timeout: .seconds(300))
        #expect(run.status == 0, "\(run.standardError.prefix(2000))")
        #expect(run.standardError.contains("--concurrency 400 lowered to"), "\(run.standardError.prefix(500))")
        let object = try JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [String: Any]
        let codes = (object?["domains"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
        #expect(codes.count == 400)
        #expect(codes.allSatisfy { $0 == "ok" }, "\(Dictionary(grouping: codes, by: { $0 }).mapValues(\.count))")
        #expect(try Self.storedCodes(cache).values.allSatisfy { $0 == "ok" })
    }

    /// Every open-file limit from 10 to 40 (`ulimit -n`), two loops, a store: whatever the limit
    /// lets through is fetched, and what it stops is `descriptors-exhausted` (exit 2, not
    /// recorded), never a failure blamed on the host. Before: below about 22 descriptors the loops
    /// could not start and every host was recorded `invalid-request`, and at some limits the CA
    /// file or the resolver could not be opened and every host was recorded `tls-failure` or
    /// `dns-failure` (a probe after the failure found the descriptors free again). Later, at
    /// 16 descriptors, 2 runs in 12 (1 in 12 with the cores busy) reported a host `cancelled`, exit 1:
    /// it was handed to the loop that was just failing to start (`LoopRoutingTests`). And a
    /// higher limit never fetches less: before, with 2 loops every host was short at 19 and 20
    /// descriptors (with 3 loops, at 19, 20 and 23 to 25) while 16 to 18 fetched all, since a
    /// second loop that could start took the download's room; the loops are now cut to fit.
    @Test(.disabled(if: TestSanitizer.active == "thread", Self.threadSanitizerNeedsRoom), arguments: [2, 3])
    func aTightOpenFileLimitNeverBlamesTheHosts(loops: Int) async throws {
        let (server, ca) = try await Self.server()
        defer { server.stop() }
        let work = try Self.folder("tight")
        defer { try? FileManager.default.removeItem(at: work) }
        let hosts = ["t0.fault.test", "t1.fault.test", "t2.fault.test"]
        var outcomes: Set<String> = []
        var firstWhole: Int?
        for limit in 10...40 {
            let cache = work.appendingPathComponent("cache\(limit)").path
            let run = try Self.limitedRun("ulimit -n \(limit) && exec", hosts: hosts, extra: ["--threads", "\(loops)"], cache: cache, server, ca)
            let context = "--threads \(loops), ulimit -n \(limit): exit \(run.status), \(run.standardError.prefix(600))"
            let short = try Self.expectShortageNeverBlamed(run, hosts: hosts, code: "descriptors-exhausted", cache: cache, context: context)
            outcomes.insert(short ? "short" : "fetched")
            if let firstWhole {
                #expect(!short, "\(context): every host was fetched at \(firstWhole)")
            } else if !short {
                firstWhole = limit
            }
        }
        #expect(outcomes == ["short", "fetched"], "the limits tried must cover both a shortage and a whole run")
    }

    /// Without `/proc` (a bare chroot or sandbox) the command line cannot be read (neither the
    /// Swift runtime nor the tool itself, from `/proc/self/cmdline`): `arguments-unreadable` (exit 2). Before: the arguments were empty,
    /// so `--domain …` ran as a bare `fetch` and failed with a usage error about options that had
    /// been given.
    @Test(.enabled(if: geteuid() == 0 && ChildProcess.find("unshare") != nil),
          .disabled(if: TestSanitizer.active != nil, "a sanitizer's runtime reads /proc at start and warns without it"))
    func withoutProcTheCommandLineIsNamedUnreadable() throws {
        for arguments in ["--domain applinks:example.com --json", "--version", "lint /dev/null"] {
            let run = try Self.shell("exec unshare -m /bin/sh -c 'umount -l /proc || exit 99; exec \"$AASA\" \(arguments)'")
            guard run.status != 99 else { return }  // /proc cannot be unmounted here
            #expect(run.status == 2, "\(arguments): \(run.status) \(run.standardError)")
            #expect(run.standardError.hasPrefix("aasa-fetch: arguments-unreadable: the command line cannot be read: /proc is not mounted"),
                    "\(arguments): \(run.standardError)")
            #expect(run.standardOutput.isEmpty)
        }
    }

    /// A library preloaded before the tool that changes the environment first (libfaketime does,
    /// to share its clock with child processes) leaves the Swift runtime no arguments; the tool
    /// reads `/proc/self/cmdline` itself and runs as asked (before: `arguments-unreadable`,
    /// blaming a missing /proc).
    @Test(.enabled(if: FakeTime.usable, "needs faketime (scripts/install-deps) and no sanitizer (its runtime must be loaded first)"))
    func aPreloadedLibraryThatSetsTheEnvironmentLeavesTheArguments() throws {
        let work = try Self.folder("preload")
        defer { try? FileManager.default.removeItem(at: work) }
        let file = work.appendingPathComponent("with space, and \u{e9}.json")
        try Data(Self.good.utf8).write(to: file)
        let preload = FakeTime.environment("+0d")
        let version = try ToolRunner.run(["--version"], environment: preload)
        #expect(version.status == 0 && version.stdout == "0.1.0\n", "\(version.status) \(version.stdout) \(version.stderr)")
        // Every argument arrives whole: one with spaces and a non-ASCII letter, and an empty one.
        let lint = try ToolRunner.run(["lint", "--json", file.path], environment: preload)
        #expect(lint.status == 0, "\(lint.stderr)")
        let files = try lint.json()["files"] as? [[String: Any]]
        #expect(files?.count == 1 && files?.first?["path"] as? String == file.path, "\(lint.stdout)")
        let empty = try ToolRunner.run(["lint", ""], environment: preload)
        #expect(empty.status != 0 && !empty.stderr.contains("arguments-unreadable"), "\(empty.stderr)")
    }

    /// A cgroup of its own with a `pids` limit (the v1 `pids` controller, or cgroup v2 with it
    /// enabled), where this test may put a child; `nil` where none can be made (not root, no
    /// such controller). The caller removes it.
    static func pidsGroup() -> String? {
        let name = "aasa-fetch-test-\(getpid())-\(UUID().uuidString.prefix(8))"
        let v2 = (try? String(contentsOfFile: "/sys/fs/cgroup/cgroup.subtree_control", encoding: .utf8))?.contains("pids") == true
        for parent in ["/sys/fs/cgroup/pids"] + (v2 ? ["/sys/fs/cgroup"] : []) {
            let group = parent + "/" + name
            guard mkdir(group, 0o755) == 0 else { continue }
            if FileManager.default.isWritableFile(atPath: group + "/pids.max") { return group }
            rmdir(group)
        }
        return nil
    }

    /// Removes a group made by ``pidsGroup()``: its limit lifted, then the folder, once the
    /// kernel has reaped the last child in it.
    static func removePidsGroup(_ group: String) {
        try? Data("max".utf8).write(to: URL(fileURLWithPath: group + "/pids.max"))
        for _ in 0..<100 where rmdir(group) != 0 && errno == EBUSY { usleep(20_000) }
    }

    /// A server that holds each of 12 hosts (`PREFIX0.fault.test` …) until the file `release` (in
    /// `work`) exists.
    static func heldHosts(_ prefix: String, in work: URL) async throws -> (server: FaultServer, ca: TestCA, hosts: [String], release: String) {
        let release = work.appendingPathComponent("release").path
        let held = FaultBehavior.holdUntilFile(release, body: Self.good, headers: [("Content-Type", "application/json")])
        let hosts = (0..<12).map { "\(prefix)\($0).fault.test" }
        let (server, ca) = try await Self.server(hosts: Dictionary(uniqueKeysWithValues: hosts.map { ($0, held) }))
        return (server, ca, hosts, release)
    }

    /// A limit on the process's threads (a cgroup's `pids.max`, what a container's
    /// `--pids-limit` or a systemd unit's `TasksMax` sets): the run fetches, lowers
    /// `--concurrency` and `--threads` to fit, or ends with `threads-exhausted` (exit 2), and never
    /// blames a host. Names are resolved (`--connect-to ::localhost:PORT`), so each download
    /// being resolved holds a thread of libcurl's resolver. Before: at 1 to 9 the process hung for
    /// good, with SIGTERM blocked (the concurrency runtime retried creating a thread forever, or
    /// a curl loop that Foundation's `Thread` could not start was given transfers).
    @Test func aLimitOnThreadsIsMetOrNamedNeverAHang() async throws {
        guard let group = Self.pidsGroup() else { return }  // not root, or no pids controller here
        defer { Self.removePidsGroup(group) }
        let (server, ca) = try await Self.server()
        defer { server.stop() }
        let work = try Self.folder("pids")
        defer { try? FileManager.default.removeItem(at: work) }
        let hosts = (0..<24).map { "p\($0).fault.test" }
        var outcomes: Set<String> = []
        for limit in [1, 2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 32, 48, 64] {
            try Data("\(limit)".utf8).write(to: URL(fileURLWithPath: group + "/pids.max"))
            let cache = work.appendingPathComponent("cache\(limit)").path
            let arguments = (hosts.flatMap { ["--domain", "applinks:\($0)"] }
                + ["--concurrency", "24", "--threads", "2", "--json", "--cache", cache, "--cacert", ca.caCertPath,
                   "--connect-to", "::localhost:\(server.port)", "--allow-private", "--retry-delays", "", "--connect-timeout", "5",
                   "--max-time", "30", "--app-id", Self.appID])
                .map(Self.quoted).joined(separator: " ")
            let run = try Self.shell("echo $$ > \(Self.quoted(group + "/cgroup.procs")) && exec \"$AASA\" \(arguments)", timeout: .seconds(20))
            let context = "pids.max \(limit): exit \(run.status), \(run.standardError.prefix(700))"
            let object = run.jsonObject
            if let error = object?["error"] as? [String: Any] {
                // Refused before any download: nothing recorded, the code named.
                #expect(error["code"] as? String == "threads-exhausted", "\(context)")
                #expect(run.status == 2, "\(context)")
                #expect(run.standardError.contains("pids.max is \(limit)"), "\(context)")
                outcomes.insert("refused")
                continue
            }
            let short = try Self.expectShortageNeverBlamed(run, hosts: hosts, code: "threads-exhausted", cache: cache, context: context)
            outcomes.insert(short ? "short" : run.standardError.contains("lowered to") ? "fitted" : "fetched")
        }
        #expect(outcomes.isSuperset(of: ["refused", "fitted", "fetched"]), "\(outcomes)")
    }

    /// The open-file limit shrinks under a running fetch (`prlimit`): the hosts that could not get
    /// a socket are `descriptors-exhausted`, a run error (exit 2), and are not recorded as their
    /// failure; the hosts fetched before are recorded.
    @Test(.enabled(if: ChildProcess.find("prlimit") != nil), .disabled(if: TestSanitizer.active == "thread", Self.threadSanitizerNeedsRoom))
    func aDescriptorShortageIsNeverRecordedAsTheHostsFailure() async throws {
        let work = try Self.folder("shortage")
        defer { try? FileManager.default.removeItem(at: work) }
        // Every host is held: the two the run starts first (which two is the scheduler's business)
        // have their sockets when the limit comes; the ten others can get none.
        let (server, ca, hosts, release) = try await Self.heldHosts("s", in: work)
        defer { server.stop() }
        let cache = work.appendingPathComponent("cache").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ToolRunner.binary)
        process.arguments = hosts.flatMap { ["--domain", "applinks:\($0)"] } + ["--concurrency", "2", "--json"] + Self.network(server, ca)
        process.environment = ProcessInfo.processInfo.environment.merging(["AASA_FETCH_CACHE": cache, "NO_COLOR": "1"]) { $1 }
        let errorFile = work.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
        let errorHandle = try FileHandle(forWritingTo: errorFile)
        defer { try? errorHandle.close() }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errorHandle
        try process.run()
        defer { ChildProcess.terminate(process) }
        // Both held downloads have their sockets; then no new descriptor may be opened.
        let bothHeld = await waitUntil(timeout: .seconds(60)) { server.requests().filter { $0.event == "request" }.count >= 2 }
        #expect(bothHeld)
        let limited = try ChildProcess.run(try #require(ChildProcess.find("prlimit")), ["--pid", "\(process.processIdentifier)", "--nofile=3:3"])
        #expect(limited.status == 0, "\(limited.standardError)")
        _ = FileManager.default.createFile(atPath: release, contents: nil)
        #expect(ChildProcess.waitForExit(process, timeout: .seconds(120)))
        let stderr = (try? String(contentsOf: errorFile, encoding: .utf8)) ?? ""
        #expect(process.terminationStatus == 2, "\(stderr)")
        #expect(stderr.contains("aasa-fetch: descriptors-exhausted: 10 hosts could not be fetched"), "\(stderr)")
        let codes = try Self.storedCodes(cache)
        let started = Set(server.requests().filter { $0.event == "request" }.compactMap(\.host).map { $0.split(separator: ":")[0] }.map(String.init))
        #expect(started.count == 2, "\(started)")
        for host in hosts {
            if started.contains(host) {
                #expect(codes[host] == "ok", "\(host)")
            } else {
                #expect(codes[host] == .some(nil), "\(host) was recorded as \(String(describing: codes[host])) for this process's own shortage")
            }
        }
    }

    /// The limit on threads shrinks under a running fetch: the hosts whose names libcurl's
    /// resolver could not get a thread for are `threads-exhausted` (exit 2, not recorded), never
    /// `dns-failure`. The names resolve through `/etc/hosts` (bind-mounted in a mount namespace of
    /// the child's), so every host's download asks the resolver for a thread.
    @Test(.enabled(if: geteuid() == 0 && ChildProcess.find("unshare") != nil))
    func aResolverWithoutAThreadIsNeverTheHostsFailure() async throws {
        guard let group = Self.pidsGroup() else { return }
        defer { Self.removePidsGroup(group) }
        let work = try Self.folder("resolver")
        defer { try? FileManager.default.removeItem(at: work) }
        let (server, ca, hosts, release) = try await Self.heldHosts("r", in: work)
        defer { server.stop() }
        let hostsFile = work.appendingPathComponent("hosts")
        try Data(("127.0.0.1 localhost\n" + hosts.map { "127.0.0.1 \($0)\n" }.joined()).utf8).write(to: hostsFile)
        let cache = work.appendingPathComponent("cache").path
        // Every host by its own name, at the server's port (`:::PORT` keeps the name).
        let arguments = (hosts.flatMap { ["--domain", "applinks:\($0)"] }
            + ["--concurrency", "2", "--json", "--cache", cache, "--cacert", ca.caCertPath, "--connect-to", ":::\(server.port)",
               "--allow-private", "--retry-delays", "", "--connect-timeout", "5", "--max-time", "60", "--quiet", "--app-id", Self.appID])
            .map(Self.quoted).joined(separator: " ")
        let inner = "mount --bind \(Self.quoted(hostsFile.path)) /etc/hosts && echo $$ > \(Self.quoted(group + "/cgroup.procs")) && exec \"$AASA\" \(arguments)"
        let output = work.appendingPathComponent("stdout"), errors = work.appendingPathComponent("stderr")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "exec unshare -m /bin/sh -c \(Self.quoted(inner)) > \(Self.quoted(output.path)) 2> \(Self.quoted(errors.path))"]
        process.environment = ChildProcess.inheritedEnvironment.merging(["AASA": ToolRunner.binary, "NO_COLOR": "1"]) { $1 }
        try process.run()
        defer { ChildProcess.terminate(process) }
        // Both downloads the run starts are held at the server; then no thread may be started.
        let bothHeld = await waitUntil(timeout: .seconds(60)) { server.requests().filter { $0.event == "request" }.count >= 2 }
        #expect(bothHeld, "\((try? String(contentsOf: errors, encoding: .utf8)) ?? "")")
        let current = try String(contentsOfFile: group + "/pids.current", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        try Data(current.utf8).write(to: URL(fileURLWithPath: group + "/pids.max"))
        _ = FileManager.default.createFile(atPath: release, contents: nil)
        // The ten other names cannot be resolved now; then the limit goes, so that nothing else
        // of the process waits on it.
        try await Task.sleep(for: .seconds(3))
        try Data("max".utf8).write(to: URL(fileURLWithPath: group + "/pids.max"))
        #expect(ChildProcess.waitForExit(process, timeout: .seconds(60)))
        let stderr = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
        let run = ChildProcess.Output(status: process.terminationStatus, standardOutput: (try? String(contentsOf: output, encoding: .utf8)) ?? "",
                                      standardError: stderr)
        let short = try Self.expectShortageNeverBlamed(run, hosts: hosts, code: "threads-exhausted", cache: cache, context: "exit \(run.status): \(stderr)")
        #expect(short, "no host met the limit")
        #expect(stderr.contains("aasa-fetch: threads-exhausted: 10 hosts could not be fetched"), "\(stderr)")
    }

    // MARK: - Stack

    /// Under a small stack limit (`ulimit -s 256`), a file nested as deeply as the JSON parser
    /// allows (250 arrays inside `applinks`), read from a file and downloaded from a server, is
    /// judged, and a deeply nested YAML config is refused, not a crash: threads got stacks of the
    /// soft limit, and the parsers' recursion overflowed them (SIGSEGV).
    @Test func deepNestingUnderASmallStackLimit() async throws {
        let deep = "{\"applinks\": " + String(repeating: "[", count: 250) + String(repeating: "]", count: 250) + "}"
        let (server, ca) = try await Self.server(hosts: ["deep.fault.test": .respond(headers: [("Content-Type", "application/json")], body: deep)])
        defer { server.stop() }
        let work = try Self.folder("stack")
        defer { try? FileManager.default.removeItem(at: work) }
        let file = work.appendingPathComponent("deep.json")
        try Data(deep.utf8).write(to: file)

        let lint = try Self.shell("ulimit -s 256 && exec \"$AASA\" lint --json \(Self.quoted(file.path))")
        #expect(lint.status == 1, "lint: exit \(lint.status): \(lint.standardError.prefix(300))")
        #expect(lint.jsonObject != nil, "lint: \(lint.standardOutput.prefix(300))")

        // A YAML config nested 990 levels (libyaml stops at 1,000), built into nodes recursively.
        let config = work.appendingPathComponent("deep.yaml")
        try Data((0..<990).map { String(repeating: " ", count: $0) + "a:\n" }.joined().utf8).write(to: config)
        let configured = try Self.shell("ulimit -s 256 && exec \"$AASA\" --config \(Self.quoted(config.path)) --domain applinks:x.invalid --no-store")
        #expect(configured.status == 64, "config: exit \(configured.status): \(configured.standardError.prefix(300))")
        #expect(configured.standardError.contains("config-invalid"), "\(configured.standardError.prefix(300))")

        let arguments = (["--domain", "applinks:deep.fault.test", "--domain", "applinks:ok.fault.test", "--json", "--no-store"]
            + Self.network(server, ca)).map(Self.quoted).joined(separator: " ")
        let fetch = try Self.shell("ulimit -s 256 && exec \"$AASA\" \(arguments)")
        #expect(fetch.status == 1, "fetch: exit \(fetch.status): \(fetch.standardError.prefix(300))")
        let object = fetch.jsonObject
        #expect(object?.domain("ok.fault.test")?["code"] as? String == "ok")
        let code = object?.domain("deep.fault.test")?["code"] as? String
        #expect(code != nil && code != "ok", "deep: \(code ?? "-")")
    }

    // MARK: - Address space

    /// Under `ulimit -v`, a server whose chunked trailers never end cannot push the tool past the
    /// limit: the host fails with `headers-too-large`, the other host is fetched, exit 1 (before,
    /// memory grew by gigabytes and the process died).
    @Test(.disabled(if: TestSanitizer.active != nil, "a sanitizer's shadow memory needs more address space than any limit here"))
    func boundedMemoryUnderAnAddressSpaceLimit() async throws {
        let (server, ca) = try await Self.server(hosts: ["trailers.fault.test": .endlessTrailers(body: "{}")])
        defer { server.stop() }
        let arguments = (["--domain", "applinks:trailers.fault.test", "--domain", "applinks:ok.fault.test", "--json", "--no-store"]
            + Self.network(server, ca)).map(Self.quoted).joined(separator: " ")
        let run = try Self.shell("ulimit -v 1000000 && exec \"$AASA\" \(arguments)")
        #expect(run.status == 1, "\(run.standardError)")
        let object = try JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [String: Any]
        #expect(object?.domain("trailers.fault.test")?["code"] as? String == "headers-too-large")
        #expect(object?.domain("ok.fault.test")?["code"] as? String == "ok")
    }

    /// Address-space limits (`ulimit -v`) from 400 MiB down: each run either fetches every host
    /// (with `--concurrency` lowered to what the limit allows, said on stderr) or ends at once
    /// with `address-space-exhausted` (exit 2, the JSON error document); never a crash or a hang.
    /// Before: a run reserved about 600 MiB (8 MiB thread stacks, 64 MiB malloc arenas), so
    /// under a few hundred MiB an allocation failed (SIGABRT, SIGSEGV) or the concurrency
    /// runtime retried creating a thread forever. The sweep stops where the dynamic loader itself
    /// cannot map the libraries, which happens before the tool runs.
    @Test(.disabled(if: TestSanitizer.active != nil, "a sanitizer's shadow memory needs more address space than any limit here"))
    func anAddressSpaceLimitIsMetOrNamedNeverACrashOrAHang() async throws {
        let (server, ca) = try await Self.server()
        defer { server.stop() }
        let work = try Self.folder("addressspace")
        defer { try? FileManager.default.removeItem(at: work) }
        let hosts = ["v0.fault.test", "v1.fault.test", "v2.fault.test"]
        var outcomes: Set<String> = []
        for mebibytes in stride(from: 400, through: 40, by: -20) {
            let cache = work.appendingPathComponent("cache\(mebibytes)").path
            let run = try Self.limitedRun("ulimit -v \(mebibytes << 10) && exec", hosts: hosts, extra: ["--threads", "2", "--concurrency", "1024"],
                                          cache: cache, server, ca, timeout: .seconds(60))
            if run.status == 127 && run.standardError.contains("error while loading shared libraries") { break }
            #expect(run.status == 0 || run.status == 2, "ulimit -v \(mebibytes) MiB: status \(run.status): \(run.standardError.prefix(600))")
            let object = run.jsonObject
            if run.status == 2 {
                #expect(run.standardError.contains("aasa-fetch: address-space-exhausted: the address-space limit is \(mebibytes) MiB"),
                        "ulimit -v \(mebibytes) MiB: \(run.standardError.prefix(600))")
                #expect((object?["error"] as? [String: Any])?["code"] as? String == "address-space-exhausted")
                outcomes.insert("exhausted")
            } else if run.status == 0 {
                let codes = (object?["domains"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
                #expect(codes == ["ok", "ok", "ok"], "ulimit -v \(mebibytes) MiB: \(codes)")
                outcomes.insert("fetched")
            }
        }
        #expect(outcomes == ["exhausted", "fetched"], "the limits tried must cover both a run within the limit and one refused")
    }

    /// At the lowest address-space limit that one curl loop runs in, a run asked for three loops
    /// runs too, with fewer loops and a note, and fetches every host. Before, it was refused as
    /// `address-space-exhausted` (each loop's thread stack is 2 MiB) until the limit was 4 MiB
    /// higher, although one loop fitted.
    @Test(.disabled(if: TestSanitizer.active != nil, "a sanitizer's shadow memory needs more address space than any limit here"))
    func theLoopsAreCutToFitAnAddressSpaceLimitBeforeTheRunIsRefused() async throws {
        let (server, ca) = try await Self.server()
        defer { server.stop() }
        let work = try Self.folder("addressloops")
        defer { try? FileManager.default.removeItem(at: work) }
        let hosts = ["w0.fault.test", "w1.fault.test", "w2.fault.test"]
        func run(mebibytes: Int, loops: Int) throws -> ChildProcess.Output {
            let cache = work.appendingPathComponent("cache-\(mebibytes)-\(loops)").path
            return try Self.limitedRun("ulimit -v \(mebibytes << 10) && exec", hosts: hosts, extra: ["--threads", "\(loops)"],
                                       cache: cache, server, ca, timeout: .seconds(60))
        }
        // The lowest limit one loop runs in (refusal is monotonic in the limit), in whole MiB.
        var refused = 64, runs = 1024
        #expect(try run(mebibytes: runs, loops: 1).status == 0)
        while runs - refused > 1 {
            let middle = (refused + runs) / 2
            if try run(mebibytes: middle, loops: 1).status == 0 { runs = middle } else { refused = middle }
        }
        let three = try run(mebibytes: runs, loops: 3)
        let context = "ulimit -v \(runs) MiB: exit \(three.status), \(three.standardError.prefix(600))"
        #expect(three.status == 0, "\(context)")
        #expect(three.standardError.contains("aasa-fetch: note: --threads 3 lowered to 1: the address-space limit is \(runs) MiB"), "\(context)")
        let codes = (three.jsonObject?["domains"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
        #expect(codes == ["ok", "ok", "ok"], "\(context)")
    }

    /// A file-size limit (`prlimit --fsize`, `ulimit -f`) the store cannot grow past is
    /// `store-full` naming the limit (exit 2), at whatever size the store stops (before:
    /// `store-unreadable: … disk I/O error`, SQLite's error for EFBIG, which points at the file).
    @Test(.enabled(if: ChildProcess.find("prlimit") != nil), .disabled(if: TestSanitizer.active == "thread", Self.threadSanitizerNeedsRoom))
    func aFileSizeLimitIsStoreFullAndNamed() async throws {
        let (server, ca) = try await Self.server()
        defer { server.stop() }
        let work = try Self.folder("fsize")
        defer { try? FileManager.default.removeItem(at: work) }
        let prlimit = try #require(ChildProcess.find("prlimit"))
        for bytes in [4096, 65536] {
            let cache = work.appendingPathComponent("cache\(bytes)").path
            let run = try Self.limitedRun("exec \(Self.quoted(prlimit)) --fsize=\(bytes) --", hosts: ["f0.fault.test"], cache: cache, server, ca)
            #expect(run.status == 2, "--fsize=\(bytes): \(run.standardError.prefix(600))")
            #expect(run.standardError.contains("aasa-fetch: store-full:")
                    && run.standardError.contains("a write passed the file-size limit of \(bytes) bytes (ulimit -f)"),
                    "--fsize=\(bytes): \(run.standardError.prefix(600))")
            #expect((run.jsonObject?["error"] as? [String: Any])?["code"] as? String == "store-full")
        }
    }

    // MARK: - Output files that are descriptors

    /// Under cron, standard output is often a log file opened for appending, and `/dev/stdout`
    /// leads to it: `--metrics /dev/stdout` and `report --html /dev/stdout` (or a link to it)
    /// replaced the log. A descriptor's name is refused (`metrics-unwritable`,
    /// `report-unwritable`), and the log keeps its lines.
    @Test func aDescriptorsNameIsNeverReplaced() throws {
        let work = try Self.folder("descriptor")
        defer { try? FileManager.default.removeItem(at: work) }
        let cache = work.appendingPathComponent("cache").path
        let recorded = try ToolRunner.run(["--domain", "applinks:a.example.com", "--connect-to", "::127.0.0.1:9", "--allow-private",
                                           "--retry-delays", "", "--quiet"], cache: cache)
        #expect(recorded.status == 1, "\(recorded.stderr)")
        let log = work.appendingPathComponent("cron.log").path
        try "an earlier line\n".write(toFile: log, atomically: true, encoding: .utf8)
        let link = work.appendingPathComponent("out.prom").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "/dev/stdout")
        for (command, code) in [("refresh --metrics /dev/stdout", "metrics-unwritable"), ("report --html /dev/stdout", "report-unwritable"),
                                ("refresh --metrics /proc/self/fd/1", "metrics-unwritable"), ("report --html \(Self.quoted(link))", "report-unwritable")] {
            let run = try Self.shell("exec \"$AASA\" \(command) --cache \(Self.quoted(cache)) >> \(Self.quoted(log)) 2>&1")
            #expect(run.status == 2, "\(command)")
            let text = try String(contentsOfFile: log, encoding: .utf8)
            #expect(text.hasPrefix("an earlier line\n"), "\(command) replaced the log: \(text)")
            #expect(text.contains(code), "\(command): \(text)")
        }
    }

    // MARK: - Names that are not UTF-8

    /// An argument that is not UTF-8 (a Latin-1 file name) is a usage error naming its bytes: it
    /// reached the commands with U+FFFD instead, so `--cache` wrote a store into another folder and
    /// `--entitlements` said a file that exists was missing. A `lint` folder holding such a name
    /// reports it as unreadable (exit 2) instead of skipping it.
    @Test func namesThatAreNotUTF8AreNeverTakenForOthers() throws {
        let work = try Self.folder("latin1")
        defer { try? FileManager.default.removeItem(at: work) }
        let folder = Self.quoted(work.path)
        let cache = try Self.shell("cd \(folder) && exec \"$AASA\" --domain applinks:a.example.com --no-config -q --cache \"$(printf 'st\\377')\"")
        #expect(cache.status == 64, "\(cache.standardError)")
        #expect(cache.standardError.contains("argument 6 is not UTF-8 (st\\xFF)"), "\(cache.standardError)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: work.path).isEmpty, "a folder was made")
        let json = try Self.shell("cd \(folder) && exec \"$AASA\" plan --json --entitlements \"$(printf 'app\\351.entitlements')\"")
        #expect(json.status == 64)
        #expect(json.standardOutput.contains("\"code\" : \"usage\"") || json.standardOutput.contains("\"code\": \"usage\""), "\(json.standardOutput)")
        // JSON asked for by the environment gets the error document too (it got none).
        let fromEnvironment = try Self.shell("cd \(folder) && exec \"$AASA\" plan --entitlements \"$(printf 'app\\351.entitlements')\"",
                                             environment: ["AASA_FETCH_JSON": "1"])
        #expect(fromEnvironment.status == 64)
        #expect(fromEnvironment.standardOutput.contains("\"code\": \"usage\""), "\(fromEnvironment.standardOutput)")

        let site = work.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        try Data(#"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/*"}]}]}}"#.utf8)
            .write(to: site.appendingPathComponent("ok.json"))
        let made = try Self.shell("printf 'broken' > \(Self.quoted(site.path))/\"$(printf 'caf\\351.json')\"")
        #expect(made.status == 0, "\(made.standardError)")
        let lint = try ToolRunner.run(["lint", site.path])
        #expect(lint.status == 2, "\(lint.stdout) \(lint.stderr)")
        #expect(lint.stdout.contains("file-unreadable"), "\(lint.stdout)")
    }

    // MARK: - Read-only store

    /// `show`, `export` and `report` only read: they work on a store in a read-only folder (a
    /// read-only bind mount in a mount namespace of its own); a command that writes says
    /// `store-unreadable`, exit 2.
    @Test(.enabled(if: Self.namespaces))
    func aReadOnlyStoreCanBeShownAndExported() async throws {
        let (server, ca) = try await Self.server()
        defer { server.stop() }
        let work = try Self.folder("readonly")
        defer { try? FileManager.default.removeItem(at: work) }
        let cache = try Self.recordedStore(server, ca, hosts: ["r1.fault.test", "r2.fault.test"], in: work)
        let out = work.appendingPathComponent("out")
        let readOnly = "mount --bind \(Self.quoted(cache)) \(Self.quoted(cache)) && mount -o remount,bind,ro \(Self.quoted(cache)) && "
        func run(_ command: String) throws -> ChildProcess.Output {
            try Self.shell("exec unshare -rm /bin/sh -c \(Self.quoted(readOnly + "exec \"$AASA\" \(command) --cache \(Self.quoted(cache))"))")
        }
        let check = try Self.shell("exec unshare -rm /bin/sh -c \(Self.quoted(readOnly + "touch \(Self.quoted(cache))/probe"))")
        #expect(check.status != 0, "the bind mount is not read-only")

        let shown = try run("show --json")
        #expect(shown.status == 0, "\(shown.standardError)")
        #expect(shown.standardOutput.contains("\"r1.fault.test\""))
        let human = try run("show r2.fault.test")
        #expect(human.status == 0, "\(human.standardError)")
        #expect(human.standardOutput.contains("r2.fault.test"))
        let exported = try run("export --json --out \(Self.quoted(out.path))")
        #expect(exported.status == 0, "\(exported.standardError)")
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("origin/r1.fault.test.json").path))
        let page = work.appendingPathComponent("status.html")
        let report = try run("report --html \(Self.quoted(page.path))")
        #expect(report.status == 0, "\(report.standardError)")
        #expect((try? String(contentsOf: page, encoding: .utf8))?.contains("r1.fault.test") == true)
        let refresh = try run("refresh --now 2100-01-01T00:00:00Z " + Self.network(server, ca).dropLast(2).map(Self.quoted).joined(separator: " "))
        #expect(refresh.status == 2, "\(refresh.standardError)")
        #expect(refresh.standardError.contains("store-unreadable"), "\(refresh.standardError)")
    }

    /// A store on a full disk: a command that writes says `store-full` (it said `store-unreadable:
    /// disk I/O error`), and `show` and `export` still read it (they failed too: SQLite cannot size
    /// its shared-memory file there, and an immutable read needs none).
    @Test(.enabled(if: Self.namespaces))
    func aStoreOnAFullDiskIsFullAndStillReadable() async throws {
        let (server, ca) = try await Self.server()
        defer { server.stop() }
        let work = try Self.folder("fulldisk")
        defer { try? FileManager.default.removeItem(at: work) }
        let cache = try Self.recordedStore(server, ca, hosts: ["f1.fault.test"], in: work)
        let mount = work.appendingPathComponent("mnt").path
        try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
        let full = "mount -t tmpfs -o size=1m tmpfs \(Self.quoted(mount)) && mkdir \(Self.quoted(mount + "/c")) && cp \(Self.quoted(cache + "/aasa-fetch.sqlite")) \(Self.quoted(mount + "/c/"))"
            + " && (dd if=/dev/zero of=\(Self.quoted(mount + "/filler")) bs=4k 2>/dev/null; true) && "
        func run(_ command: String) throws -> ChildProcess.Output {
            try Self.shell("exec unshare -rm /bin/sh -c \(Self.quoted(full + "exec \"$AASA\" \(command) --cache \(Self.quoted(mount + "/c"))"))")
        }
        let shown = try run("show --json")
        #expect(shown.status == 0, "\(shown.standardError)")
        #expect(shown.standardOutput.contains("\"f1.fault.test\""))
        let written = try run(Self.network(server, ca).map(Self.quoted).joined(separator: " ") + " --domain applinks:f1.fault.test")
        #expect(written.status == 2, "\(written.standardError)")
        #expect(written.standardError.contains("aasa-fetch: store-full: "), "\(written.standardError)")
    }

    // MARK: - Stopping signals

    /// SIGTERM, SIGINT or SIGHUP while a host still downloads: the hosts that finished are printed
    /// and recorded, the one under way is not, and the process ends as the signal would have ended
    /// it (exit 128 + signal), with entries and with a list. Finished results were dropped: an
    /// entries run had no handler, and a list run ended at once. A document (JSON, SARIF, JUnit)
    /// is closed, so it can be read (it stopped inside its `domains` array): the entries whose
    /// hosts were not judged, the one under way and one never started, say `cancelled`.
    @Test(arguments: [(false, SIGTERM, nil), (true, SIGTERM, nil), (false, SIGINT, nil), (true, SIGHUP, nil),
                      (false, SIGINT, "json"), (true, SIGTERM, "json"), (false, SIGTERM, "sarif"), (true, SIGTERM, "junit")] as [(Bool, Int32, String?)])
    func aStoppedRunRecordsWhatFinished(list: Bool, signal: Int32, format: String?) async throws {
        let (server, ca) = try await Self.server(hosts: ["slow.fault.test": .neverAnswer])
        defer { server.stop() }
        let work = try Self.folder("stopped")
        defer { try? FileManager.default.removeItem(at: work) }
        let cache = work.appendingPathComponent("cache").path
        // One at a time: later.fault.test waits behind slow.fault.test and never starts.
        let started = ["a.fault.test", "b.fault.test", "slow.fault.test"]
        let hosts = started + ["later.fault.test"]
        var input = hosts.flatMap { ["--domain", "applinks:\($0)"] }
        if list {
            let file = work.appendingPathComponent("list.txt")
            try Data(hosts.joined(separator: "\n").utf8).write(to: file)
            input = ["--domains", file.path]
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ToolRunner.binary)
        process.arguments = input + Self.network(server, ca).filter { $0 != "--quiet" } + ["--cache", cache, "--no-config", "--concurrency", "1"]
            + (format.map { ["--format", $0] } ?? [])
        process.environment = ChildProcess.inheritedEnvironment.merging(["NO_COLOR": "1", "TMPDIR": work.path]) { _, new in new }
        let output = work.appendingPathComponent("stdout.txt")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let asked = await waitUntil(timeout: .seconds(20)) { Set(server.requests().compactMap(\.sni)).isSuperset(of: started) }
        #expect(asked, "\(server.requests().map { "\($0.event) \($0.sni ?? "-") \($0.host ?? "-")" })")
        try await Task.sleep(for: .milliseconds(500))
        kill(process.processIdentifier, signal)
        #expect(ChildProcess.waitForExit(process, timeout: .seconds(20)))
        #expect(process.terminationStatus == 128 + signal, "\(process.terminationReason) \(process.terminationStatus)")
        let printed = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        #expect(printed.contains("a.fault.test") && printed.contains("b.fault.test"), "\(printed)")
        let stored = try Self.storedCodes(cache)
        #expect(stored["a.fault.test"] == "ok" && stored["b.fault.test"] == "ok", "\(stored)")
        #expect(stored["slow.fault.test"] == .some(nil), "\(stored)")
        // The spool is gone.
        let left = try FileManager.default.contentsOfDirectory(atPath: work.path).filter { $0.hasPrefix("aasa-fetch-spool") }
        #expect(left.isEmpty, "\(left)")
        switch format {
        case "json":
            let document = try #require(try JSONSerialization.jsonObject(with: Data(printed.utf8)) as? [String: Any], "\(printed)")
            #expect(try SchemaValidator.problems(in: [.init(schema: "fetch", text: printed, origin: "stopped run")]).isEmpty)
            let entries = Dictionary(uniqueKeysWithValues: ((document["entries"] as? [[String: Any]]) ?? []).map {
                ($0["host"] as? String ?? "", $0["code"] as? String ?? "")
            })
            #expect(entries == ["a.fault.test": "ok", "b.fault.test": "ok", "slow.fault.test": "cancelled", "later.fault.test": "cancelled"], "\(entries)")
        case "sarif":
            #expect(try CIFormatValidator.sarifProblems([printed]) == [[]], "\(printed)")
        case "junit":
            #expect(try CIFormatValidator.junit([printed]).first?["problems"] as? [String] == [], "\(printed)")
        default:
            break
        }
    }

    // MARK: - TMPDIR

    /// The run spool in a `TMPDIR` that is missing or not writable: `spool-error`, exit 2, nothing
    /// recorded, nothing left behind.
    @Test func aMissingTemporaryFolderIsASpoolError() throws {
        let work = try Self.folder("tmpdir")
        defer { try? FileManager.default.removeItem(at: work) }
        let list = work.appendingPathComponent("list.txt")
        try Data("a.example.com\nb.example.com\n".utf8).write(to: list)
        let cache = work.appendingPathComponent("cache").path
        let run = try ToolRunner.run(["--domains", list.path, "--quiet", "--connect-to", "::127.0.0.1:9", "--allow-private"], cache: cache,
                                     environment: ["TMPDIR": work.appendingPathComponent("missing/deeper").path])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("spool-error"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: work.appendingPathComponent("missing").path))
    }

    /// A `TMPDIR` that is read-only or full (a tiny tmpfs in a mount namespace): `spool-error`,
    /// exit 2, the spool removed.
    @Test(.enabled(if: Self.namespaces), .disabled(if: TestSanitizer.active == "thread", Self.threadSanitizerNeedsRoom), arguments: ["ro", "size=32k"])
    func aReadOnlyOrFullTemporaryFolderIsASpoolError(mountOptions: String) throws {
        let work = try Self.folder("tmpfull")
        defer { try? FileManager.default.removeItem(at: work) }
        let list = work.appendingPathComponent("list.txt")
        try Data((0..<3000).map { "host\($0).example.com" }.joined(separator: "\n").utf8).write(to: list)
        let tmp = work.appendingPathComponent("tmp")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        let inner = """
            mount -t tmpfs -o \(mountOptions) tmpfs \(Self.quoted(tmp.path)) || exit 99
            "$AASA" --domains \(Self.quoted(list.path)) --no-store --quiet --connect-to ::127.0.0.1:9 --allow-private
            status=$?
            echo "left: $(ls -A \(Self.quoted(tmp.path)) | wc -l)" >&2
            exit $status
            """
        let run = try Self.shell("exec unshare -rm /bin/sh -c \(Self.quoted(inner))", environment: ["TMPDIR": tmp.path])
        #expect(run.status == 2, "\(run.standardError)")
        #expect(run.standardError.contains("spool-error"), "\(run.standardError)")
        #expect(run.standardError.contains("left: 0"), "\(run.standardError)")
    }

    // MARK: - A store on a full disk

    /// The disk fills while a run records (a small tmpfs in a mount namespace: the schema and one
    /// host's large file fit, six more do not): `store-full`, exit 2, and still the whole run's
    /// output on standard output; what an earlier run recorded is kept, and the store stays readable.
    @Test(.enabled(if: Self.namespaces))
    func aStoreThatFillsTheDiskMidRunSaysStoreFullAndKeepsTheOutput() async throws {
        // About 90 KB of valid file per host. The disk: the first run fits from about 600 KiB, the
        // second stops fitting below about 1.4 MiB (the store keeps a host's body and its approved
        // copy); 960 KiB sits between.
        let components = (0..<3000).map { #"{"/":"/p\#($0)/*"}"# }.joined(separator: ",")
        let large = #"{"applinks":{"details":[{"appIDs":["\#(Self.appID)"],"components":[\#(components)]}]}}"#
        let (server, ca) = try await Self.server(hosts: Dictionary(uniqueKeysWithValues: (1...7).map {
            ("f\($0).fault.test", FaultBehavior.respond(headers: [("Content-Type", "application/json")], body: large))
        }))
        defer { server.stop() }
        let work = try Self.folder("storefull")
        defer { try? FileManager.default.removeItem(at: work) }
        let disk = work.appendingPathComponent("disk")
        try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
        let cache = disk.appendingPathComponent("cache").path
        let shownFile = work.appendingPathComponent("shown.json")
        func arguments(_ hosts: ClosedRange<Int>) -> String {
            (Self.network(server, ca) + ["--json", "--cache", cache] + hosts.flatMap { ["--domain", "applinks:f\($0).fault.test"] })
                .map(Self.quoted).joined(separator: " ")
        }
        let inner = """
            mount -t tmpfs -o size=960k tmpfs \(Self.quoted(disk.path)) || exit 99
            "$AASA" \(arguments(1...1)) > /dev/null || { echo "first run: $?" >&2; exit 98; }
            "$AASA" \(arguments(1...7))
            status=$?
            "$AASA" show --json --cache \(Self.quoted(cache)) > \(Self.quoted(shownFile.path)) || echo "show failed: $?" >&2
            exit $status
            """
        let run = try Self.shell("exec unshare -rm /bin/sh -c \(Self.quoted(inner))")
        #expect(run.status == 2, "\(run.standardError)")
        #expect(run.standardError.contains("aasa-fetch: store-full: \(cache)/aasa-fetch.sqlite: the disk is full"), "\(run.standardError)")
        // The run's own document is whole: every host, each with its result.
        let document = try JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [String: Any]
        let domains = document?["domains"] as? [[String: Any]] ?? []
        #expect(domains.count == 7, "\(run.standardOutput.prefix(500))")
        #expect(domains.allSatisfy { $0["associated"] as? Bool == true }, "\(domains)")
        // The store is readable; the first run's result is still there, the second's did not fit.
        #expect(!run.standardError.contains("show failed"), "\(run.standardError)")
        let shown = try JSONSerialization.jsonObject(with: Data(contentsOf: shownFile)) as? [String: Any]
        let codes = Dictionary((shown?["hosts"] as? [[String: Any]] ?? []).map { ($0["host"] as? String ?? "", $0["code"] as? String) }) { $1 }
        #expect(codes["f1.fault.test"] == .some("ok"), "\(codes)")
        #expect(codes.values.filter { $0 == "ok" }.count < 7, "\(codes)")
    }

    // MARK: - A file where a folder should be

    /// A store, an export folder or `TMPDIR` under a plain file: each names its code and the
    /// system's reason, never Foundation's "The operation could not be completed. (NSCocoaErrorDomain
    /// error 512.)".
    @Test func aFileWhereAFolderShouldBeSaysWhy() async throws {
        let (server, ca) = try await Self.server()
        defer { server.stop() }
        let work = try Self.folder("notafolder")
        defer { try? FileManager.default.removeItem(at: work) }
        let file = work.appendingPathComponent("plain")
        try Data("x".utf8).write(to: file)
        func expect(_ run: ToolRunner.Result, code: String, _ message: String, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(run.status == 2, "\(run.stderr)", sourceLocation: sourceLocation)
            #expect(run.stderr.contains("\(code): \(message): Not a directory"), "\(run.stderr)", sourceLocation: sourceLocation)
            #expect(!run.stderr.contains("NSCocoaErrorDomain") && !run.stderr.contains("could not be completed"), "\(run.stderr)",
                    sourceLocation: sourceLocation)
        }
        let store = file.appendingPathComponent("cache").path
        expect(try ToolRunner.run(Self.network(server, ca) + ["--domain", "applinks:n1.fault.test"], cache: store),
               code: "store-unreadable", "cannot create \(store)")

        let cache = try Self.recordedStore(server, ca, hosts: ["n1.fault.test"], in: work)
        let out = file.appendingPathComponent("out").path
        expect(try ToolRunner.run(["export", "--out", out], cache: cache), code: "export-unwritable", "cannot create \(out)")
        // A route's folder that is a file: the folder named is that one.
        let exported = work.appendingPathComponent("exported")
        try FileManager.default.createDirectory(at: exported, withIntermediateDirectories: true)
        try Data("x".utf8).write(to: exported.appendingPathComponent("origin"))
        expect(try ToolRunner.run(["export", "--out", exported.path], cache: cache), code: "export-unwritable",
               "cannot create \(exported.appendingPathComponent("origin").path)")

        let list = work.appendingPathComponent("list.txt")
        try Data("n1.fault.test\n".utf8).write(to: list)
        let spooled = try ToolRunner.run(Self.network(server, ca) + ["--domains", list.path], cache: cache, environment: ["TMPDIR": file.path])
        #expect(spooled.status == 2, "\(spooled.stderr)")
        #expect(spooled.stderr.contains("spool-error: cannot create the run spool in \(file.path): Not a directory"), "\(spooled.stderr)")
    }

    // MARK: - One fresh store, many processes

    /// Several processes creating one fresh store at once: the schema is created once, under a
    /// lock, and every process records (before, one in three trials failed with `table hosts
    /// already exists` or `no such table: grdb_migrations`).
    @Test func processesCreatingOneStoreAtOnceAllSucceed() throws {
        let work = try Self.folder("race")
        defer { try? FileManager.default.removeItem(at: work) }
        let processes = 6
        for trial in 0..<10 {
            let cache = work.appendingPathComponent("cache-\(trial)")
            var running: [(Process, URL)] = []
            for index in 0..<processes {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: ToolRunner.binary)
                process.arguments = ["--domain", "applinks:p\(index).example.com", "--cache", cache.path, "--quiet", "--retry-delays", "",
                                     "--connect-to", "::127.0.0.1:9", "--allow-private", "--connect-timeout", "2"]
                let errorFile = work.appendingPathComponent("\(trial)-\(index).err")
                _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
                process.standardInput = FileHandle.nullDevice
                process.standardOutput = FileHandle.nullDevice
                process.standardError = try FileHandle(forWritingTo: errorFile)
                running.append((process, errorFile))
            }
            // Started back to back: they open the missing store within a few milliseconds.
            for (process, _) in running { try process.run() }
            for (index, (process, errorFile)) in running.enumerated() {
                #expect(ChildProcess.waitForExit(process, timeout: .seconds(60)))
                let stderr = (try? String(contentsOf: errorFile, encoding: .utf8)) ?? ""
                // 1: the host is unreachable and recorded as such; 2 would be a store failure.
                #expect(process.terminationStatus == 1, "trial \(trial), process \(index): exit \(process.terminationStatus): \(stderr)")
            }
            #expect(try Self.storedCodes(cache.path).count == processes, "trial \(trial)")
        }
    }
}

extension ChildProcess.Output {
    /// Standard output as a JSON object, `nil` when it is not one.
    var jsonObject: [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(standardOutput.utf8)) as? [String: Any]
    }
}
