@testable import AASAFetchCore
import Testing

/// `diagnose` finds the address libcurl would connect to from `--connect-to` and `--resolve`, read
/// as libcurl reads them, so that it agrees with `fetch`.
struct ConnectTargetTests {
    @Test func resolveIsReadAsLibcurlReadsIt() {
        // A later entry for the same name and port replaces an earlier one.
        let twice = ConnectTarget(host: "ok.example.com", port: 443,
                                  resolve: ["ok.example.com:443:127.0.0.2", "ok.example.com:443:127.0.0.1"], connectTo: [])
        #expect(twice.fixedAddresses == ["127.0.0.1"])
        // `*` stands for any name; spaces around addresses do not count.
        let wildcard = ConnectTarget(host: "ok.example.com", port: 8443, resolve: ["*:8443: 127.0.0.1 , [::1]"], connectTo: [])
        #expect(wildcard.fixedAddresses == ["127.0.0.1", "::1"])
        // Another port, or a removal, does not apply.
        let other = ConnectTarget(host: "ok.example.com", port: 443, resolve: ["ok.example.com:8443:127.0.0.1", "-ok.example.com:443"], connectTo: [])
        #expect(other.fixedAddresses == nil)
        // --connect-to first, then --resolve for the name and port it leads to.
        let both = ConnectTarget(host: "ok.example.com", port: 443, resolve: ["*:18440:127.0.0.1"],
                                 connectTo: ["::ok.example.com:18440"])
        #expect(both.port == 18440 && both.fixedAddresses == ["127.0.0.1"])
    }
}
