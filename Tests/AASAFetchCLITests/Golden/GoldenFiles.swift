import AASAFetchTestSupport
import Foundation

/// The golden files: `Tests/Golden/<source>/NN-slug.txt`, one per example command, holding the
/// command, its exit status and its standard output, normalised (``OutputNormalizer``).
///
/// `AASA_UPDATE_GOLDEN=1 swift test --filter Golden` rewrites them (and the outputs shown in the
/// documents) from the current binary; without it, a difference fails the test.
enum GoldenFiles {
    /// `Tests/Golden/` in the repository.
    static let root = TestPaths.repository.appendingPathComponent("Tests/Golden")

    /// Whether this run rewrites golden files and documents instead of comparing.
    static var updating: Bool {
        let value = ProcessInfo.processInfo.environment["AASA_UPDATE_GOLDEN"] ?? ""
        return !value.isEmpty && value != "0"
    }

    /// The command that updates them, for messages.
    static let updateCommand = "AASA_UPDATE_GOLDEN=1 swift test --filter Golden"

    /// The text of a golden file.
    static func render(command: ExampleCommand, status: Int32, output: String) -> String {
        var text = "$ \(command.text)\n[exit \(status)]\n"
        text += output
        if !output.isEmpty, !output.hasSuffix("\n") { text += "\n" }
        return text
    }

    /// The golden files under `folder` (relative to ``root``).
    static func existing(in folder: String) -> Set<String> {
        let url = root.appendingPathComponent(folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        return Set(names.filter { $0.hasSuffix(".txt") }.map { "\(folder)/\($0)" })
    }

    /// Reads a golden file (`path` relative to ``root``).
    static func read(_ path: String) -> String? {
        try? String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// Writes a golden file.
    static func write(_ path: String, _ text: String) throws {
        let url = root.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    /// Removes a golden file whose command is gone (and its folder when it is left empty).
    static func remove(_ path: String) {
        let url = root.appendingPathComponent(path)
        try? FileManager.default.removeItem(at: url)
        let folder = url.deletingLastPathComponent()
        if (try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.isEmpty == true {
            try? FileManager.default.removeItem(at: folder)
        }
    }

    /// The first differing line of two texts, for a readable failure.
    static func firstDifference(_ expected: String, _ actual: String) -> String {
        let left = expected.components(separatedBy: "\n")
        let right = actual.components(separatedBy: "\n")
        for index in 0..<max(left.count, right.count) {
            let a = index < left.count ? left[index] : "<end>"
            let b = index < right.count ? right[index] : "<end>"
            if a != b {
                return "line \(index + 1):\n  expected: \(a)\n  actual:   \(b)"
            }
        }
        return "no difference"
    }
}
