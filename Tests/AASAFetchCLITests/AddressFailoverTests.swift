import AASAFetchTestSupport
import Foundation
import Glibc
import Testing

/// A host with several addresses: one that never answers, or private ones that are refused, ahead
/// of one that works. libcurl 7.88, driven through its socket interface, moved on to the next
/// address only when a timer of the transfer fired, and none is set for an address's share of
/// the connect time; the curl loops now have it look again (`MultiLoop`'s nudge).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct AddressFailoverTests {
    /// A listener on 127.0.0.2:`port` whose queue is full: the kernel drops further SYNs, so a
    /// connection to it is neither made nor refused until the connect time runs out.
    final class SilentListener {
        private var sockets: [Int32] = []

        init(port: Int) throws {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.2")
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard listener >= 0 else { throw TestSupportError("socket: \(errno)") }
            sockets.append(listener)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0, listen(listener, 0) == 0 else { throw TestSupportError("bind/listen 127.0.0.2:\(port): \(errno)") }
            // Fill the accept queue (a backlog of 0 holds one): later SYNs are dropped.
            for _ in 0..<3 {
                let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
                guard client >= 0 else { continue }
                sockets.append(client)
                _ = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
            }
            usleep(100_000)
        }

        func close() {
            for socket in sockets { Glibc.close(socket) }
            sockets = []
        }

        deinit { close() }
    }

    /// The first address never answers, the second serves the file: fetched from the second once
    /// the first's share of the connect time (half of it) ran out. Regression: `timeout` after
    /// the whole connect time, the second address never tried (curl's own tool tries it).
    @Test(arguments: [1, 2])
    func aSilentFirstAddressGivesWayToTheNext(threads: Int) async throws {
        let ca = try TestCA.shared()
        let server = try await FaultServer.start(
            script: FaultScript(default: .respond(headers: [("Content-Type", "application/json")], body: FetchIntegrationTests.good)),
            certificate: try ca.leaf(for: ["fault.test", "*.fault.test"]))
        defer { server.stop() }
        let silent = try SilentListener(port: server.port)
        defer { silent.close() }
        let run = try ToolRunner.run([
            "--domain", "applinks:one.fault.test", "--app-id", FetchIntegrationTests.appID, "--json", "--no-store", "--quiet",
            "--cacert", ca.caCertPath, "--allow-private", "--retry-delays", "", "--threads", "\(threads)",
            "--connect-to", "one.fault.test:443:pair.fault.test:\(server.port)",
            "--resolve", "pair.fault.test:\(server.port):127.0.0.2,127.0.0.1", "--connect-timeout", "6",
        ])
        let domain = try #require(try run.json().domain("one.fault.test"), "\(run.stdout) \(run.stderr)")
        #expect(domain["code"] as? String == "ok", "\(domain)")
        #expect(run.status == 0)
    }
}
