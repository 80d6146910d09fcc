import Foundation

/// Paths shared by the tests: the repository, `../shared` and its corpus and conformance cases.
public enum TestPaths {
    /// The repository root (the folder holding Package.swift).
    public static let repository: URL = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
                return url
            }
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    }()

    /// `../shared` beside the repository (the project's specification, corpus and conformance cases).
    public static let shared: URL = {
        if let env = ProcessInfo.processInfo.environment["AASA_SHARED_DIR"] {
            return URL(fileURLWithPath: env)
        }
        return repository.deletingLastPathComponent().appendingPathComponent("shared")
    }()

    /// The conformance cases file.
    public static let conformanceCases = shared.appendingPathComponent("conformance/cases.json")
    /// The real-world corpus folder.
    public static let corpus = shared.appendingPathComponent("corpus")
}
