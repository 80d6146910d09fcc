import AASAFetchTestSupport
import Foundation
import Glibc
import Testing

/// The address policy for a host that has a public address behind private ones. The run happens in
/// a network namespace of its own (`unshare -rn`), where `1.2.3.4` is an address of the
/// namespace's loopback interface and a small HTTPS server listens on it; nothing leaves the
/// namespace.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct AddressPolicyNamespaceTests {
    static let publicAddress = "1.2.3.4"

    /// Whether `unshare -rn` gives a child a network namespace where it can add that address.
    static let available: Bool = {
        guard let unshare = ChildProcess.find("unshare"), ChildProcess.find("ip") != nil, ChildProcess.find("python3") != nil else {
            return false
        }
        let probe = "ip link set lo up && ip addr add \(publicAddress)/32 dev lo"
        return (try? ChildProcess.run(unshare, ["-rn", "/bin/sh", "-c", probe], timeout: .seconds(10)).status) == 0
    }()

    /// Serves `argv[3]` at the association path over HTTPS on 1.2.3.4:443 (`argv[1]`, `argv[2]`:
    /// certificate and key), and creates `argv[4]` once it listens.
    static let server = """
        import http.server, ssl, sys
        body = open(sys.argv[3], 'rb').read()
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'
            def log_message(self, *args): pass
            def do_GET(self):
                self.send_response(200 if self.path == '/.well-known/apple-app-site-association' else 404)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)
        server = http.server.HTTPServer(('\(publicAddress)', 443), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[1], sys.argv[2])
        server.socket = context.wrap_socket(server.socket, server_side=True)
        open(sys.argv[4], 'w').close()
        server.serve_forever()
        """

    /// Runs `fetch` for `example.com` resolved to `addresses` (in that order) inside the
    /// namespace, with the server up; returns the domain's JSON object.
    static func fetch(addresses: [String], in work: URL) throws -> [String: Any] {
        let ca = try TestCA.shared()
        let leaf = try ca.leaf(for: ["example.com"])
        let script = work.appendingPathComponent("server.py")
        try Data(server.utf8).write(to: script)
        let body = work.appendingPathComponent("aasa.json")
        try Data(FetchIntegrationTests.good.utf8).write(to: body)
        let ready = work.appendingPathComponent("ready").path
        let q = HostileEnvironmentTests.quoted
        let arguments = ["--no-store", "--no-config", "--json", "--quiet", "--domain", "applinks:example.com", "--app-id", FetchIntegrationTests.appID,
                         "--cacert", ca.caCertPath, "--retry-delays", "", "--connect-timeout", "3", "--max-time", "10",
                         "--resolve", "example.com:443:" + addresses.joined(separator: ",")].map(q).joined(separator: " ")
        let inner = """
            ip link set lo up && ip addr add \(publicAddress)/32 dev lo || exit 99
            timeout 60 python3 \(q(script.path)) \(q(leaf.certificatePath)) \(q(leaf.keyPath)) \(q(body.path)) \(q(ready)) &
            server=$!
            i=0; while [ ! -e \(q(ready)) ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
            "$AASA" \(arguments); status=$?
            kill $server; wait $server 2>/dev/null
            exit $status
            """
        let run = try HostileEnvironmentTests.shell("exec unshare -rn /bin/sh -c \(q(inner))", timeout: .seconds(90))
        #expect(run.status != 99, "the namespace could not be set up: \(run.standardError)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [String: Any], "\(run.standardError)")
        return try #require((report["domains"] as? [[String: Any]])?.first, "\(run.standardOutput)")
    }

    /// Private addresses ahead of the public one are refused and skipped at once: the host is
    /// fetched from the public address. Regression: libcurl 7.88 tried a host's next address
    /// only when a timer of the transfer fired (200 ms, then half of the connect time left), so
    /// 20 refused addresses turned a reachable host into a `timeout`.
    @Test(.enabled(if: available, "needs unshare -rn, ip and python3"), arguments: [
        (0..<40).map { "10.0.\($0 / 200).\($0 % 200 + 1)" },
        (1...20).map { "[fd00::\($0)]" } + (1...20).map { "192.168.0.\($0)" },
    ])
    func privateAddressesAheadOfAPublicOneAreSkipped(privateOnes: [String]) throws {
        let work = try HostileEnvironmentTests.folder("address-policy")
        defer { try? FileManager.default.removeItem(at: work) }
        let domain = try Self.fetch(addresses: privateOnes + [Self.publicAddress], in: work)
        #expect(domain["code"] as? String == "ok", "\(domain)")
        #expect(domain["httpStatus"] as? Int == 200)
    }

    /// Only private addresses: `private-address`, naming every one.
    @Test(.enabled(if: available, "needs unshare -rn, ip and python3"))
    func onlyPrivateAddressesAreRefused() throws {
        let work = try HostileEnvironmentTests.folder("address-policy")
        defer { try? FileManager.default.removeItem(at: work) }
        let domain = try Self.fetch(addresses: (1...30).map { "10.1.0.\($0)" }, in: work)
        #expect(domain["code"] as? String == "private-address", "\(domain)")
        #expect((domain["reason"] as? String)?.contains("10.1.0.1, 10.1.0.2") == true && (domain["reason"] as? String)?.contains("10.1.0.30") == true,
                "\(domain)")
    }
}
