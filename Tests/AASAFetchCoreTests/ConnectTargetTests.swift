@testable import AASAFetchCore
import CurlTransport
import Foundation
import Testing

/// `diagnose` finds the address libcurl would connect to from `--connect-to` and `--resolve`, read
/// as libcurl reads them, so that it agrees with `fetch`.
struct ConnectTargetTests {
    @Test func resolveIsReadAsLibcurlReadsIt() {
        // A later entry for the same name and port replaces an earlier one.
        let twice = ConnectTarget(host: "ok.example.com", port: 443,
                                  resolve: ["ok.example.com:443:127.0.0.2", "ok.example.com:443:127.0.0.1"], connectTo: [])
        #expect(twice.fixedAddresses == ["127.0.0.1"])
        // `*` stands for any name; an IPv6 address in brackets.
        let wildcard = ConnectTarget(host: "ok.example.com", port: 8443, resolve: ["*:8443:127.0.0.1,[::1]"], connectTo: [])
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

/// The `tls` step of a certificate that expires soon and is trusted only through `--cacert`
/// carries both warnings (the `custom-root` one was lost).
struct TLSStepTests {
    @Test func expiringSoonKeepsTheCustomRootWarning() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "MMM d HH:mm:ss yyyy 'GMT'"
        let soon = formatter.string(from: Date().addingTimeInterval(5 * 86_400))
        var response = TransferResponse(status: 200, headers: [], body: [], url: "https://example.com/")
        response.certificates = [PeerCertificate(subject: "CN=example.com", issuer: "CN=Test", notBefore: "Jan 1 00:00:00 2020 GMT",
                                                 notAfter: soon, subjectAltNames: ["DNS:example.com"])]
        let step = Diagnoser.Walk.tlsStep(response, reliesOnExtraCA: true, developerMode: false, caFile: "ca.pem")
        #expect(step.code == "tls-expires-soon", "\(step)")
        #expect(step.findings.map(\.code) == ["tls-expires-soon", "custom-root"], "\(step.findings)")
        #expect(step.summary.contains("--cacert"), "\(step.summary)")
        let developer = Diagnoser.Walk.tlsStep(response, reliesOnExtraCA: true, developerMode: true, caFile: "ca.pem")
        #expect(developer.findings.isEmpty && developer.code == "tls-expires-soon")
    }
}
