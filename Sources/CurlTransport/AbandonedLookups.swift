import Synchronization

/// Name lookups this process left to finish on their own threads (`CURLOPT_QUICK_EXIT`).
///
/// libcurl 7.88 joins a transfer's resolver thread when the transfer ends, so a lookup that timed
/// out held its curl loop (every transfer on it) for the system resolver's own timeouts, about
/// 30 s. With `CURLOPT_QUICK_EXIT` the thread is left to end by itself instead; each such thread
/// lives until the resolver gives up. Over a zone whose name servers never answer that would be one
/// thread per host, without bound (3,007 threads for 3,000 hosts). So only so many lookups are left
/// at once: past ``limit`` timed-out lookups in the last ``window``, new transfers join their
/// thread again (slow, but bounded by the concurrency).
package enum AbandonedLookups {
    /// The most lookups left to finish on their own within ``window``.
    package static let limit = 256
    /// How long a left lookup is counted: longer than the system resolver's default tries
    /// (5 s each, two tries, for A and AAAA).
    package static let window: UInt64 = 30_000_000_000

    private static let times = Mutex<[UInt64]>([])

    /// Whether a transfer may leave its lookup to finish on its own now.
    package static func mayAbandon(now: UInt64) -> Bool {
        times.withLock { times in
            times.removeAll { now &- $0 > window }
            return times.count < limit
        }
    }

    /// Notes a lookup that timed out (left to finish on its own).
    package static func noteAbandoned(now: UInt64) {
        times.withLock { $0.append(now) }
    }
}
