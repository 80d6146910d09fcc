import Foundation

/// Paths shared by the tests: the repository and its test data (`testdata/`: the conformance cases
/// and the real-world corpus, copied into the repository with their notices).
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

    /// `testdata/` in the repository (conformance cases and real-world corpus, see their NOTICE files).
    public static let testdata = repository.appendingPathComponent("testdata")

    /// The conformance cases file.
    public static let conformanceCases = testdata.appendingPathComponent("conformance/cases.json")
    /// The conformance cases written for this project (same shape, statuses `documented`/`decided`).
    public static let localConformanceCases = testdata.appendingPathComponent("conformance/local-cases.json")
    /// Both conformance case files.
    public static let allConformanceCases = [conformanceCases, localConformanceCases]
    /// The real-world corpus folder.
    public static let corpus = testdata.appendingPathComponent("corpus")
}
