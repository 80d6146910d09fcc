import AASAFetchTestSupport
import Foundation
import Testing

/// `scripts/sanitizer_reports.py`, which decides whether `scripts/sanitize` passes: every
/// AddressSanitizer report fails it; a ThreadSanitizer race fails it unless both accesses were
/// made with a `Mutex.withLock` body on the stack (a futex ThreadSanitizer does not see).
struct SanitizerReportsTests {
    static let script = TestPaths.repository.appendingPathComponent("scripts/sanitizer_reports.py").path

    /// A ThreadSanitizer race as the runtime writes it; `first` and `second` are the two accesses'
    /// stacks, innermost frame first.
    static func race(_ first: [String], _ second: [String]) -> String {
        func stack(_ frames: [String]) -> String {
            frames.enumerated().map { "    #\($0.offset) \($0.element) /work/Sources/X.swift:1:1 (aasa-fetch+0x1)" }
                .joined(separator: "\n")
        }
        return """
            ==================
            WARNING: ThreadSanitizer: Swift access race (pid=7)
              Modifying access of Swift variable at 0x7210000112e0 by thread T7:
            \(stack(first))

              Previous read of size 8 at 0x7210000112e0 by thread T6:
            \(stack(second))

              Location is heap block of size 64 at 0x7210000112c0 allocated by thread T2:
                #0 malloc tsan_interceptors_posix.cpp:686:5 (aasa-fetch+0x12aca0)

              Thread T7 'aasa-curl-1' (tid=24358, running) created by thread T2 at:
                #0 pthread_create tsan_interceptors_posix.cpp:1094:3 (aasa-fetch+0x12c88a)

            SUMMARY: ThreadSanitizer: Swift access race (/work/aasa-fetch+0xdb225c) in $s1X
            ==================

            """
    }

    static let lockBody = "$s13CurlTransport8SlotPoolC7acquire4loopSbSi_tFSbAC5State33_47BDC95B63A839175A395E55B4D2488FLLVzYuYTXEfU_"
    static let lockBodyApplied = lockBody + "TA"
    /// The body of a `Mutex<(now: Int, most: Int, total: Int)>.withLock`.
    static let tupleLockBody = "$s18AASAFetchCoreTests08RunLogicC0V17CountingTransportC4mostSivgS2i3now_SiAFSi5totaltz_tYTXEfU0_"
    /// The body of a `withLock` that throws `any Error` (the test CA's certificate cache).
    static let throwingLockBody = "$s20AASAFetchTestSupport0B2CAC4leaf3for4kindAA15LeafCertificateVSaySSG_AC0H4KindOtKFAHSDySSAHGzYuKYTXEfU_"
    static let helper = "$s13CurlTransport8SlotPoolC5State33_47BDC95B63A839175A395E55B4D2488FLLV8handOver4from12giverHasWorkSiSgSi_SbtF"
    static let loop = "$s13CurlTransport9MultiLoopC11startQueued33_C7587DF852842FB6D26C823EA8449168LLSbyF"
    static let unguarded = "$s13CurlTransport9MultiLoopC7counterSivs"

    /// Runs the script on reports written to a fresh folder (with `binary`, its third argument).
    static func scan(_ kind: String, _ reports: [String], binary: String? = nil) throws -> ChildProcess.Output {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-sanitizer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for (index, report) in reports.enumerated() {
            try Data(report.utf8).write(to: folder.appendingPathComponent("report.\(100 + index)"))
        }
        let python = try #require(ChildProcess.find("python3"))
        return try ChildProcess.run(python, [script, kind, folder.path] + (binary.map { [$0] } ?? []))
    }

    @Test func racesBetweenAccessesHoldingAMutexPass() throws {
        let run = try Self.scan("thread", [
            Self.race([Self.lockBody, Self.loop], [Self.helper, Self.lockBodyApplied, Self.loop]),
            Self.race([Self.lockBodyApplied], [Self.lockBody]),
            Self.race([Self.tupleLockBody], [Self.tupleLockBody, Self.loop]),
            Self.race([Self.throwingLockBody, Self.loop], [Self.throwingLockBody]),
        ])
        #expect(run.status == 0, "\(run.standardOutput)")
        #expect(run.standardOutput.contains("4 races between accesses that hold the same Mutex"))
        #expect(run.standardOutput.contains("no thread sanitizer defect"))
    }

    @Test func aRaceWithOneAccessOutsideAMutexFails() throws {
        let run = try Self.scan("thread", [
            Self.race([Self.lockBody, Self.loop], [Self.lockBody, Self.loop]),
            Self.race([Self.unguarded, Self.loop], [Self.lockBody, Self.loop]),
        ])
        #expect(run.status == 1)
        #expect(run.standardOutput.contains("1 defects of 1 kinds"), "\(run.standardOutput)")
        #expect(run.standardOutput.contains("1x \(Self.unguarded) / \(Self.lockBody)"), "\(run.standardOutput)")
    }

    /// A process that could not start the symbolizer (a limit on threads) leaves its frames
    /// unnamed; given the binary, the script names them, so a guarded race still passes.
    @Test(.enabled(if: ChildProcess.find("nm") != nil))
    func unnamedFramesAreNamedFromTheBinary() throws {
        let binary = ToolRunner.binary
        let symbols = try ChildProcess.run(try #require(ChildProcess.find("nm")), [binary], timeout: .seconds(60)).standardOutput
        let line = try #require(symbols.split(separator: "\n").first { $0.hasSuffix("LLVzYuYTXEfU_") && $0.contains("SlotPool") },
                                "no Mutex body of SlotPool in \(binary)")
        let address = String(try #require(UInt64(line.split(separator: " ")[0], radix: 16)), radix: 16)
        let module = URL(fileURLWithPath: binary).lastPathComponent
        let unnamed = Self.race(["<null>"], ["<null>"])
            .replacingOccurrences(of: "<null> /work/Sources/X.swift:1:1 (aasa-fetch+0x1)", with: "<null> <null> (\(module)+0x\(address))")
        let named = try Self.scan("thread", [unnamed], binary: binary)
        #expect(named.status == 0, "\(named.standardOutput)")
        #expect(named.standardOutput.contains("1 races between accesses that hold the same Mutex"), "\(named.standardOutput)")
        let blind = try Self.scan("thread", [unnamed])
        #expect(blind.status == 1, "\(blind.standardOutput)")
    }

    @Test func everyAddressSanitizerReportFails() throws {
        let report = """
            =================================================================
            ==4242==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000015 at pc 0x1 bp 0x2 sp 0x3
            READ of size 1 at 0x602000000015 thread T0
                #0 0x55 in $s13AASAFetchCore8RunSpoolC9entryNameySSSPySo6direntVGFZ /work/Sources/RunSpool.swift:256:9
                #1 0x56 in main

            SUMMARY: AddressSanitizer: heap-buffer-overflow /work/Sources/RunSpool.swift:256:9
            """
        let failing = try Self.scan("address", [report])
        #expect(failing.status == 1)
        #expect(failing.standardOutput.contains("ERROR: AddressSanitizer: heap-buffer-overflow"), "\(failing.standardOutput)")
        #expect(failing.standardOutput.contains("RunSpool.swift:256:9"), "\(failing.standardOutput)")
        let clean = try Self.scan("address", [])
        #expect(clean.status == 0)
        #expect(clean.standardOutput.contains("no address sanitizer defect"))
    }
}
