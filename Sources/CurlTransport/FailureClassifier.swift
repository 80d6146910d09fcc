internal import CCurl

/// libcurl result codes the classifier distinguishes, as plain integers (so tests and callers need
/// no C import).
package enum CurlCode {
    /// `CURLE_OK`.
    package static let ok = Int(CURLE_OK.rawValue)
    /// `CURLE_UNSUPPORTED_PROTOCOL`.
    package static let unsupportedProtocol = Int(CURLE_UNSUPPORTED_PROTOCOL.rawValue)
    /// `CURLE_URL_MALFORMAT`.
    package static let urlMalformat = Int(CURLE_URL_MALFORMAT.rawValue)
    /// `CURLE_COULDNT_RESOLVE_PROXY`.
    package static let couldntResolveProxy = Int(CURLE_COULDNT_RESOLVE_PROXY.rawValue)
    /// `CURLE_COULDNT_RESOLVE_HOST`.
    package static let couldntResolveHost = Int(CURLE_COULDNT_RESOLVE_HOST.rawValue)
    /// `CURLE_COULDNT_CONNECT`.
    package static let couldntConnect = Int(CURLE_COULDNT_CONNECT.rawValue)
    /// `CURLE_HTTP2`.
    package static let http2 = Int(CURLE_HTTP2.rawValue)
    /// `CURLE_PARTIAL_FILE`.
    package static let partialFile = Int(CURLE_PARTIAL_FILE.rawValue)
    /// `CURLE_WRITE_ERROR`.
    package static let writeError = Int(CURLE_WRITE_ERROR.rawValue)
    /// `CURLE_OPERATION_TIMEDOUT`.
    package static let operationTimedOut = Int(CURLE_OPERATION_TIMEDOUT.rawValue)
    /// `CURLE_SSL_CONNECT_ERROR`.
    package static let sslConnectError = Int(CURLE_SSL_CONNECT_ERROR.rawValue)
    /// `CURLE_ABORTED_BY_CALLBACK`.
    package static let abortedByCallback = Int(CURLE_ABORTED_BY_CALLBACK.rawValue)
    /// `CURLE_GOT_NOTHING`.
    package static let gotNothing = Int(CURLE_GOT_NOTHING.rawValue)
    /// `CURLE_SEND_ERROR`.
    package static let sendError = Int(CURLE_SEND_ERROR.rawValue)
    /// `CURLE_RECV_ERROR`.
    package static let recvError = Int(CURLE_RECV_ERROR.rawValue)
    /// `CURLE_SSL_CERTPROBLEM`.
    package static let sslCertProblem = Int(CURLE_SSL_CERTPROBLEM.rawValue)
    /// `CURLE_SSL_CIPHER`.
    package static let sslCipher = Int(CURLE_SSL_CIPHER.rawValue)
    /// `CURLE_PEER_FAILED_VERIFICATION`.
    package static let peerFailedVerification = Int(CURLE_PEER_FAILED_VERIFICATION.rawValue)
    /// `CURLE_SSL_CACERT` (an alias of `CURLE_PEER_FAILED_VERIFICATION` since 7.62).
    package static let sslCACert = Int(ccurl_code_ssl_cacert)
    /// `CURLE_BAD_CONTENT_ENCODING`.
    package static let badContentEncoding = Int(CURLE_BAD_CONTENT_ENCODING.rawValue)
    /// `CURLE_FILESIZE_EXCEEDED`.
    package static let filesizeExceeded = Int(CURLE_FILESIZE_EXCEEDED.rawValue)
    /// `CURLE_USE_SSL_FAILED`.
    package static let useSSLFailed = Int(CURLE_USE_SSL_FAILED.rawValue)
    /// `CURLE_SETOPT_OPTION_SYNTAX` (a `--resolve` or `--connect-to` entry libcurl cannot read).
    package static let setoptOptionSyntax = Int(CURLE_SETOPT_OPTION_SYNTAX.rawValue)
    /// `CURLE_SSL_CACERT_BADFILE`.
    package static let sslCACertBadFile = Int(CURLE_SSL_CACERT_BADFILE.rawValue)
    /// `CURLE_SSL_SHUTDOWN_FAILED`.
    package static let sslShutdownFailed = Int(CURLE_SSL_SHUTDOWN_FAILED.rawValue)
    /// `CURLE_SSL_CRL_BADFILE`.
    package static let sslCRLBadFile = Int(CURLE_SSL_CRL_BADFILE.rawValue)
    /// `CURLE_SSL_ISSUER_ERROR`.
    package static let sslIssuerError = Int(CURLE_SSL_ISSUER_ERROR.rawValue)
    /// `CURLE_SSL_PINNEDPUBKEYNOTMATCH`.
    package static let sslPinnedPubKeyNotMatch = Int(CURLE_SSL_PINNEDPUBKEYNOTMATCH.rawValue)
    /// `CURLE_SSL_INVALIDCERTSTATUS`.
    package static let sslInvalidCertStatus = Int(CURLE_SSL_INVALIDCERTSTATUS.rawValue)
    /// `CURLE_HTTP2_STREAM`.
    package static let http2Stream = Int(CURLE_HTTP2_STREAM.rawValue)
    /// `CURLE_SSL_CLIENTCERT`.
    package static let sslClientCert = Int(CURLE_SSL_CLIENTCERT.rawValue)
    /// `CURLE_SSL_ENGINE_NOTFOUND`.
    package static let sslEngineNotFound = Int(CURLE_SSL_ENGINE_NOTFOUND.rawValue)
    /// `CURLE_SSL_ENGINE_SETFAILED`.
    package static let sslEngineSetFailed = Int(CURLE_SSL_ENGINE_SETFAILED.rawValue)
    /// `CURLE_FAILED_INIT`.
    package static let failedInit = Int(CURLE_FAILED_INIT.rawValue)
    /// `CURLE_OUT_OF_MEMORY` (also a header line past libcurl's 100 KiB limit).
    package static let outOfMemory = Int(CURLE_OUT_OF_MEMORY.rawValue)
    /// `CURLE_WEIRD_SERVER_REPLY`.
    package static let weirdServerReply = Int(CURLE_WEIRD_SERVER_REPLY.rawValue)
    /// `CURLE_SSL_ENGINE_INITFAILED`.
    package static let sslEngineInitFailed = Int(CURLE_SSL_ENGINE_INITFAILED.rawValue)
}

