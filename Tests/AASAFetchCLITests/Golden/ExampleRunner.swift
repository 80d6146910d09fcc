import AASAFetchTestSupport
import Foundation
import Testing

/// Runs example commands the way a user of `scripts/demo` would: the built binary, in a fresh
/// working folder that holds `examples/` (a link to the repository's) and `ca.pem` (the test CA),
/// with the default store `cache/` inside it, and the network options from the environment
/// (`AASA_FETCH_CACERT=ca.pem`, `AASA_FETCH_CONNECT_TO`, `AASA_FETCH_ALLOW_PRIVATE=1`) sending every
/// host to ``ExampleSites``.
struct ExampleRunner {
    /// What one command did.
    struct Outcome {
        var status: Int32
        /// Standard output (with standard error for `2>&1`), as printed.
        var output: String
        /// Standard error, for failure messages.
        var standardError: String
    }

    let sites: ExampleSites
    /// The working folder of this group.
    let folder: URL

    /// Prepares a fresh working folder.
    init(sites: ExampleSites) throws {
        self.sites = sites
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-golden-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("tmp"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            at: folder.appendingPathComponent("examples"), withDestinationURL: ExampleSites.examples)
        try FileManager.default.copyItem(
            at: URL(fileURLWithPath: sites.ca.caCertPath), to: folder.appendingPathComponent("ca.pem"))
    }

    /// Removes the working folder.
    func cleanUp() {
        try? FileManager.default.removeItem(at: folder)
    }

    /// The environment of every command: fixed locale, time zone and width, no colour, and the
    /// example sites' network options.
    var environment: [String: String] {
        var environment = [
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": folder.path,
            "TMPDIR": folder.appendingPathComponent("tmp").path,
            "LANG": "en_US.UTF-8",
            "TZ": "UTC",
            "NO_COLOR": "1",
            "COLUMNS": "100",
        ]
        environment.merge(sites.environment(cacert: "ca.pem")) { _, new in new }
        return environment
    }

    /// The normaliser for this folder and server.
    var normalizer: OutputNormalizer {
        OutputNormalizer(folder: folder.path, ports: [sites.nginx.port])
    }

    /// Records the example app's hosts in the store (the starting point of the `--help` examples).
    func seed() throws {
        let outcome = try run(ExampleCommand("aasa-fetch --entitlements examples/Example.entitlements --quiet"))
        guard outcome.status == 0 || outcome.status == 1 else {
            throw TestSupportError("seeding the store failed (\(outcome.status)): \(outcome.standardError)")
        }
    }

    /// Runs one command.
    func run(_ command: ExampleCommand) throws -> Outcome {
        let result = try ChildProcess.run(
            ToolRunner.binary, command.arguments,
            environment: environment.merging(command.environment) { _, new in new },
            inherit: false,
            workingDirectory: folder,
            standardInput: command.standardInput.map { folder.appendingPathComponent($0) },
            mergingStandardError: command.mergesStandardError,
            timeout: .seconds(120))
        return Outcome(status: result.status, output: result.standardOutput, standardError: result.standardError)
    }
}
