import AASAFetchCore

/// Loads `--app PATH`: the signed entitlements of a built app as an ``EntitlementsFile``.
enum AppEntitlementsLoader {
    /// What `--app` contributes to a run.
    struct Loaded {
        /// The signed entitlements.
        var file: EntitlementsFile
        /// Warnings and errors about the signature and profile (notes left out).
        var findings: [Finding]
        /// Xcode variables the app defines (`AppIdentifierPrefix`, `CFBundleIdentifier`, …).
        var definitions: [String: String]
    }

    /// Reads the app; a failure carries the reader's stable code (exit 2).
    static func load(_ path: String) throws(CommandFailure) -> Loaded {
        let inspection: AppInspection
        do {
            inspection = try AppInspector.inspect(path: path)
        } catch {
            throw CommandFailure(code: error.code, message: error.message.contains(path) ? error.message : "\(path): \(error.message)")
        }
        let file: EntitlementsFile
        do {
            file = try inspection.entitlementsFile()
        } catch {
            // Prefer the finding that names the real problem ('*' copied from a profile, a build without the key).
            let specific = inspection.findings.first { ["signature-wildcard-domains", "signature-missing-domains"].contains($0.code) }
            throw CommandFailure(code: specific?.code ?? error.code, message: "\(path): \(specific?.message ?? error.message)")
        }
        let findings = inspection.findings.filter { $0.severity != .info }.map { finding in
            var located = finding
            located.location = located.location.map { "\(path) (\($0))" } ?? path
            return located
        }
        return Loaded(file: file, findings: findings, definitions: EntitlementsComparison.definitions(for: inspection))
    }
}