/// OpenSSL `X509_V_ERR_*` values reported by `CURLINFO_SSL_VERIFYRESULT`.
package enum X509VerifyResult {
    /// `X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT`.
    package static let unableToGetIssuerCert = 2
    /// `X509_V_ERR_CERT_NOT_YET_VALID`.
    package static let certNotYetValid = 9
    /// `X509_V_ERR_CERT_HAS_EXPIRED`.
    package static let certHasExpired = 10
    /// `X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT`.
    package static let depthZeroSelfSigned = 18
    /// `X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN`.
    package static let selfSignedInChain = 19
    /// `X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY`.
    package static let unableToGetIssuerCertLocally = 20
    /// `X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE`.
    package static let unableToVerifyLeafSignature = 21
    /// `X509_V_ERR_CERT_UNTRUSTED`.
    package static let certUntrusted = 27
    /// `X509_V_ERR_HOSTNAME_MISMATCH`.
    package static let hostnameMismatch = 62
}

/// Maps a failed libcurl transfer to a ``TransferFailureKind``. Pure: no curl calls.
package enum FailureClassifier {
    /// What libcurl 7.88's threaded resolver writes when it cannot start the thread for a name
    /// (`asyn-thread.c`), with `CURLE_COULDNT_RESOLVE_HOST`.
    package static let resolverThreadFailure = "getaddrinfo() thread failed to start"

    /// Classifies a failure.
    /// - Parameters:
    ///   - curlCode: The transfer's `CURLcode` (not `CURLE_OK`).
    ///   - tlsVerifyResult: `CURLINFO_SSL_VERIFYRESULT` (0 when none).
    ///   - errorText: The transfer's error buffer (or `curl_easy_strerror`).
    ///   - bodyLimitExceeded: Whether the write callback aborted because of the body size cap.
    ///   - refusedPrivateAddress: Whether the open-socket callback refused a private address.
    ///   - headerLimitExceeded: Whether the header callback aborted because of the header cap.
    ///   - descriptorShortage: Whether the process ran out of file descriptors (`EMFILE`/`ENFILE`)
    ///     during the transfer: never the host's failure.
    ///   - connected: Whether a connection was made (`CURLINFO_PRIMARY_IP` is set): an
    ///     "unsupported protocol" then comes from the server's answer, not from the request.
    /// - Returns: The kind of failure.
    package static func classify(
        curlCode: Int,
        tlsVerifyResult: Int,
        errorText: String,
        bodyLimitExceeded: Bool = false,
        refusedPrivateAddress: Bool = false,
        headerLimitExceeded: Bool = false,
        connected: Bool = false,
        descriptorShortage: Bool = false
    ) -> TransferFailureKind {
        if descriptorShortage && !bodyLimitExceeded && !headerLimitExceeded && !refusedPrivateAddress {
            return .descriptorsExhausted
        }
        if headerLimitExceeded || errorText.contains("Too large response headers") {
            return .headersTooLarge
        }
        switch curlCode {
        case CurlCode.outOfMemory:
            // libcurl 7.88 reports a header or trailer line longer than its limit (100 KiB) as
            // "Out of memory"; a real allocation failure would have ended this process already.
            return .headersTooLarge
        case CurlCode.weirdServerReply:
            return .invalidResponse
        case CurlCode.unsupportedProtocol where connected || errorText.contains("HTTP/0.9"):
            // Not an HTTP/1.x or HTTP/2 answer at all (or garbage: libcurl takes it for HTTP/0.9),
            // or a status line libcurl refuses ("Unsupported response code in HTTP response",
            // "Unsupported HTTP version (1.2) in response").
            return .invalidResponse
        case CurlCode.badContentEncoding:
            // The body is not in the encoding the answer names (or one libcurl cannot decode):
            // a fault of the server's answer, not of the connection.
            return .invalidResponse
        case CurlCode.couldntResolveHost where errorText.contains(resolverThreadFailure):
            // libcurl's threaded resolver could not start its thread: nothing was asked of DNS.
            return .threadsExhausted
        case CurlCode.couldntResolveHost, CurlCode.couldntResolveProxy:
            return .dnsFailure
        case CurlCode.couldntConnect:
            return refusedPrivateAddress ? .privateAddress : .connectFailure
        case CurlCode.operationTimedOut:
            return .timeout
        case CurlCode.writeError, CurlCode.abortedByCallback:
            return bodyLimitExceeded ? .tooLarge : .transferFailure
        case CurlCode.filesizeExceeded:
            return .tooLarge
        case CurlCode.urlMalformat, CurlCode.unsupportedProtocol, CurlCode.setoptOptionSyntax:
            return .invalidRequest
        case CurlCode.sslCACertBadFile:
            // The CA file given to us (gone or unreadable since the options were checked), not
            // the host's certificate.
            return .invalidRequest
        case CurlCode.recvError where errorText.contains(" alert "), CurlCode.sendError where errorText.contains(" alert "):
            // A TLS alert the server sent after the handshake (TLS 1.3 asks for a client
            // certificate then: "tlsv13 alert certificate required"): the server refuses TLS
            // with this client, which no retry changes, not a connection that broke.
            return .tlsFailure
        case CurlCode.recvError, CurlCode.sendError, CurlCode.partialFile, CurlCode.gotNothing,
            CurlCode.http2, CurlCode.http2Stream:
            return .transferFailure
        case CurlCode.peerFailedVerification, CurlCode.sslCACert, CurlCode.sslConnectError,
            CurlCode.sslCertProblem, CurlCode.sslCipher,
            CurlCode.sslShutdownFailed, CurlCode.sslCRLBadFile, CurlCode.sslIssuerError,
            CurlCode.sslPinnedPubKeyNotMatch, CurlCode.sslInvalidCertStatus, CurlCode.sslClientCert,
            CurlCode.useSSLFailed, CurlCode.sslEngineNotFound, CurlCode.sslEngineSetFailed,
            CurlCode.sslEngineInitFailed:
            return classifyTLS(tlsVerifyResult: tlsVerifyResult, errorText: errorText)
        default:
            return .transferFailure
        }
    }

    /// Classifies a TLS failure from OpenSSL's verification result, then curl's message.
    private static func classifyTLS(tlsVerifyResult: Int, errorText: String) -> TransferFailureKind {
        switch tlsVerifyResult {
        case X509VerifyResult.certHasExpired:
            return .tlsExpired
        case X509VerifyResult.certNotYetValid:
            return .tlsNotYetValid
        case X509VerifyResult.unableToGetIssuerCert, X509VerifyResult.depthZeroSelfSigned,
            X509VerifyResult.selfSignedInChain, X509VerifyResult.unableToGetIssuerCertLocally,
            X509VerifyResult.unableToVerifyLeafSignature, X509VerifyResult.certUntrusted:
            return .tlsUntrusted
        case X509VerifyResult.hostnameMismatch:
            return .tlsHostnameMismatch
        default:
            break
        }
        // curl checks the host name itself after OpenSSL accepted the chain (verify result 0).
        let text = errorText.lowercased()
        if text.contains("no alternative certificate subject name matches")
            || text.contains("ssl: certificate subject name")
            || text.contains("does not match target host name")
        {
            return .tlsHostnameMismatch
        }
        return .tlsFailure
    }
}
