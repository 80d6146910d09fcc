import Foundation

/// libfaketime (Debian's `faketime`, installed by `scripts/install-deps`): a child process whose
/// wall clock is shifted, its monotonic clock left alone.
public enum FakeTime {
    /// The preloaded library.
    public static let library = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

    /// Whether it can be used here: installed, and no sanitizer runtime that must be loaded first.
    public static var usable: Bool {
        FileManager.default.fileExists(atPath: library) && TestSanitizer.active == nil
    }

    /// The environment that shifts a child's wall clock by `offset` (`+10m`, `+3y`, `+0d`).
    public static func environment(_ offset: String) -> [String: String] {
        ["LD_PRELOAD": library, "FAKETIME": offset, "FAKETIME_DONT_FAKE_MONOTONIC": "1"]
    }
}
