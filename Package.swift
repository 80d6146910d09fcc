// swift-tools-version:6.1
import PackageDescription

// MARK: - Dependencies (each resolves to the machine's local copy of the GitHub repository)

let argumentParser = Target.Dependency.product(name: "ArgumentParser", package: "swift-argument-parser")
let grdb = Target.Dependency.product(name: "GRDB", package: "GRDB.swift")
let yams = Target.Dependency.product(name: "Yams", package: "Yams")

// MARK: - Release link of the executable (Linux; start-up memory in docs/benchmarks.md)

/// Linker flags of the release executable, which always links with lld (the toolchain's own
/// linker; the documented release command asks for it too). Each one cuts start-up memory, not
/// behaviour:
/// - `-z pack-relative-relocs`: the ~90,000 relative relocations of a position-independent
///   executable go in a compact DT_RELR table (glibc 2.36 or later) instead of 2 MiB of RELA
///   entries that the dynamic loader reads, and so keeps resident, at every start.
/// - `--no-export-dynamic`: the toolchain's static-stdlib link asks for `-export-dynamic`, which
///   put the ~12,800 public symbols of our modules and packages in the dynamic symbol table
///   (1 MiB with its strings) that ld.so searches for every symbol of every shared library.
///   Nothing looks our symbols up at run time (the static libraries' are hidden already).
/// - `--symbol-ordering-file`: the functions that run at start-up and in a fetch (about 1 MiB of
///   the 20 MiB of code, written by `scripts/gen-link-order`) are placed together. The kernel maps
///   file-backed code 64 KiB around each page fault, so start-up code scattered over the whole
///   text made about 150 such windows resident. A stale list costs memory, never correctness.
/// - `-L build-support/static-libstdc++`: the Swift runtime is written in C++, and the toolchain's
///   static-stdlib link asks for `-lstdc++`. That folder holds only a symbolic link to GCC's
///   static `libstdc++.a` (Debian's `libstdc++-12-dev`), and the linker searches it before the
///   toolchain's own folders, so the C++ library functions the runtime calls are linked in and
///   `libstdc++.so` is not loaded at all. Loaded, it kept 1.6 MiB resident (0.6 MiB of symbol,
///   hash and relocation tables that ld.so reads, 0.8 MiB of code) and its symbol table sat in
///   every lookup of ld.so. Start-up 18.0 → 16.6 MiB, crawls at C = 16 and 64 1.3–1.7 MiB less.
///   Nothing else loaded uses the C++ library. `LinkSettingsTests` checks the link.
let releaseLinkFlags: [String] = [
    "-use-ld=lld",
    "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
    "-Xlinker", "--no-export-dynamic",
    "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/Sources/aasa-fetch/link-order.txt",
    "-Xlinker", "--no-warn-symbol-ordering",
    "-L", "\(Context.packageDirectory)/build-support/static-libstdc++",
]

let package = Package(
    name: "aasa-fetch",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "aasa-fetch", targets: ["aasa-fetch"]),
        .library(name: "AASAFetchCore", targets: ["AASAFetchCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // YAML config files (aasa-fetch.yaml): libyaml's parser, with line numbers in its errors.
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
    ],
    targets: [
        // MARK: - C system libraries (only CurlTransport, IDNA and Inflate import them)
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CIDN2", pkgConfig: "libidn2", providers: [.apt(["libidn2-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),

        // MARK: - Swift wrappers over C (the only modules that see C types)
        .target(name: "CurlTransport", dependencies: ["CCurl"]),
        .target(name: "IDNA", dependencies: ["CIDN2"]),
        .target(name: "PostgresClient", dependencies: ["CLibPQ"]),
        .target(name: "Inflate", dependencies: ["CZlib"]),

        // MARK: - Core library: entitlements, file model, matching, fetching (no C types)
        .target(name: "AASAFetchCore", dependencies: ["CurlTransport", "IDNA", "Inflate", "PostgresClient", grdb]),

        // MARK: - Commands (a library, so they are testable) and the thin executable
        .target(name: "AASAFetchCLI", dependencies: ["AASAFetchCore", "CurlTransport", argumentParser, yams]),
        .executableTarget(
            name: "aasa-fetch",
            dependencies: ["AASAFetchCLI"],
            exclude: ["link-order.txt"],
            linkerSettings: [.unsafeFlags(releaseLinkFlags, .when(platforms: [.linux], configuration: .release))]
        ),

        // MARK: - Matcher tools: throughput benchmark and seeded random fuzz driver
        .executableTarget(name: "aasa-bench-match", dependencies: ["AASAFetchCore"]),
        .executableTarget(name: "aasa-fuzz", dependencies: ["AASAFetchCore"]),

        // MARK: - Store benchmark: refresh cost against store size
        .executableTarget(name: "aasa-bench-store", dependencies: ["AASAFetchCore"]),

        // MARK: - Tests
        .target(
            name: "AASAFetchTestSupport",
            dependencies: ["AASAFetchCore", "CurlTransport"],
            path: "Tests/AASAFetchTestSupport",
            resources: [.copy("Resources")]
        ),
        .testTarget(name: "PostgresClientTests", dependencies: ["PostgresClient", "AASAFetchTestSupport"]),
        .testTarget(name: "CurlTransportTests", dependencies: ["CurlTransport", "AASAFetchTestSupport"]),
        .testTarget(name: "AASAFetchCoreTests", dependencies: ["AASAFetchCore", "CurlTransport", "Inflate", "AASAFetchTestSupport"]),
        .testTarget(
            name: "AASAFetchCLITests",
            dependencies: ["AASAFetchCLI", "AASAFetchCore", "AASAFetchTestSupport", "PostgresClient"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Standard settings for every Swift target: strict memory-safe imports and explicit existentials.
for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    // One section per function in release, so the release link can place each start-up function
    // of ours on its own (`--symbol-ordering-file` above), not the whole file it sits in.
    settings.append(.unsafeFlags(["-Xfrontend", "-function-sections"], .when(platforms: [.linux], configuration: .release)))
    target.swiftSettings = settings
}
