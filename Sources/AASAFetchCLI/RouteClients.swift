import AASAFetchCore
import CurlTransport

/// The curl clients of a run that downloads hosts (`fetch`, `refresh`, `diagnose`): the origin route's, on
/// `--threads` loops, and, when the run may use Apple's CDN, one of the CDN's own.
///
/// The CDN client keeps one connection to the CDN, which HTTP/2 multiplexes: one loop and
/// `CURLMOPT_MAX_HOST_CONNECTIONS` 1 (without the limit libcurl 7.88 opens a connection per transfer
/// started before the first is up). The origin client sets no per-host limit, because libcurl counts
/// one against the `--connect-to` target: with the two routes on one limited client, every origin
/// host that `--connect-to` sends to one server waited for a single connection (500 hosts behind
/// 20 ms of latency: 14 hosts/s against 334 for `--route origin`, and hosts timed out while they
/// waited), and `diagnose`'s user-agent check sent its three requests to a host one at a time.
struct RouteClients: Sendable {
    /// The origin route's client.
    let origin: CurlClient
    /// The CDN's client; the origin's when the run never uses the CDN.
    let cdn: CurlClient
    /// The run's network options, which both clients were made for.
    let options: FetchOptions

    /// Starts the clients: a CDN client only with `usesCDN`.
    init(options: FetchOptions, usesCDN: Bool) {
        self.options = options
        origin = CurlClient(maxConnections: options.concurrency, threads: options.threads)
        cdn = usesCDN ? CurlClient(maxConnections: options.concurrency, maxConnectionsPerHost: 1, threads: 1) : origin
    }

    /// The fetcher of both routes over these clients.
    func fetcher(cdnBase: String) -> RouteFetcher {
        RouteFetcher(origin: AASAFetcher(transport: origin, options: options),
                     cdn: CDNFetcher(transport: cdn, options: options, base: cdnBase))
    }

    /// Ends every loop of both clients.
    func shutdown() async {
        await origin.shutdown()
        if cdn !== origin { await cdn.shutdown() }
    }
}
