import Foundation
import Glibc
import Synchronization

/// A certificate and its private key, as PEM files.
public struct LeafCertificate: Sendable, Hashable {
    /// The PEM certificate.
    public var certificatePath: String
    /// The PEM private key (EC P-256, unencrypted).
    public var keyPath: String
    /// The DNS names in its subject alternative name extension.
    public var names: [String]
}

/// A throw-away certificate authority for TLS tests, made with the `openssl` command.
///
/// It holds a trusted root (``caCertPath``), an unrelated "untrusted" CA, and issues leaf
/// certificates on demand: valid ones for any DNS names (wildcards allowed), expired ones, ones not
/// valid yet, self-signed ones and ones signed by the untrusted CA. Keys are EC P-256, so making one
/// costs a few milliseconds. Use ``shared()`` to reuse one CA across the tests of a process; leaves
/// are cached by kind and names.
public final class TestCA: Sendable {
    /// How a leaf certificate is (in)valid.
    public enum LeafKind: String, Sendable, Hashable {
        /// Signed by the root, valid from yesterday for a year.
        case valid
        /// Signed by the root, expired a year ago.
        case expired
        /// Signed by the root, valid only from next year.
        case notYetValid
        /// Signed by its own key.
        case selfSigned
        /// Signed by the untrusted CA.
        case untrustedIssuer
        /// Signed by the untrusted CA, expired a year ago.
        case untrustedExpired
    }

    /// The folder holding every file.
    public let directory: URL
    /// The root CA certificate (PEM) to pass as `caFile`.
    public let caCertPath: String
    /// The certificate of the second, unrelated CA (PEM).
    public let untrustedCACertPath: String

    private let openssl: String
    private let configPath: String
    private let leaves = Mutex<[String: LeafCertificate]>([:])

    private static let sharedInstance = Result { () throws -> TestCA in
        removeFoldersOfDeadProcesses()
        return try TestCA()
    }

    /// The process-wide CA, created on first use.
    /// - Throws: ``TestSupportError`` when openssl is missing or fails.
    public static func shared() throws -> TestCA {
        try sharedInstance.get()
    }

    /// Creates a CA in a fresh temporary directory.
    /// - Throws: ``TestSupportError`` when openssl is missing or fails.
    public init() throws {
        guard let openssl = ChildProcess.find("openssl", preferring: ["/usr/bin/openssl"]) else {
            throw TestSupportError("the openssl command is not installed")
        }
        self.openssl = openssl
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("aasa-testca-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("newcerts"), withIntermediateDirectories: true)
        configPath = directory.appendingPathComponent("openssl.cnf").path
        caCertPath = directory.appendingPathComponent("root.pem").path
        untrustedCACertPath = directory.appendingPathComponent("untrusted.pem").path
        try Self.config(directory: directory.path).write(toFile: configPath, atomically: true, encoding: .utf8)
        for name in ["root", "untrusted"] {
            try Data().write(to: directory.appendingPathComponent("\(name)-index.txt"))
            try Data("1000\n".utf8).write(to: directory.appendingPathComponent("\(name)-serial"))
        }
        try makeCA(name: "root", subject: "/O=aasa-fetch tests/CN=AASA Test Root CA")
        try makeCA(name: "untrusted", subject: "/O=aasa-fetch tests/CN=AASA Untrusted CA")
    }

    /// A leaf certificate for `names` (cached). The first name becomes the common name.
    /// - Parameters:
    ///   - names: DNS names, e.g. `["example.test", "*.example.test"]`.
    ///   - kind: How the certificate is (in)valid.
    /// - Throws: ``TestSupportError`` when openssl fails.
    public func leaf(for names: [String], kind: LeafKind = .valid) throws -> LeafCertificate {
        guard let first = names.first else { throw TestSupportError("a leaf certificate needs at least one name") }
        let key = "\(kind.rawValue):\(names.joined(separator: ","))"
        return try leaves.withLock { cache throws -> LeafCertificate in
            if let cached = cache[key] {
                return cached
            }
            let base = directory.appendingPathComponent("leaf-\(cache.count + 1)-\(kind.rawValue)").path
            let leaf = LeafCertificate(certificatePath: base + ".pem", keyPath: base + ".key", names: names)
            let san = names.map { "DNS:\($0)" }.joined(separator: ",")
            let subject = "/O=aasa-fetch tests/CN=\(first)"
            if kind == .selfSigned {
                try openssl(
                    ["req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                     "-keyout", leaf.keyPath, "-out", leaf.certificatePath, "-days", "365", "-subj", subject,
                     "-config", configPath, "-extensions", "v3_selfsigned"],
                    san: san)
            } else {
                try openssl(
                    ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                     "-keyout", leaf.keyPath, "-out", base + ".csr", "-subj", subject, "-config", configPath],
                    san: san)
                let now = Date()
                let day: TimeInterval = 86_400
                let (start, end): (Date, Date) =
                    switch kind {
                    case .expired, .untrustedExpired: (now - 730 * day, now - 365 * day)
                    case .notYetValid: (now + 365 * day, now + 730 * day)
                    default: (now - day, now + 365 * day)
                    }
                try openssl(
                    ["ca", "-batch", "-config", configPath, "-name", kind == .untrustedIssuer || kind == .untrustedExpired ? "ca_untrusted" : "ca_root",
                     "-in", base + ".csr", "-out", leaf.certificatePath, "-extensions", "v3_leaf", "-notext",
                     "-startdate", Self.asn1Time(start), "-enddate", Self.asn1Time(end)],
                    san: san)
            }
            cache[key] = leaf
            return leaf
        }
    }

