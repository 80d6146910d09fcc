/// One stable code with what it means and what to do about it: a SARIF rule.
public struct CodeDescription: Sendable, Hashable {
    /// The stable kebab-case code.
    public let code: String
    /// The severity findings with this code usually have (a host failure is an error).
    public let severity: Severity
    /// What the code means, in one sentence.
    public let summary: String
    /// What to change, in general (a finding's own fix is more precise).
    public let fix: String

    /// Creates a description.
    public init(code: String, severity: Severity, summary: String, fix: String) {
        self.code = code
        self.severity = severity
        self.summary = summary
        self.fix = fix
    }
}

/// Every code a finding, a host's answer or a `diagnose` step can carry (docs/codes.md), and every
/// code of ``AASALinter/catalog``, each once with its summary and general fix: the rules of the
/// SARIF output, in this order.
public enum CodeCatalogue {
    /// Every code, in catalogue order: the report's own codes, then the linter's.
    public static let all: [CodeDescription] = own + AASALinter.catalog.map { lint in
        CodeDescription(code: lint.code, severity: lint.severity, summary: lint.summary,
                        fix: lintFixes[lint.code] ?? "See the finding's fix.")
    }.filter { lint in !own.contains { $0.code == lint.code } }

    /// The description of `code`, when it is catalogued.
    public static func description(of code: String) -> CodeDescription? { index[code].map { all[$0] } }

    /// The position of `code` in ``all`` (a SARIF result's `ruleIndex`).
    public static func position(of code: String) -> Int? { index[code] }

    private static let index: [String: Int] = Dictionary(all.enumerated().map { ($0.element.code, $0.offset) }) { first, _ in first }

    private static func e(_ code: String, _ summary: String, _ fix: String) -> CodeDescription {
        CodeDescription(code: code, severity: .error, summary: summary, fix: fix)
    }

    private static func w(_ code: String, _ summary: String, _ fix: String) -> CodeDescription {
        CodeDescription(code: code, severity: .warning, summary: summary, fix: fix)
    }

    private static func n(_ code: String, _ summary: String, _ fix: String) -> CodeDescription {
        CodeDescription(code: code, severity: .info, summary: summary, fix: fix)
    }

    private static let serve = "Serve the file itself with status 200 at https://HOST/.well-known/apple-app-site-association."

