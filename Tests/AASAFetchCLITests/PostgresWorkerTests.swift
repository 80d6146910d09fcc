import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Glibc
import PostgresClient
import Testing

/// `--store postgres://…` end to end: the real binary records a run in a real PostgreSQL server,
/// `refresh --worker` processes share the due hosts, one is killed with SIGKILL while it holds
/// leases and the others take its hosts over after the lease lapses; show, export, forget and
/// match use the same store; bad URLs, unreachable servers and wrong passwords exit 2 with a code.
/// Everything on 127.0.0.1.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct PostgresWorkerTests {
    typealias Sites = StoreIntegrationTests.Sites
    typealias Running = StoreIntegrationTests.Running

    /// A TCP port that accepts connections (the kernel's backlog) and never answers: a download
    /// through it hangs until its time limit.
    final class Blackhole {
        let descriptor: Int32
        let port: Int

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0, listen(fd, 64) == 0 else {
                close(fd)
                throw TestSupportError("blackhole: cannot listen")
            }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            descriptor = fd
            port = Int(UInt16(bigEndian: address.sin_port))
        }

        deinit { close(descriptor) }
    }

    /// A store whose hosts were recorded once and are due again, behind a fault server that holds
    /// every later request until ``releaseDownloads()``: PostgreSQL, or with `sqlite` the SQLite
    /// file `aasa-fetch.sqlite` in ``work`` (then ``server`` is `nil`).
    struct HeldDownloads {
        let server: PostgresServer!
        let work: URL
        let fault: FaultServer
        let hosts: [String]
        let network: [String]
        let store: any AssociationStore
        let release: String

        /// Starts the servers and records the hosts; stops what it started when a step fails.
        static func start(_ name: String, sqlite: Bool = false) async throws -> HeldDownloads {
            let server = sqlite ? nil : try await PostgresServer.start()
            let work = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-pg-\(name)-\(UUID().uuidString)")
            let release = work.appendingPathComponent("release").path
            var fault: FaultServer?
            do {
                try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
                let ca = try TestCA.shared()
                let script = FaultScript(default: .holdUntilFile(release, body: StoreIntegrationTests.good,
                                                                 headers: [("Content-Type", "application/json")], wait: 120))
                let started = try await FaultServer.start(script: script, certificate: try ca.leaf(for: ["fault.test", "*.fault.test"]), lifetime: 300)
                fault = started
                return try await record(name, server: server, work: work, fault: started, ca: ca, release: release)
            } catch {
                fault?.stop()
                server?.stop()
                try? FileManager.default.removeItem(at: work)
                throw error
            }
        }

        private static func record(
            _ name: String, server: PostgresServer?, work: URL, fault: FaultServer, ca: TestCA, release: String
        ) async throws -> HeldDownloads {
            let hosts = (0..<6).map { "\(name)\($0).fault.test" }
            let list = work.appendingPathComponent("list.txt")
            try Data(hosts.joined(separator: "\n").utf8).write(to: list)
            let network = ["--cacert", ca.caCertPath, "--connect-to", fault.connectTo, "--allow-private", "--retry-delays", "",
                           "--connect-timeout", "5", "--max-time", "120"] + (server.map { ["--store", $0.url] } ?? ["--cache", work.path])
            // Recorded once, with the server answering at once; then every host is due.
            _ = FileManager.default.createFile(atPath: release, contents: nil)
            let recorded = try ToolRunner.run(["--domains", list.path, "--app-id", StoreIntegrationTests.appID, "--quiet"] + network)
            guard recorded.status == 0 else { throw TestSupportError("the recording run failed: \(recorded.stderr)") }
            try FileManager.default.removeItem(atPath: release)
            let store: any AssociationStore
            if let server {
                let postgres = try await PostgresAssociationStore.connect(url: server.url)
                try await postgres.setNextCheck(Date().addingTimeInterval(-1))
                store = postgres
            } else {
                let file = try SQLiteAssociationStore(path: work.appendingPathComponent(SQLiteAssociationStore.fileName).path, create: false)
                try await file.setNextCheck(Date().addingTimeInterval(-1))
                store = file
            }
            return HeldDownloads(server: server, work: work, fault: fault, hosts: hosts, network: network, store: store, release: release)
        }

        /// Starts aasa-fetch with `arguments` (and the store's network options) and waits until its
        /// request for every host is held by the server.
        func start(_ arguments: [String]) async throws -> Running {
            let running = try Running(arguments + network, cache: work)
            let reached = await waitUntil(timeout: .seconds(30)) { requests() == 2 * hosts.count }
            #expect(reached, "the run's requests reached the server: \(requests())")
            return running
        }

        /// Requests the fault server received, the recording run's included.
        func requests() -> Int { fault.requests().filter { $0.event == "request" }.count }

        /// Lets the held requests (and every later one) be answered.
        func releaseDownloads() { _ = FileManager.default.createFile(atPath: release, contents: nil) }

        func stop() {
            fault.stop()
            server?.stop()
            try? FileManager.default.removeItem(at: work)
        }
    }

    static func lines(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    @Test func workersShareDueHostsAndTakeOverAKilledWorkersLeases() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let sites = try await Sites.start(count: 60)
        defer { sites.stop() }
        let url = server.url
        let storeArguments = ["--store", url]

        // The default run records every host in PostgreSQL (nothing in the SQLite cache).
        let recorded = try sites.run(storeArguments + sites.network + sites.domains + ["--app-id", StoreIntegrationTests.appID, "--quiet", "--json"])
        #expect(recorded.status == 0, "stderr: \(recorded.stderr)")
        #expect(!FileManager.default.fileExists(atPath: sites.cache.appendingPathComponent(SQLiteAssociationStore.fileName).path))
        let store = try await PostgresAssociationStore.connect(url: url)
        #expect(try await store.allHosts().filter(\.isApproved).count == 60)
        #expect(Set(sites.requestCounts().values) == [1])

        // Every host due now.
        try await store.setNextCheck(Date().addingTimeInterval(-1))

        // The victim leases a batch first; its downloads hang (its network leads to a blackhole).
        let blackhole = try Blackhole()
        let victimNetwork = ["--cacert", sites.ca.caCertPath, "--connect-to", "::127.0.0.1:\(blackhole.port)", "--allow-private",
                             "--connect-timeout", "120", "--max-time", "120"]
        let victim = try Running(["refresh", "--worker", "--owner", "victim", "--lease", "4s", "--batch-size", "10",
                                  "--concurrency", "10", "--json"] + storeArguments + victimNetwork, cache: sites.cache)
        var victimLeases: [HostState] = []
        let leased = await waitUntil(timeout: .seconds(30)) {
            victimLeases = (try? await store.allHosts().filter { $0.lease?.owner == "victim" }) ?? []
            return victimLeases.count == 10
        }
        #expect(leased, "the victim leased its batch")
        let victimExpiry = try #require(victimLeases.compactMap(\.lease?.expires).max())

        // Two workers start at once; the victim is killed while it holds its leases.
        let workerArguments = ["refresh", "--worker", "--lease", "60s", "--batch-size", "5", "--concurrency", "4",
                               "--interval", "1s", "--json"] + storeArguments + sites.network
        let workers = try [Running(workerArguments + ["--owner", "worker-a"], cache: sites.cache),
                           Running(workerArguments + ["--owner", "worker-b"], cache: sites.cache)]
        kill(victim.process.processIdentifier, SIGKILL)
        let victimResult = victim.finish(timeout: .seconds(10))
        #expect(victim.process.terminationReason == .uncaughtSignal)
        #expect(Self.lines(victimResult.stdout).isEmpty, "the victim recorded nothing: \(victimResult.stdout)")

        // Wait (bounded) until every host is recorded by a refresh and no lease is left.
        let done = await waitUntil(timeout: .seconds(60), interval: .milliseconds(200)) {
            let states = (try? await store.allHosts()) ?? []
            return states.count == 60 && states.allSatisfy { $0.lease == nil && $0.lastResult?.httpStatus == 304 }
        }
        #expect(done, "the workers refreshed every host, the victim's after its leases lapsed")
        for worker in workers { kill(worker.process.processIdentifier, SIGTERM) }
        let results = workers.map { $0.finish(timeout: .seconds(30)) }
        for result in results {
            #expect(result.status == 0, "stderr: \(result.stderr)")
            #expect(result.stderr.contains("stopped"), "stderr: \(result.stderr)")
        }

        // One JSON line per batch; together the workers fetched each host once.
        let batches = results.flatMap { Self.lines($0.stdout) }
        let fetchedHosts = batches.flatMap { ($0["hosts"] as? [[String: Any]] ?? []).compactMap { $0["host"] as? String } }
        #expect(batches.allSatisfy { ($0["fetched"] as? Int ?? 0) <= 5 && $0["leaseLost"] as? [String] == [] })
        #expect(fetchedHosts.count == 60 && Set(fetchedHosts) == Set(sites.hosts), "\(fetchedHosts.count) fetches")
        let perWorker = results.map { Self.lines($0.stdout).reduce(0) { $0 + ($1["fetched"] as? Int ?? 0) } }
        print("postgres workers: hosts fetched by each \(perWorker) in \(batches.count) batches; the victim held 10")

        // The victim's hosts were fetched by the others only after its leases lapsed.
        let victimHosts = Set(victimLeases.map(\.key.host))
        for batch in batches {
            let hosts = (batch["hosts"] as? [[String: Any]] ?? []).compactMap { $0["host"] as? String }
            guard !victimHosts.isDisjoint(with: hosts), let now = (batch["now"] as? String).flatMap(Timestamp.parse) else { continue }
            #expect(now >= victimExpiry.addingTimeInterval(-1), "taken over at \(now), lease lapsed at \(victimExpiry)")
        }

        // nginx: each host once in the recording run and once in the refresh (the victim never got through).
        let counts = sites.requestCounts()
        #expect(counts.count == 60 && counts.values.allSatisfy { $0 == 2 }, "\(counts.filter { $0.value != 2 })")

        // Every result landed in one place.
        let states = try await store.states(of: sites.hosts.map { HostKey(host: $0) })
        #expect(states.count == 60)
        #expect(states.values.allSatisfy {
            $0.isApproved && $0.approvedBody == Array(StoreIntegrationTests.good.utf8) && $0.nextCheck > Date() && $0.consecutiveFailures == 0
        })

        // show, export, match and forget on the same store.
        let show = try sites.run(["show", "--json"] + storeArguments)
        #expect(show.status == 0, "stderr: \(show.stderr)")
        let shown = try show.json()
        #expect((shown["hosts"] as? [[String: Any]])?.count == 60)
        #expect((shown["store"] as? String)?.hasPrefix("postgresql://postgres@127.0.0.1:") == true)
        let out = sites.cache.appendingPathComponent("export")
        let export = try sites.run(["export", "--out", out.path] + storeArguments)
        #expect(export.status == 0, "stderr: \(export.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("origin").path).count == 60)
        let logged = sites.nginx.requests().count
        let match = try sites.run(["match", "https://h7.store.example.com/x", "--domain", "applinks:h7.store.example.com",
                                   "--app-id", StoreIntegrationTests.appID] + storeArguments + sites.network)
        #expect(match.status == 0, "stderr: \(match.stderr)")
        #expect(sites.nginx.requests().count == logged, "match used the stored file")
        #expect(try sites.run(["forget", "h7.store.example.com"] + storeArguments).status == 0)
        #expect(try sites.run(["show", "h7.store.example.com"] + storeArguments).status == 1)
        withExtendedLifetime(blackhole) {}
    }

    /// PostgreSQL goes away (killed, as a crash would end it) while a worker's batch downloads.
    /// The worker keeps what it fetched and says so (it used to drop the results and keep the
    /// hosts leased, so nobody fetched them again until the lease lapsed). With `restart`, the
    /// server comes back: the batch is recorded, as of when it was fetched, with no host fetched
    /// twice and no lease left. Without, the worker is stopped while the store is still away: exit
    /// 2, `store-unreachable`, naming the results it could not record.
    @Test(arguments: [true, false])
    func aBatchFetchedWhileTheStoreIsDownIsRecordedWhenItIsBack(restart: Bool) async throws {
        let held = try await HeldDownloads.start("d")
        defer { held.stop() }
        let (server, store, hosts): (PostgresServer, any AssociationStore, [String]) = (held.server, held.store, held.hosts)

        // The worker leases the batch; its downloads are held by the server while PostgreSQL dies.
        let worker = try await held.start(["refresh", "--worker", "--json", "--interval", "1s", "--lease", "300s", "--owner", "keeper"])
        server.kill()
        let killed = Date()
        held.releaseDownloads()
        let said = await waitUntil(timeout: .seconds(30)) {
            ((try? String(contentsOf: worker.err, encoding: .utf8)) ?? "").contains("6 fetched results are kept to be recorded first")
        }
        #expect(said, "stderr: \((try? String(contentsOf: worker.err, encoding: .utf8)) ?? "")")

        guard restart else {
            let result = worker.terminate(timeout: .seconds(60))
            #expect(result.status == 2, "stderr: \(result.stderr)")
            #expect(result.stderr.contains("aasa-fetch: store-unreachable: "), "stderr: \(result.stderr)")
            #expect(result.stderr.contains("6 fetched results were not recorded (their leases lapse)"), "stderr: \(result.stderr)")
            // With --json the error is the last line of standard output; no batch was reported.
            let lines = Self.lines(result.stdout)
            #expect(lines.count == 1 && (lines.first?["error"] as? [String: Any])?["code"] as? String == "store-unreachable",
                    "\(result.stdout)")
            return
        }
        let back = Date()
        try await server.restart()
        var states: [HostState] = []
        let done = await waitUntil(timeout: .seconds(30), interval: .milliseconds(200)) {
            states = (try? await store.allHosts()) ?? []
            return states.count == hosts.count && states.allSatisfy { $0.lease == nil && ($0.lastResult?.fetchedAt ?? .distantPast) > killed }
        }
        #expect(done, "the batch was recorded once the server was back: \(states.map { ($0.key.host, $0.lease?.owner, $0.lastResult?.fetchedAt) })")
        let result = worker.terminate(timeout: .seconds(60))
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let batches = Self.lines(result.stdout)
        #expect(batches.count == 1 && batches.first?["fetched"] as? Int == hosts.count && batches.first?["leaseLost"] as? [String] == [],
                "\(result.stdout)")
        #expect(states.allSatisfy { $0.isApproved && $0.consecutiveFailures == 0 })
        #expect(held.requests() == 2 * hosts.count, "no host was fetched again: \(held.requests()) requests")
        // Recorded as of the downloads, before the server was back.
        #expect(states.allSatisfy { ($0.lastResult?.fetchedAt ?? .distantFuture) < back })
    }

    /// The connection dies in the middle of recording a batch: two hosts' results are committed,
    /// the third's transaction is cut (twice, so the one quiet retry does not hide it). The batch
    /// is kept and recorded again when the store answers. The two committed hosts are this
    /// worker's own results, so they are reported as fetched, not as leases lost to another
    /// process (before: `lease-lost … (raise --lease)` for both, and they were missing from the
    /// batch's report).
    @Test func aBatchCutOffWhileItIsRecordedIsReportedWhole() async throws {
        let held = try await HeldDownloads.start("c")
        defer { held.stop() }
        let admin = try await PostgresConnection.connect(held.server.url)
        // Counts the rows a lease holder records (its lease released); the 3rd and 4th end the
        // server process that runs them, as a crash or a restart would.
        try await admin.execute("CREATE SEQUENCE recorded_rows")
        try await admin.execute("""
            CREATE FUNCTION cut_the_third() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF nextval('recorded_rows') IN (3, 4) THEN
                PERFORM pg_terminate_backend(pg_backend_pid());
                PERFORM pg_sleep(5);
              END IF;
              RETURN NEW;
            END $$
            """)
        try await admin.execute("""
            CREATE TRIGGER cut_the_third BEFORE UPDATE ON hosts FOR EACH ROW
            WHEN (OLD.lease_owner = 'keeper' AND NEW.lease_owner IS NULL) EXECUTE FUNCTION cut_the_third()
            """)
        held.releaseDownloads()
        let begun = Date()
        let worker = try Running(["refresh", "--worker", "--json", "--interval", "1s", "--lease", "300s", "--owner", "keeper"] + held.network,
                                 cache: held.work)
        var states: [HostState] = []
        let recorded = await waitUntil(timeout: .seconds(60), interval: .milliseconds(200)) {
            states = (try? await held.store.allHosts()) ?? []
            return states.count == held.hosts.count && states.allSatisfy { $0.lease == nil && ($0.lastResult?.fetchedAt ?? .distantPast) > begun }
        }
        #expect(recorded, "\(states.map { ($0.key.host, $0.lease?.owner, $0.lastResult?.fetchedAt) })")
        let cut = try await admin.execute("SELECT last_value FROM recorded_rows")
        await admin.close()
        let result = worker.terminate(timeout: .seconds(60))
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(cut.rows.first?.first == "\(held.hosts.count + 2)", "two cut attempts and one record per host: \(cut.rows)")
        #expect(result.stderr.contains("aasa-fetch: store-unreachable: lost the connection to "), "stderr: \(result.stderr)")
        #expect(result.stderr.contains("6 fetched results are kept to be recorded first"), "stderr: \(result.stderr)")
        #expect(!result.stderr.contains("lease-lost"), "stderr: \(result.stderr)")
        let batches = Self.lines(result.stdout).filter { ($0["fetched"] as? Int ?? 0) > 0 }
        #expect(batches.count == 1 && batches.first?["fetched"] as? Int == held.hosts.count && batches.first?["leaseLost"] as? [String] == [],
                "\(result.stdout)")
        let reported = (batches.first?["hosts"] as? [[String: Any]] ?? []).compactMap { $0["host"] as? String }
        #expect(reported.sorted() == held.hosts.sorted(), "\(reported)")
        #expect(held.requests() == 2 * held.hosts.count, "no host was fetched again: \(held.requests()) requests")
    }

    /// A pass whose lease lapsed while its downloads were held, and whose hosts another process
    /// took over meanwhile, does not record over them and says so (`lease-lost`, on standard
    /// error, and `leaseLost` in the report).
    @Test func aRefreshWhoseLeaseLapsedLeavesTheHostsToTheirNewOwner() async throws {
        let held = try await HeldDownloads.start("l")
        defer { held.stop() }
        let refresh = try await held.start(["refresh", "--json", "--lease", "2s"])
        try await Task.sleep(for: .seconds(3))  // its leases lapse
        let taken = try await held.store.claimDue(now: Date(), limit: 100, leaseSeconds: 600, owner: "newer")
        #expect(taken.hosts.count == held.hosts.count)
        held.releaseDownloads()
        let result = refresh.finish(timeout: .seconds(60))
        #expect(result.status == 0, "the newer results stand; nothing is broken: \(result.stderr)")
        #expect(result.stderr.contains("aasa-fetch: lease-lost: 6 hosts were recorded by another process meanwhile (a run, or a refresh that took over after this one's lease lapsed); their results were not recorded, the newer ones stand (if leases lapse, raise --lease): "),
                "stderr: \(result.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        #expect((report?["leaseLost"] as? [String])?.sorted() == held.hosts.sorted(), "\(result.stdout)")
        #expect(report?["fetched"] as? Int == 0, "\(result.stdout)")
        let states = try await held.store.allHosts()
        #expect(states.count == held.hosts.count && states.allSatisfy { $0.lease?.owner == "newer" }, "\(states.map { ($0.key.host, $0.lease?.owner) })")
    }

    /// A single `refresh` stopped while its downloads are in flight releases their leases at
    /// once, records nothing for them, and says how many it abandoned.
    @Test func aStoppedRefreshReleasesWhatItHadInFlight() async throws {
        let held = try await HeldDownloads.start("s")
        defer { held.stop() }
        let before = try await held.store.allHosts()
        let refresh = try await held.start(["refresh", "--json", "--lease", "300s"])
        let result = refresh.terminate(timeout: .seconds(60))
        #expect(result.status == 0, "stopped by a signal: \(result.stderr)")
        #expect(result.stderr.contains("aasa-fetch refresh: stopped; 6 hosts in flight were abandoned and released"), "stderr: \(result.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        #expect(report?["abandoned"] as? Int == held.hosts.count && report?["stopped"] as? Bool == true, "\(result.stdout)")
        let states = try await held.store.allHosts()
        let recordedAt = Dictionary(uniqueKeysWithValues: before.map { ($0.key.host, $0.lastResult?.fetchedAt) })
        #expect(states.allSatisfy { $0.lease == nil && $0.lastResult?.fetchedAt == recordedAt[$0.key.host] ?? nil },
                "\(states.map { ($0.key.host, $0.lease?.owner, $0.lastResult?.fetchedAt) })")
    }

    /// A SQLite store held locked by another process past the wait for it (10 s) when a pass's
    /// downloads end: the pass asks again after 2, 4 and 8 s, as for a PostgreSQL server that is
    /// away, and records its batch once the lock is gone. Before, it exited 2 (`store-locked`),
    /// and the hosts stayed leased until their leases lapsed.
    @Test func aRefreshWaitsOutASQLiteStoreLockedByAnotherProcess() async throws {
        let held = try await HeldDownloads.start("k", sqlite: true)
        defer { held.stop() }
        let refresh = try await held.start(["refresh", "--json", "--lease", "300s"])
        // Another process takes the store's write lock and keeps it for 13 s.
        let file = held.work.appendingPathComponent(SQLiteAssociationStore.fileName).path
        let marker = held.work.appendingPathComponent("locked").path
        let releasing = held.work.appendingPathComponent("releasing").path  // written just before the lock goes
        let locker = Process()
        locker.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        locker.arguments = ["python3", "-c", """
            import sqlite3, sys, time
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("BEGIN IMMEDIATE")
            open(sys.argv[2], "w").close()
            time.sleep(13)
            open(sys.argv[3], "w").close()
            c.execute("ROLLBACK")
            """, file, marker, releasing]
        try locker.run()
        defer { if locker.isRunning { locker.terminate() } }
        let locked = await waitUntil(timeout: .seconds(30)) { FileManager.default.fileExists(atPath: marker) }
        #expect(locked, "the lock holder started")
        held.releaseDownloads()
        let result = refresh.finish(timeout: .seconds(90))
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        #expect(report?["fetched"] as? Int == held.hosts.count, "\(result.stdout)")
        #expect(FileManager.default.fileExists(atPath: releasing), "recorded only once the lock was gone")
        let states = try await held.store.allHosts()
        #expect(states.count == held.hosts.count && states.allSatisfy { $0.lease == nil && $0.isApproved },
                "\(states.map { ($0.key.host, $0.lease?.owner, $0.lastResult?.fetchedAt) })")
        #expect(held.requests() == 2 * held.hosts.count, "no host was fetched again: \(held.requests()) requests")
    }

    /// A single `refresh` whose downloads end while PostgreSQL restarts records them once the
    /// server is back (it asks again after 2, 4 and 8 s): exit 0, every host recorded, none fetched
    /// twice. Before, it exited 2 and the hosts stayed leased until the lease lapsed.
    @Test func aRefreshRecordsItsBatchAfterAShortRestart() async throws {
        let held = try await HeldDownloads.start("r")
        defer { held.stop() }
        let refresh = try await held.start(["refresh", "--json", "--lease", "300s"])
        held.server.kill()
        let killed = Date()
        held.releaseDownloads()
        try await Task.sleep(for: .milliseconds(1500))
        try await held.server.restart()
        let result = refresh.finish(timeout: .seconds(60))
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        #expect(report?["fetched"] as? Int == held.hosts.count, "\(result.stdout)")
        let states = try await held.store.allHosts()
        #expect(states.count == held.hosts.count
                && states.allSatisfy { $0.lease == nil && $0.isApproved && ($0.lastResult?.fetchedAt ?? .distantPast) > killed },
                "\(states.map { ($0.key.host, $0.lease?.owner, $0.lastResult?.fetchedAt) })")
        #expect(held.requests() == 2 * held.hosts.count, "no host was fetched again: \(held.requests()) requests")
    }

    /// `refresh --watch` outlives a PostgreSQL restart: the passes while the server is away say
    /// so and the job goes on; once it is back, the passes report again (before: exit 2 at the
    /// first pass that found the server gone). Stopped, it exits 0.
    @Test func aWatchOutlivesARestartOfItsServer() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-pg-watch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        _ = try await PostgresAssociationStore.connect(url: server.url)  // the schema; nothing is due
        let watch = try Running(["refresh", "--watch", "--json", "--interval", "1s", "--store", server.url], cache: work)
        func output() -> (String, String) {
            ((try? String(contentsOf: watch.out, encoding: .utf8)) ?? "", (try? String(contentsOf: watch.err, encoding: .utf8)) ?? "")
        }
        let reported = await waitUntil(timeout: .seconds(30)) { !Self.lines(output().0).isEmpty }
        #expect(reported, "a first pass reported")
        server.kill()
        let waited = await waitUntil(timeout: .seconds(30)) { output().1.contains("; the next pass in 1 s") }
        #expect(waited && watch.process.isRunning, "stderr: \(output().1)")
        let back = Date()
        try await server.restart()
        let again = await waitUntil(timeout: .seconds(30)) {
            Self.lines(output().0).contains { ($0["now"] as? String).flatMap(Timestamp.parse).map { $0 > back } ?? false }
        }
        #expect(again, "a pass reported after the server was back: \(output().0)")
        let result = watch.terminate(timeout: .seconds(30))
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("aasa-fetch: store-unreachable: "), "stderr: \(result.stderr)")
        #expect(result.stderr.hasSuffix("aasa-fetch refresh: stopped\n"), "stderr: \(result.stderr)")
        #expect(Self.lines(result.stdout).allSatisfy { $0["error"] == nil }, "\(result.stdout)")
    }

    /// Workers on machines whose clocks differ share one store: a worker whose clock runs 10 min
    /// ahead (libfaketime) does not take over the live 60 s leases of another, whose downloads are
    /// still running; it says its clock is off and follows the server's. Before, it saw those
    /// leases as lapsed, fetched the hosts again, and the other worker's results were dropped as
    /// lost leases, with the advice to raise `--lease`.
    @Test(.enabled(if: FakeTime.usable, "needs faketime (scripts/install-deps) and no sanitizer (its runtime must be loaded first)"))
    func aWorkerWithAClockAheadLeavesOthersLiveLeases() async throws {
        let held = try await HeldDownloads.start("s")
        defer { held.stop() }
        let (store, hosts, network, work) = (held.store, held.hosts, held.network, held.work)

        // The punctual worker leases every host; the server holds its downloads.
        let workerArguments = ["refresh", "--worker", "--json", "--interval", "1s", "--lease", "60s"] + network
        let punctual = try Running(workerArguments + ["--owner", "punctual"], cache: work)
        let leased = await waitUntil(timeout: .seconds(30)) { held.requests() == 2 * hosts.count }
        #expect(leased, "the punctual worker's requests reached the server: \(held.requests())")

        // The worker 10 min ahead starts, says so, and idles: it asks for due hosts every second.
        let ahead = try Running(workerArguments + ["--owner", "ahead"], cache: work,
                                environment: FakeTime.environment("+10m"))
        let said = await waitUntil(timeout: .seconds(30)) {
            ((try? String(contentsOf: ahead.err, encoding: .utf8)) ?? "").contains("batches of")
        }
        #expect(said)
        try await Task.sleep(for: .seconds(3))
        let owners = Set(try await store.allHosts().compactMap { $0.lease?.owner })
        #expect(owners == ["punctual"], "\(owners)")
        #expect(held.requests() == 2 * hosts.count, "the worker ahead fetched hosts leased to the other: \(held.requests()) requests")

        // The punctual worker's downloads end: its results are recorded, none lost.
        held.releaseDownloads()
        let done = await waitUntil(timeout: .seconds(30), interval: .milliseconds(200)) {
            let states = (try? await store.allHosts()) ?? []
            return states.count == hosts.count && states.allSatisfy { $0.lease == nil && $0.nextCheck > Date() }
        }
        #expect(done)
        for worker in [punctual, ahead] { kill(worker.process.processIdentifier, SIGTERM) }
        let (punctualResult, aheadResult) = (punctual.finish(timeout: .seconds(30)), ahead.finish(timeout: .seconds(30)))
        #expect(punctualResult.status == 0 && aheadResult.status == 0, "\(punctualResult.stderr) \(aheadResult.stderr)")
        #expect(aheadResult.stderr.contains("aasa-fetch refresh: this machine's clock is 10 min ahead of the store's server; leases and due times follow the server's clock"),
                "\(aheadResult.stderr)")
        #expect(!punctualResult.stderr.contains("lease-lost"), "\(punctualResult.stderr)")
        let batches = Self.lines(punctualResult.stdout)
        #expect(batches.reduce(0) { $0 + ($1["fetched"] as? Int ?? 0) } == hosts.count && Self.lines(aheadResult.stdout).isEmpty,
                "punctual: \(punctualResult.stdout) ahead: \(aheadResult.stdout)")
    }

    /// A worker whose PostgreSQL server hangs (frozen: connections open, nothing answers) still
    /// stops on SIGTERM: it gives the store 10 s, says it did not answer, and exits (it used to
    /// wait for the server for good).
    @Test func aWorkerStopsOnASignalWhileItsServerIsFrozen() async throws {
        let server = try await PostgresServer.start()
        defer {
            server.resume()
            server.stop()
        }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-pg-frozen-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        _ = try await PostgresAssociationStore.connect(url: server.url)  // the schema; nothing is due
        let worker = try Running(["refresh", "--worker", "--json", "--interval", "1s", "--store", server.url], cache: work)
        let started = await waitUntil(timeout: .seconds(30)) {
            ((try? String(contentsOf: worker.err, encoding: .utf8)) ?? "").contains("batches of")
        }
        #expect(started)
        // Idle, it asks the store about every second: after 1.5 s frozen, it waits for an answer.
        try await Task.sleep(for: .milliseconds(1500))
        server.pause()
        try await Task.sleep(for: .milliseconds(1500))
        kill(worker.process.processIdentifier, SIGTERM)
        let signalled = ContinuousClock.now
        let result = worker.finish(timeout: .seconds(40))
        let waited = signalled.duration(to: .now)
        #expect(worker.process.terminationReason == .exit && result.status == 0, "stderr: \(result.stderr)")
        #expect(waited < .seconds(35), "\(waited)")  // the 10 s grace, not the server's return
        #expect(result.stderr.contains("aasa-fetch: store-unreachable: ")
                && result.stderr.contains("the server did not answer before the process stopped waiting; stopping"), "stderr: \(result.stderr)")
        #expect(result.stderr.hasSuffix(" stopped\n"), "stderr: \(result.stderr)")
    }

    @Test func badURLsUnreachableServersAndWrongPasswordsExitTwoWithACode() async throws {
        let server = try await PostgresServer.start(password: "s3cret-pw")
        defer { server.stop() }
        let closed = try Loopback.freePort()
        let cases: [(String, String)] = [
            ("mysql://root@127.0.0.1/aasa", "store-bad-url"),
            ("postgres://postgres@127.0.0.1:notaport/postgres", "store-bad-url"),
            ("postgres://postgres@127.0.0.1:\(closed)/postgres?connect_timeout=3", "store-unreachable"),
            ("postgresql://postgres:wrong-pw@127.0.0.1:\(server.port)/postgres", "store-auth-failed"),
            ("postgresql://postgres:s3cret-pw@127.0.0.1:\(server.port)/missing_db", "store-missing"),
        ]
        for (url, code) in cases {
            for arguments in [["refresh", "--worker"], ["show"], ["export"], ["forget", "x.example.com"],
                              ["--domain", "applinks:example.com", "--quiet"]] {
                let result = try ToolRunner.run(arguments + ["--store", url], timeout: .seconds(60))
                #expect(result.status == 2, "\(arguments) \(url): \(result.stderr)")
                #expect(result.stderr.contains("aasa-fetch: \(code): "), "\(arguments) \(url): \(result.stderr)")
                #expect(!result.stderr.contains("wrong-pw") && !result.stderr.contains("s3cret-pw"), "no password in messages: \(result.stderr)")
                #expect(result.stdout.isEmpty)
            }
        }
        // The right password works, and an empty store has nothing due.
        let refresh = try ToolRunner.run(["refresh", "--store", server.url])
        #expect(refresh.status == 0, "stderr: \(refresh.stderr)")
        let usage = try ToolRunner.run(["refresh", "--worker", "--watch", "--store", server.url])
        #expect(usage.status == 64)
    }
}
