internal import CCurl

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
