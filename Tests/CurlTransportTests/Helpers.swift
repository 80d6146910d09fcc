import CurlTransport
import Testing

/// Runs `body`, records an issue if it succeeds, and returns its failure.
func expectFailure(
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws(TransferFailure) -> TransferResponse
) async -> TransferFailure? {
    do {
        let response = try await body()
        Issue.record("expected a failure, got HTTP \(response.status)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

/// Seconds elapsed while running `body`.
func measure<T>(_ body: () async -> T) async -> (T, Double) {
    let start = ContinuousClock.now
    let value = await body()
    let elapsed = ContinuousClock.now - start
    return (value, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}
