import CurlTransport
import Testing

/// Runs `body`, records an issue if it succeeds, and returns its failure.
func expectFailure(
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws(TransferFailure) -> TransferResponse
) async -> TransferFailure? {
    do throws(TransferFailure) {
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

/// Starts `client.perform(request)` in a new task whose value carries the typed result.
func performTask(_ client: CurlClient, _ request: TransferRequest) -> Task<Result<TransferResponse, TransferFailure>, Never> {
    Task {
        do throws(TransferFailure) {
            return .success(try await client.perform(request))
        } catch {
            return .failure(error)
        }
    }
}
