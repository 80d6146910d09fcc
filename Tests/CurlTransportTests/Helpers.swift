import AASAFetchTestSupport
import CurlTransport
import Testing

/// A client with the suite's loop count (``TestThreads/requested``, else the default: one loop per
/// core) unless a test asks for its own.
func makeClient(maxConnections: Int = 32, maxConnectionsPerHost: Int = 0, threads: Int? = TestThreads.requested) -> CurlClient {
    CurlClient(maxConnections: maxConnections, maxConnectionsPerHost: maxConnectionsPerHost, threads: threads)
}

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
