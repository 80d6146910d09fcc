import AASAFetchTestSupport
import Foundation
import Testing

/// The release executable links GCC's static C++ library instead of loading `libstdc++.so`
/// (`releaseLinkFlags` in Package.swift: `-L build-support/static-libstdc++`, a folder that holds
/// only a symbolic link to `libstdc++.a`). The suite builds debug binaries, so these tests link a
/// small static-stdlib program the way the release link does, and check the folder itself: a
/// toolchain that searched its own folders first, or a GCC upgrade that left the link dangling,
/// would bring `libstdc++.so` back (1.4 MiB more at every start) without any other test noticing.
struct LinkSettingsTests {
    static let folder = TestPaths.repository.appendingPathComponent("build-support/static-libstdc++")
    static let swiftc = ChildProcess.find("swiftc")

    /// A program that prints the lines of its own memory map naming the C++ library.
    static let probe = """
        #if canImport(Glibc)
        import Glibc
        #endif
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let fd = open("/proc/self/maps", O_RDONLY)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 { break }
            bytes += chunk[0..<count]
        }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\\n") where line.contains("libstdc++") {
            print(String(line).split(separator: " ").last.map(String.init) ?? "")
        }
        """

    /// Links `probe` with the static standard library and lld, plus `extra`, runs it and returns
    /// what it printed: the C++ library files mapped into it.
    static func mappedCxxLibraries(extra: [String]) throws -> String {
        let swiftc = try #require(Self.swiftc)
        let scratch = try AppFixtures.scratch()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let source = scratch.appendingPathComponent("probe.swift")
        try probe.write(to: source, atomically: true, encoding: .utf8)
        let binary = scratch.appendingPathComponent("probe").path
        let build = try ChildProcess.run(
            swiftc, ["-static-stdlib", "-use-ld=lld", source.path, "-o", binary] + extra,
            workingDirectory: scratch, timeout: .seconds(240)
        )
        #expect(build.status == 0, "\(build.standardError)")
        let run = try ChildProcess.run(binary, [])
        #expect(run.status == 0, "\(run.standardError)")
        return run.standardOutput
    }

    @Test(.enabled(if: swiftc != nil, "swiftc is not on PATH"))
    func theReleaseLinkLeavesTheSharedCxxLibraryOut() throws {
        // The toolchain's own link loads the shared library (so this test can tell them apart)…
        let plain = try Self.mappedCxxLibraries(extra: [])
        #expect(plain.contains("libstdc++.so"), "a static-stdlib program no longer loads libstdc++.so: \(plain)")
        // …and with the folder searched first it is linked in and nothing is loaded.
        let linked = try Self.mappedCxxLibraries(extra: ["-L", Self.folder.path])
        #expect(linked.isEmpty, "libstdc++ is still loaded: \(linked)")
    }

    @Test func theFolderHoldsOnlyALinkToTheStaticArchive() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path)
        #expect(names == ["libstdc++.a"])
        let archive = Self.folder.appendingPathComponent("libstdc++.a")
        let target = try FileManager.default.destinationOfSymbolicLink(atPath: archive.path)
        let handle = try #require(FileHandle(forReadingAtPath: archive.path), "\(target) does not exist: install libstdc++-12-dev or update the link")
        defer { try? handle.close() }
        #expect(try handle.read(upToCount: 8) == Data("!<arch>\n".utf8), "\(target) is not an ar archive")
        // The toolchain's C++ compiler driver names the same archive (a GCC upgrade moves it).
        if let clang = ChildProcess.find("clang", preferring: [URL(fileURLWithPath: Self.swiftc ?? "/").deletingLastPathComponent().appendingPathComponent("clang").path]) {
            let named = try ChildProcess.run(clang, ["-print-file-name=libstdc++.a"])
            let resolved = URL(fileURLWithPath: named.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)).resolvingSymlinksInPath().path
            #expect(resolved == URL(fileURLWithPath: target).resolvingSymlinksInPath().path, "the toolchain links \(resolved), the folder names \(target)")
        }
        let manifest = try String(contentsOf: TestPaths.repository.appendingPathComponent("Package.swift"), encoding: .utf8)
        #expect(manifest.contains("\"-L\", \"\\(Context.packageDirectory)/build-support/static-libstdc++\""))
    }
}
