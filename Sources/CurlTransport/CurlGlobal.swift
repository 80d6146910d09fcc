internal import CCurl
import Glibc

/// One-time, process-wide libcurl initialisation.
///
/// `curl_global_init` must run once, before any other curl call and never concurrently with
/// itself. A `static let` is initialised lazily and atomically (swift_once), so the
/// first ``CurlClient`` to start pays for it and every later one reads the cached result.
/// `curl_global_cleanup` is never called: other clients may still be running at exit (P4).
enum CurlGlobal {
    /// The `CURLcode` returned by `curl_global_init` (after OpenSSL's no-atexit request).
    static let initResult: Int32 = ccurl_global_init()

    /// Whether libcurl initialised successfully.
    static var isInitialized: Bool { initResult == 0 }
}

/// Living within an address-space limit (`RLIMIT_AS`, `ulimit -v`).
///
/// Under such a limit, what a process reserves counts as much as what it uses: each thread's
/// stack (8 MiB by default) and each glibc malloc arena (64 MiB, one per thread that allocates).
/// A run reserves about 600 MiB that way while it uses 30 to 130; near the limit, a thread the
/// concurrency runtime cannot create makes it retry forever, and a failed allocation ends a
/// Swift program. ``fitLimit()`` makes the reservations small before any thread starts.
public enum AddressSpace {
    /// Stack of each thread started after ``fitLimit()`` under a limit. The parsers bound their
    /// nesting (property lists 64 levels, DER 32), so their recursion stays far below this.
    public static let limitedThreadStack = 2 << 20

    /// malloc arenas under a limit: the main one only. A second one reserves 64 MiB at once, which
    /// can take what the runtime needs for its next thread.
    public static let limitedArenas = 1

    /// The soft address-space limit in bytes; `nil` when there is none.
    public static var limit: UInt64? {
        var value = rlimit()
        guard getrlimit(Int32(RLIMIT_AS.rawValue), &value) == 0, value.rlim_cur != rlim_t.max else { return nil }
        return UInt64(value.rlim_cur)
    }

    /// Under an address-space limit, gives the threads started from now on stacks of
    /// ``limitedThreadStack`` and caps malloc at ``limitedArenas`` arenas; without one, does
    /// nothing. Call first thing in `main`, before the concurrency runtime starts a thread.
    /// - Returns: The limit, when there is one.
    @discardableResult
    public static func fitLimit() -> UInt64? {
        guard let limit else { return nil }
        _ = ccurl_fit_address_space(limitedThreadStack, Int32(limitedArenas))
        return limit
    }
}

/// Living with a small stack limit (`RLIMIT_STACK`, `ulimit -s`).
///
/// glibc gives every thread without a stack size of its own (the concurrency runtime's, the curl
/// loops') a stack of the soft stack limit, 8 MiB by default. Under a small one a file nested as
/// deeply as the parsers allow (JSON: 256 levels, about 1.5 KiB of stack each) overflowed the
/// stack of the thread parsing it: `ulimit -s 256` and a server answering 250 nested arrays
/// crashed the run (SIGSEGV). ``fitLimit()`` gives the threads started from now on at least
/// ``minimumThreadStack`` and lets the main thread's stack grow as far, within the hard limit.
public enum StackLimit {
    /// The least stack a thread gets: what ``AddressSpace`` gives under an address-space limit,
    /// several times what the deepest nesting any parser allows needs.
    public static let minimumThreadStack = AddressSpace.limitedThreadStack

    /// Under a soft stack limit below ``minimumThreadStack``: raises it toward that (within the
    /// hard limit) and gives the threads started from now on stacks of ``minimumThreadStack``;
    /// otherwise does nothing. Call first thing in `main`, before the concurrency runtime starts
    /// a thread. - Returns: Whether the limit was below the minimum.
    @discardableResult
    public static func fitLimit() -> Bool {
        var value = rlimit()
        guard getrlimit(Int32(RLIMIT_STACK.rawValue), &value) == 0, value.rlim_cur != rlim_t.max,
            value.rlim_cur < rlim_t(minimumThreadStack)
        else { return false }
        value.rlim_cur = value.rlim_max == rlim_t.max ? rlim_t(minimumThreadStack) : min(value.rlim_max, rlim_t(minimumThreadStack))
        _ = setrlimit(Int32(RLIMIT_STACK.rawValue), &value)
        _ = ccurl_set_default_thread_stack(minimumThreadStack)
        return true
    }
}