    // MARK: - Private

    /// Removes CA folders left behind by test processes that no longer run (their pid is in the name).
    private static func removeFoldersOfDeadProcesses() {
        let temporary = FileManager.default.temporaryDirectory
        let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? []
        for name in names where name.hasPrefix("aasa-testca-") {
            let parts = name.split(separator: "-")
            guard parts.count > 2, let pid = Int32(parts[2]), pid != getpid() else { continue }
            if kill(pid, 0) != 0, errno == ESRCH {
                try? FileManager.default.removeItem(at: temporary.appendingPathComponent(name))
            }
        }
    }

    private func makeCA(name: String, subject: String) throws {
        try openssl(
            ["req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", directory.appendingPathComponent("\(name).key").path,
             "-out", directory.appendingPathComponent("\(name).pem").path,
             "-days", "3650", "-subj", subject, "-config", configPath, "-extensions", "v3_ca"],
            san: "DNS:unused.invalid")
    }

    private func openssl(_ arguments: [String], san: String) throws {
        let output = try ChildProcess.run(openssl, arguments, environment: ["SAN": san], timeout: .seconds(20))
        guard output.status == 0 else {
            throw TestSupportError(
                "openssl \(arguments.joined(separator: " ")) failed (\(output.status)): \(output.standardError)")
        }
    }

    private static func asn1Time(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMddHHmmss'Z'"
        return formatter.string(from: date)
    }

    private static func config(directory: String) -> String {
        func caSection(_ name: String) -> String {
            """
            [ca_\(name)]
            dir = \(directory)
            database = \(directory)/\(name)-index.txt
            serial = \(directory)/\(name)-serial
            new_certs_dir = \(directory)/newcerts
            certificate = \(directory)/\(name).pem
            private_key = \(directory)/\(name).key
            default_md = sha256
            policy = policy_any
            unique_subject = no
            copy_extensions = none
            email_in_dn = no

            """
        }
        return """
            [req]
            distinguished_name = dn
            prompt = no

            [dn]
            CN = unused

            [v3_ca]
            basicConstraints = critical,CA:TRUE
            keyUsage = critical,keyCertSign,cRLSign
            subjectKeyIdentifier = hash

            [v3_leaf]
            basicConstraints = critical,CA:FALSE
            keyUsage = critical,digitalSignature
            extendedKeyUsage = serverAuth
            subjectAltName = ${ENV::SAN}
            subjectKeyIdentifier = hash
            authorityKeyIdentifier = keyid

            [v3_selfsigned]
            basicConstraints = critical,CA:FALSE
            keyUsage = critical,digitalSignature
            extendedKeyUsage = serverAuth
            subjectAltName = ${ENV::SAN}
            subjectKeyIdentifier = hash

            [ca]
            default_ca = ca_root

            \(caSection("root"))
            \(caSection("untrusted"))
            [policy_any]
            organizationName = optional
            commonName = supplied

            """
    }
}
