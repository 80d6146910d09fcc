import Foundation

/// The example sites of `scripts/demo`, for tests: nginx on 127.0.0.1 serving `examples/site/HOST/`
/// for every host with a folder there (files as `application/json`), `www.example.com` answering
/// with a redirect to `example.com`, under one certificate from the shared ``TestCA``.
///
/// `scripts/demo` writes the same nginx configuration by hand; keep the two alike (hosts,
/// redirect, content type, HTTP/1.1 only).
public final class ExampleSites: Sendable {
    /// The hosts of the certificate: every folder of `examples/site/` and the redirecting `www.example.com`.
    public static let hosts = ["example.com", "www.example.com", "shop.example.net", "legacy.example.org",
                               "xn--bcher-kva.example", "old.example.com"]

    /// `examples/` in the repository.
    public static let examples = TestPaths.repository.appendingPathComponent("examples")

    /// The running nginx.
    public let nginx: NginxServer
    /// The test CA whose root signed the sites' certificate.
    public let ca: TestCA

    private init(nginx: NginxServer, ca: TestCA) {
        self.nginx = nginx
        self.ca = ca
    }

    /// Starts nginx for the example sites. Call ``stop()`` when done.
    /// - Throws: ``TestSupportError`` when nginx or openssl are missing or fail.
    public static func start() async throws -> ExampleSites {
        let ca = try TestCA.shared()
        let leaf = try ca.leaf(for: hosts)
        let site = examples.appendingPathComponent("site").path
        let json = "default_type application/json;"
        let nginx = try await NginxServer.start(
            hosts: [
                NginxVirtualHost(certificate: leaf, serverNames: ["_"], documentRoot: site + "/$host", directives: [json]),
                NginxVirtualHost(
                    certificate: leaf, serverNames: ["www.example.com"], documentRoot: site,
                    directives: ["return 301 https://example.com$request_uri;"]),
            ],
            http2: false)
        return ExampleSites(nginx: nginx, ca: ca)
    }

    /// Stops nginx.
    public func stop() {
        nginx.stop()
    }

    /// The variables that send every host to these sites and trust the test CA, as a user of
    /// `scripts/demo` would set them; `cacert` is the path given for the CA (default: its real path).
    public func environment(cacert: String? = nil) -> [String: String] {
        [
            "AASA_FETCH_CACERT": cacert ?? ca.caCertPath,
            "AASA_FETCH_CONNECT_TO": nginx.connectTo,
            "AASA_FETCH_ALLOW_PRIVATE": "1",
        ]
    }
}
