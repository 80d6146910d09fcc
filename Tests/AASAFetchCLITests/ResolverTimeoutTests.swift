import AASAFetchTestSupport
import Foundation
import Testing

/// A name server that never answers. The run happens in network and mount namespaces of its own
/// (`unshare -rnm`), whose `/etc/resolv.conf` names a UDP socket of the namespace that reads
/// queries and answers none; nothing leaves the namespace.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ResolverTimeoutTests {
    /// Whether `unshare -rnm` can give a child its own network, and its own `/etc/resolv.conf`.
    static let available: Bool = {
        guard let unshare = ChildProcess.find("unshare"), ChildProcess.find("python3") != nil,
              FileManager.default.fileExists(atPath: "/etc/resolv.conf") else { return false }
        let probe = "echo 'nameserver 127.0.0.53' > /tmp/.probe-resolv-$$ && mount --bind /tmp/.probe-resolv-$$ /etc/resolv.conf; s=$?; rm -f /tmp/.probe-resolv-$$; exit $s"
        return (try? ChildProcess.run(unshare, ["-rnm", "/bin/sh", "-c", probe], timeout: .seconds(10)).status) == 0
    }()

    /// Runs the tool with `arguments` (and `--no-config --json --quiet`) in the namespaces, whose
    /// one name server never answers; returns its JSON document.
    static func run(_ arguments: [String]) throws -> [String: Any] {
        let work = try HostileEnvironmentTests.folder("resolver")
        defer { try? FileManager.default.removeItem(at: work) }
        let resolv = work.appendingPathComponent("resolv.conf")
        try Data("nameserver 127.0.0.53\noptions timeout:5 attempts:3\n".utf8).write(to: resolv)
        let q = HostileEnvironmentTests.quoted
        let inner = """
            ip link set lo up 2>/dev/null || exit 99
            mount --bind \(q(resolv.path)) /etc/resolv.conf || exit 99
            timeout 60 python3 -c 'import socket
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.53", 53))
            while True: s.recvfrom(4096)' &
            server=$!
            sleep 0.3
            "$AASA" \((arguments + ["--no-config", "--json", "--quiet"]).map(q).joined(separator: " ")); status=$?
            kill $server; wait $server 2>/dev/null
            exit $status
            """
        let run = try HostileEnvironmentTests.shell("exec unshare -rnm /bin/sh -c \(q(inner))", timeout: .seconds(120))
        #expect(run.status != 99, "the namespace could not be set up: \(run.standardError)")
        return try #require(try JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [String: Any], "\(run.standardError)")
    }

    /// A lookup that times out ends the transfer at its own time limit, and the other transfers
    /// of its curl loop go on. Regression: libcurl 7.88 joined the abandoned resolver thread, so
    /// the loop (every transfer on it) waited for the system resolver's timeouts, about 30 s, past
    /// `--max-time 2`.
    @Test(.enabled(if: available, "needs unshare -rnm and python3"))
    func aNameServerThatNeverAnswersCostsOnlyTheTimeLimit() throws {
        // A second host on the same loop (one loop, one transfer at a time), queued behind the
        // first: an address of the namespace where nothing listens, refused at once. Its time
        // counts from when it was queued, so it shows how long the loop was held.
        let report = try Self.run(["fetch", "--no-store", "--threads", "1", "--concurrency", "1", "--domain", "applinks:silent-dns.example.com",
                                   "--domain", "applinks:other.example.net", "--resolve", "other.example.net:443:127.0.0.1", "--allow-private",
                                   "--app-id", FetchIntegrationTests.appID, "--retry-delays", "", "--connect-timeout", "1", "--max-time", "2"])
        let domains = report["domains"] as? [[String: Any]] ?? []
        let domain = try #require(domains.first { $0["host"] as? String == "silent-dns.example.com" }, "\(report)")
        let other = try #require(domains.first { $0["host"] as? String == "other.example.net" }, "\(report)")
        #expect(other["code"] as? String == "connect-failure", "\(other)")
        let otherAttempts = (other["attempts"] as? [[String: Any]])?.compactMap { $0["milliseconds"] as? Int } ?? []
        #expect(otherAttempts.allSatisfy { $0 < 5_000 }, "the loop was held: \(otherAttempts)")
        #expect(domain["code"] as? String == "timeout", "\(domain)")
        let attempts = (domain["attempts"] as? [[String: Any]])?.compactMap { $0["milliseconds"] as? Int } ?? []
        // --max-time 2: the attempt ends then (libcurl's resolver gives up at the connect time,
        // 1 s), not when the system resolver's 5 s × 3 tries run out.
        #expect(attempts.count == 1 && attempts.allSatisfy { $0 < 5_000 }, "\(attempts)")
    }

    /// `diagnose`'s DNS step waits at most the connect time and says the name servers did not
    /// answer, with the code `fetch` gives (`timeout`). Regression: it waited the system
    /// resolver's whole timeouts and said `dns-failure`, "publish DNS records for the host".
    @Test(.enabled(if: available, "needs unshare -rnm and python3"))
    func diagnoseSaysTheNameServersDidNotAnswer() throws {
        let report = try Self.run(["diagnose", "silent-dns.example.com", "--app-id", FetchIntegrationTests.appID, "--connect-timeout", "1"])
        let diagnoses = try #require(report["diagnoses"] as? [[String: Any]], "\(report)")
        let steps = try #require(diagnoses.first?["steps"] as? [[String: Any]], "\(report)")
        let dns = try #require(steps.first { $0["step"] as? String == "dns" }, "\(steps)")
        #expect(dns["status"] as? String == "failed" && dns["code"] as? String == "timeout", "\(dns)")
        #expect((dns["summary"] as? String)?.contains("no answer from the name servers within 1 s") == true, "\(dns)")
    }
}
