import Foundation

/// Performs HTTPS GET transfers with libcurl's multi interface.
///
/// One dedicated OS thread owns every curl handle (multi, share and one fresh easy handle per
/// request) and runs `curl_multi_perform`/`curl_multi_poll`; ``perform(_:)`` posts work to it
/// through a lock-guarded inbox and `curl_multi_wakeup`, so callers never block a thread of the
/// cooperative pool. HTTP/2 transfers to one host share a connection. Call ``shutdown()`` before
/// the process exits.
public final class CurlClient: HTTPTransferring, Sendable {
    private let mailbox = Mailbox()

    /// Starts a client and its loop thread.
    /// - Parameters:
    ///   - maxConnections: Most transfers running and connections open at once
    ///     (`CURLMOPT_MAX_TOTAL_CONNECTIONS`); further transfers wait in the client's queue and
    ///     start in order on the loop thread as others finish (their timeouts start then).
    ///   - maxConnectionsPerHost: Most connections to one host at once
    ///     (`CURLMOPT_MAX_HOST_CONNECTIONS`); 0, the default, sets no limit. libcurl counts a
    ///     transfer sent elsewhere by `connectTo` against the *target*, so any limit here would also
    ///     cap every host of a run sent to one staging server; a caller never needs two connections
    ///     to one host anyway (one download per host at a time; HTTP/2 transfers wait for the
    ///     shared connection with `CURLOPT_PIPEWAIT`).
    public init(maxConnections: Int = 32, maxConnectionsPerHost: Int = 0) {
        let mailbox = self.mailbox
        let thread = Thread {
            MultiLoop.run(mailbox: mailbox, maxConnections: maxConnections, maxConnectionsPerHost: maxConnectionsPerHost)
            mailbox.markThreadExited()
        }
        thread.name = "aasa-fetch.curl"
        thread.start()
    }

    deinit {
        mailbox.requestStop()
    }

    /// Performs one GET and returns the response, whatever its HTTP status; redirects are reported
    /// in ``TransferResponse/redirectURL``, never followed.
    ///
    /// Cancelling the calling task removes the transfer and throws a failure of kind
    /// ``TransferFailureKind/cancelled``.
    /// - Parameter request: The request.
    /// - Returns: The complete response.
    /// - Throws: ``TransferFailure`` when no complete response arrived, classified by ``TransferFailureKind``.
    public func perform(_ request: TransferRequest) async throws(TransferFailure) -> TransferResponse {
        let id = try mailbox.reserve().get()
        let mailbox = self.mailbox
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: TransferContinuation) in
                mailbox.submit(id: id, request: request, continuation: continuation)
            }
        } onCancel: {
            mailbox.cancel(id: id)
        }
        return try result.get()
    }

    /// Whether the loop thread has finished (for tests of ``shutdown()``).
    package var loopThreadExited: Bool { mailbox.threadExited }

    /// Fails every pending transfer with ``TransferFailureKind/cancelled``, frees every curl handle
    /// and stops the loop thread. Idempotent; later ``perform(_:)`` calls fail at once.
    public func shutdown() async {
        await mailbox.shutdown()
    }
}
