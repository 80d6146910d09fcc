import AASAFetchCore
import AASAFetchTestSupport
import Foundation
import Synchronization
import Testing

/// Every fetch run goes through one pipeline (source → fetch stage → judge → sinks): these pin
/// what that means for the runs that used to take paths of their own.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct RunPipelineTests {
    /// `--route both` streams like every other run: a host is printed as soon as it and the hosts
    /// before it are judged, while a later host (held by the fault server, which never answers)
    /// is still downloading. It used to keep every result until the last host was done.
    @Test func bothRouteStreamsItsFirstHostBeforeTheLastFinishes() async throws {
        let fixture = try await DiagnoseFaultMatrixTests.Fixture.start()
        defer { fixture.stop() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ToolRunner.binary)
        // approved.test is planned first (same tier, entitlement order); never.test never answers.
        process.arguments = fixture.network + ["--quiet", "--no-store", "--route", "both", "--app-id", DiagnoseFaultMatrixTests.appID,
                                               "--connect-timeout", "120", "--max-time", "120", "--retry-delays", "",
                                               "--domain", "applinks:approved.test", "--domain", "applinks:never.test"]
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("AASA_FETCH_") }
        environment["AASA_FETCH_CACHE"] = FileManager.default.temporaryDirectory.appendingPathComponent("pipeline-\(UUID().uuidString)").path
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let received = Mutex("")
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            received.withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
        defer {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            output.fileHandleForReading.readabilityHandler = nil
        }
        let printed = await waitUntil(timeout: .seconds(60)) {
            received.withLock { $0.contains("approved.test") && $0.split(separator: "\n").count >= 2 } || !process.isRunning
        }
        #expect(printed)
        let text = received.withLock { $0 }
        #expect(text.contains("approved.test"), "\(text)")
        #expect(!text.contains("never.test"), "never.test cannot be done yet: \(text)")
        #expect(process.isRunning, "the first host must be printed while the last one still downloads")
    }
}