    /// The report's own codes (download, TLS, HTTP, body, association, CDN, entries, apps).
    static let own: [CodeDescription] = [
        // Network
        e("dns-failure", "The host name does not resolve.", "Publish A/AAAA records for the host, or remove the entry."),
        e("connect-failure", "No TCP connection to port 443.", "Make the server accept HTTPS connections on port 443 from the internet."),
        e("timeout", "The connection or the download took too long (a server that stalls mid-body too).", "Make the server answer the file quickly; Apple's downloader gives up after a few seconds."),
        e("transfer-failure", "The connection broke mid-response.", "Fix the server or proxy that drops the connection while sending the file."),
        e("private-address", "The host resolves to a private or reserved address, which devices refuse.", "Serve the host from a public address."),
        // TLS
        e("tls-untrusted", "The certificate chain is not trusted by a device.", "Use a certificate from a publicly trusted CA and send the whole chain."),
        e("tls-expired", "The certificate has expired.", "Renew the certificate."),
        e("tls-not-yet-valid", "The certificate is not valid yet.", "Check the certificate's start date, and this machine's clock."),
        e("tls-hostname-mismatch", "The certificate does not name the host.", "Use a certificate whose subject alternative names include the host."),
        e("tls-failure", "The TLS handshake failed.", "Serve TLS 1.2 or later with a usual cipher suite."),
        w("tls-expires-soon", "The certificate expires within 14 days.", "Renew the certificate before it expires."),
        // HTTP
        e("http-redirect", "The file's URL answers with a 3xx: a redirect, which Apple's downloader never follows, or a 304 to a request without validators.", serve),
        e("http-client-error", "The file's URL answers 4xx.", serve),
        e("http-server-error", "The file's URL answers 5xx.", "Fix the server error; " + serve),
        e("http-unexpected-status", "A 1xx or 2xx status other than 200.", serve),
        e("invalid-response", "The answer is not HTTP at all (HTTP/0.9, garbage).", "Serve the file over HTTPS from a real HTTP server."),
        e("headers-too-large", "Header and trailer lines over 300 KiB (or one line over 100 KiB).", "Send fewer or shorter response headers."),
        e("invalid-request", "libcurl refused to make the request (an option it rejects, a --cdn-base it cannot use).", "Check the options given to aasa-fetch."),
        e("descriptors-exhausted", "This process ran out of file descriptors; the host was not fetched.", "Raise the open-file limit (ulimit -n) or lower --concurrency."),
        e("threads-exhausted", "This process could not start a thread (a curl loop, or the resolver's for a name); the host was not fetched.", "Raise the limit on processes (ulimit -u, or the cgroup's pids.max) or lower --concurrency."),
        e("cancelled", "The download was cancelled before it ended.", "Run the check again."),
        // Body
        e("too-large", "The file is larger than 128 KiB: devices refuse it.", "Shrink the file: merge app IDs into one detail's \"appIDs\", use wildcards and substitution variables."),
        e("invalid-json", "The file is not strict JSON.", "Fix the JSON syntax at the position given (no comments, no trailing commas)."),
        e("not-an-association-file", "Valid JSON without any documented service at the top level.", "Serve the apple-app-site-association file with an \"applinks\" (or webcredentials, appclips…) section."),
        w("bom", "The file starts with a UTF-8 byte order mark.", "Save the file as UTF-8 without a byte order mark."),
        w("content-type", "The file is not served as application/json.", "Serve the file with Content-Type: application/json."),
        w("legacy-root-path", "The file is served only at /apple-app-site-association; Apple's CDN reads only /.well-known/.", "Serve the file at https://HOST/.well-known/apple-app-site-association."),
        w("signed-file", "A CMS-signed file, which iOS 9+ no longer needs.", "Serve the plain JSON file."),
        n("legacy-root-path-tried", "After a 404 at /.well-known/, the legacy root path was tried and failed too.", serve),
        // Association
        e("app-not-listed", "The app ID is not listed for the entry's service in the host's file.", "Add the app ID to the appIDs of a detail under applinks.details (or to SERVICE.apps)."),
        w("app-id-unknown", "No app ID was given, so association is not judged.", "Pass --app-id TEAMID.bundle.id, or use entitlements with application-identifier."),
        w("app-id-unresolved", "The application-identifier holds Xcode variables, so association is not judged.", "Pass --app-id TEAMID.bundle.id, or --define the variables."),
        w("app-id-malformed", "An app ID not shaped like TEAMID.bundle.id.", "Use the app ID from the developer portal, e.g. ABCDE12345.com.example.app."),
        w("custom-root", "The certificate is trusted only through --cacert; a device accepts that only for ?mode=developer entries.", "Use a certificate from a publicly trusted CA, or ?mode=developer entries while testing."),
        // Apple's CDN
        e("cdn-origin-failure", "Apple's CDN could not get the file from the origin (Apple-Failure-Reason).", "Fix what the CDN's SWCERR reason names on the origin; the CDN retries later."),
        e("cdn-not-found", "Apple's CDN answers 404 without a reason.", "Make the origin serve the file; the CDN picks it up within a day or so."),
        e("cdn-unknown-domain", "Apple's CDN answers 405 for the domain.", "Check the domain's spelling; a domain the CDN never saw needs a working origin first."),
        e("cdn-http-error", "Apple's CDN answers an unexpected status.", "Check the origin and try again later."),
        e("cdn-unreachable", "No answer from Apple's CDN.", "Check the network path to app-site-association.cdn-apple.com."),
        w("cdn-stale", "Apple's CDN's copy differs in meaning from the origin's file.", "Wait for the CDN to refresh (about a day), or check that the origin serves what you expect."),
        // refresh in a CI format: the notices titled by the change, and the run's warnings
        n("changed", "refresh: the host's file changed in meaning.", "Check that the change was meant."),
        n("approved", "refresh: the host serves an approved file again (or for the first time).", "Nothing to do."),
        n("association-gained", "refresh: the file now lists an app ID that needs the host.", "Nothing to do."),
        w("lease-lost", "refresh: another process recorded the host meanwhile; its result stands.", "If leases lapse, raise refresh --lease."),
        w("stopped", "refresh: hosts abandoned by a stop, not recorded.", "Run the refresh again; they are still due."),
        // User agents
        w("user-agent-blocked", "The origin refuses Apple's downloader's user agent but serves another.", "Allow the AASA-Bot user agent (and Apple's CDN's) to fetch the file."),
        w("user-agent-differs", "The origin answers other user agents differently.", "Serve the same file to every user agent."),
        // Entitlement entries
        e("entitlement-not-string", "An element of the associated-domains array is not a string.", "Make every element of com.apple.developer.associated-domains a string."),
        e("entitlement-unresolved-variable", "The entry holds an Xcode variable with no value.", "Pass --define NAME=VALUE, or write the value."),
        e("entitlement-missing-service", "The entry has no service prefix.", "Write SERVICE:HOST, e.g. applinks:example.com."),
        e("entitlement-scheme", "The entry holds a URL scheme.", "Write the host only: applinks:example.com."),
        e("entitlement-query", "The entry holds a query other than ?mode=.", "Remove the query; only ?mode=developer|managed|developer+managed is allowed."),
        e("entitlement-mode-invalid", "The ?mode= value is not developer, managed or developer+managed.", "Use ?mode=developer, ?mode=managed or ?mode=developer+managed."),
        e("entitlement-path", "The entry holds a path.", "Write the host only; paths belong in the association file."),
        e("entitlement-trailing-slash", "The entry ends with a slash.", "Remove the trailing slash."),
        e("entitlement-port", "The entry holds a port.", "Remove the port: the file is always fetched on port 443."),
        e("entitlement-ip-address", "The entry names an IP address.", "Use a domain name."),
        e("entitlement-empty-host", "The entry has no host.", "Write SERVICE:HOST."),
        e("entitlement-wildcard-position", "A wildcard other than a leading *.", "Write the wildcard as *.example.com."),
        e("entitlement-wildcard-appclips", "A wildcard in an appclips entry.", "List each App Clip host without a wildcard."),
        e("entitlement-control-character", "The entry holds a control character (NUL, ESC, a line break inside).", "Remove it: an entry is service:domain in printable characters."),
        e("entitlement-invalid-host", "The host is not a valid domain name.", "Write a valid host name."),
        e("entitlement-invalid-punycode", "A Punycode label that does not decode.", "Write the host in Unicode or valid Punycode."),
        e("entitlement-not-punycode", "A Unicode host that cannot be converted to Punycode.", "Write the host in Punycode (xn--…)."),
        w("entitlement-whitespace", "White space around the entry.", "Remove the white space."),
        w("entitlement-uppercase", "Upper-case letters in the host.", "Write the host in lower case."),
        w("entitlement-unknown-service", "A service prefix the OS does not know.", "Use applinks, webcredentials, appclips or activitycontinuation."),
        w("entitlement-alternate-mode", "An entry with ?mode=: only some devices use it.", "Keep it only for testing or managed devices."),
        w("entitlement-duplicate", "The same entry is listed twice.", "Remove the duplicate."),
        w("entitlement-single-label", "A host of one label (no dot).", "Use a fully qualified domain name."),
        w("entitlements-empty", "The entitlements list no associated domains.", "Add com.apple.developer.associated-domains to the entitlements."),
        n("entry-bare-host", "A --domain without a service prefix, read as applinks:HOST.", "Write --domain applinks:HOST (or webcredentials:, appclips:, activitycontinuation:)."),
        // Apps
        e("signature-der-mismatch", "The XML and DER entitlements of the signature differ.", "Sign the app again with a current codesign."),
        e("signature-slices-differ", "The slices of a universal binary carry different entitlements.", "Sign every slice with the same entitlements."),
        e("macho-slice-unsigned", "A slice of the binary is not signed.", "Sign the app again."),
        e("signature-missing-domains", "The signed entitlements have no associated domains.", "Add the Associated Domains capability and sign again."),
        e("signature-wildcard-domains", "The signed entitlements hold a wildcard where the profile allows none.", "Sign with the domains the profile allows."),
        e("profile-missing-domain", "The provisioning profile does not allow a signed domain.", "Regenerate the profile with the Associated Domains capability."),
        e("app-id-mismatch", "The app ID differs between the signature and the profile.", "Sign with the profile of the same app ID."),
        e("team-id-mismatch", "The team ID differs between the signature and the profile.", "Sign with the profile of the same team."),
        e("compare-missing-in-binary", "A domain of the project is missing from the built app.", "Build and sign the app with the project's entitlements."),
        w("profile-extra-domain", "The profile allows a domain the app does not sign.", "Nothing to do unless the domain was meant to be signed."),
        w("profile-expired", "The provisioning profile has expired.", "Renew the profile."),
        w("compare-missing-in-project", "A domain of the built app is missing from the project.", "Update the project's entitlements."),
        w("info-plist-missing", "The app has no Info.plist.", "Check the app bundle."),
        w("info-plist-malformed", "The app's Info.plist cannot be read.", "Check the app bundle."),
        w("plist-too-complex", "A property list past the plist limits.", "Check the file; real property lists are far smaller."),
        n("profile-wildcard-domains", "The profile allows associated domains by wildcard.", "Nothing to do."),
        n("profile-absent", "The app carries no provisioning profile.", "Nothing to do for an App Store build."),
        n("ipa-several-apps", "The .ipa holds several apps; the first was read.", "Give the .app you mean."),
    ]

    /// General fixes of the linter's codes (their findings carry a precise one).
    static let lintFixes: [String: String] = [
        "size-near-limit": "Leave room: merge details that share rules and use wildcards or substitution variables.",
        "duplicate-key": "Keep one of the keys.",
        "unknown-service": "Remove the key, or spell the service as Apple documents it.",
        "unknown-key": "Remove the key, or spell it as Apple documents it.",
        "defaults-inherited-key": "Write the key in each component that needs it, if inheriting it was not meant.",
        "wrong-type": "Use the JSON type Apple documents for the key.",
        "exclude-not-boolean": "Write \"exclude\": true.",
        "query-value-not-string": "Make every value of the query dictionary a string.",
        "legacy-details-dictionary": "Write \"details\" as an array of objects with \"appIDs\".",
        "missing-details": "Add \"details\": [{\"appIDs\": [\"TEAMID.bundle.id\"], \"components\": [...]}].",
        "empty-details": "Add a detail with the app's appIDs and components.",
        "apps-not-empty": "Write \"apps\": [] or leave it out.",
        "missing-apps": "Add \"apps\": [\"TEAMID.bundle.id\"].",
        "empty-apps": "List the app IDs in \"apps\".",
        "detail-without-app-id": "Add \"appIDs\": [\"TEAMID.bundle.id\"].",
        "empty-app-ids": "List the app IDs in \"appIDs\".",
        "app-id-and-app-ids": "Keep \"appIDs\" only.",
        "app-id-placeholder": "Replace the placeholder with the real app ID (TEAMID.bundle.id).",
        "app-id-missing-prefix": "Write the app ID with its 10-character Team ID prefix.",
        "app-id-invalid": "Write the app ID as TEAMID.bundle.id.",
        "app-id-numeric-prefix": "Use the Team ID (10 letters and digits) from the developer portal.",
        "duplicate-app-id": "Remove the later listing.",
        "detail-without-rules": "Add \"components\" (or \"paths\").",
        "empty-components": "Add components, or remove the detail.",
        "empty-paths": "Add paths or components, or remove the detail.",
        "paths-and-components": "Keep \"components\" only.",
        "mixed-formats": "Use \"appIDs\" with \"components\" (iOS 13 and later), or \"appID\" with \"paths\" as well for iOS 12.",
        "empty-component": "Give the component a \"/\", \"?\" or \"#\", or mean to match every URL.",
        "unreachable-rule": "Remove the rule, or move it before the one that shadows it.",
        "not-in-components": "Use \"exclude\": true instead of \"NOT \".",
        "not-prefix-malformed": "Write \"NOT \" in upper case followed by a space.",
        "fragment-in-path": "Move the fragment to a component's \"#\".",
        "query-in-path": "Move the query to a component's \"?\".",
        "path-without-leading-slash": "Start the pattern with '/'.",
        "non-ascii-pattern": "Percent-encode the text, or set \"percentEncoded\": false.",
        "undefined-variable": "Define the variable under substitutionVariables, or use a built-in one.",
        "unterminated-variable": "Close the variable with ')'.",
        "variable-name-invalid": "Rename the variable.",
        "variable-in-value": "Write the value without variables.",
        "variable-shadows-builtin": "Rename the variable.",
        "variable-empty": "Give the variable values, or remove it.",
        "variable-unused": "Remove the variable, or use it.",
    ]
}
