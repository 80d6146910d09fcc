#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

/*
 * Typed, non-variadic shims over libcurl for Swift.
 *
 * curl_easy_setopt, curl_easy_getinfo, curl_multi_setopt and curl_share_setopt are variadic
 * (and macro-wrapped), so Swift cannot call them. Each function below forwards one argument
 * kind; the logic stays in Swift (CurlTransport). Every function is static inline: this
 * module is header-only.
 */

#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

/* MARK: - Global initialisation */

/*
 * OPENSSL_INIT_NO_ATEXIT from <openssl/crypto.h>, copied so this header needs no OpenSSL headers.
 */
#define CCURL_OPENSSL_INIT_NO_ATEXIT 0x00080000UL

/*
 * Initialises libcurl once for the process. First asks OpenSSL (looked up with dlsym, so there is
 * no link-time dependency) not to register its atexit cleanup, which otherwise races threads
 * still using curl at process exit (swift-corelibs-foundation#5469). Then curl_global_init.
 * Returns the CURLcode of curl_global_init.
 */
static inline int ccurl_global_init(void) {
    typedef int (*ccurl_openssl_init_crypto_fn)(uint64_t, const void *);
    void *self = dlopen(NULL, RTLD_NOW | RTLD_GLOBAL);
    void *symbol = NULL;
    if (self != NULL) {
        symbol = dlsym(self, "OPENSSL_init_crypto");
    }
    if (symbol == NULL) {
        void *crypto = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_NOLOAD);
        if (crypto != NULL) {
            symbol = dlsym(crypto, "OPENSSL_init_crypto");
        }
    }
    if (symbol != NULL) {
        ccurl_openssl_init_crypto_fn init_crypto = (ccurl_openssl_init_crypto_fn)symbol;
        (void)init_crypto(CCURL_OPENSSL_INIT_NO_ATEXIT, NULL);
    }
    return (int)curl_global_init(CURL_GLOBAL_ALL);
}

/* Names the calling thread (what /proc/PID/task/TID/comm and profilers show; 15 characters kept). */
static inline void ccurl_name_current_thread(const char *name) {
    (void)prctl(PR_SET_NAME, name, 0, 0, 0);
}

/* MARK: - Constants Swift cannot import from macros */

static const long ccurl_pipe_multiplex = CURLPIPE_MULTIPLEX;
static const int ccurl_socket_bad = CURL_SOCKET_BAD;
static const int ccurl_error_size = CURL_ERROR_SIZE;
static const long ccurl_http_version_1_0 = CURL_HTTP_VERSION_1_0;
static const long ccurl_http_version_1_1 = CURL_HTTP_VERSION_1_1;
static const long ccurl_http_version_2_0 = CURL_HTTP_VERSION_2_0;
static const long ccurl_http_version_2tls = CURL_HTTP_VERSION_2TLS;
static const long ccurl_http_version_3 = CURL_HTTP_VERSION_3;
/* CURLE_SSL_CACERT became an alias of CURLE_PEER_FAILED_VERIFICATION (a macro) in 7.62. */
static const int ccurl_code_ssl_cacert = CURLE_SSL_CACERT;

/*
 * The CA bundle libcurl was built to use when none is given (curl_version_info's cainfo, e.g.
 * /etc/ssl/certs/ca-certificates.crt on Debian), or NULL.
 */
static inline const char *ccurl_default_cainfo(void) {
    const curl_version_info_data *info = curl_version_info(CURLVERSION_NOW);
    if (info == NULL || info->age < CURLVERSION_SEVENTH) {
        return NULL;
    }
    return info->cainfo;
}

/* MARK: - Easy handle options */

static inline CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_share(CURL *handle, CURLSH *share) {
    return curl_easy_setopt(handle, CURLOPT_SHARE, share);
}

/* For CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION. */
static inline CURLcode ccurl_easy_setopt_write_callback(CURL *handle, CURLoption option, curl_write_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

static inline CURLcode ccurl_easy_setopt_opensocket_callback(CURL *handle, curl_opensocket_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, callback);
}

/* MARK: - Easy handle information */

static inline CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

/* The string belongs to the handle: never free it, copy it before curl_easy_cleanup. */
static inline CURLcode ccurl_easy_getinfo_string(CURL *handle, CURLINFO info, const char **value) {
    char *result = NULL;
    CURLcode code = curl_easy_getinfo(handle, info, &result);
    *value = result;
    return code;
}

static inline CURLcode ccurl_easy_getinfo_double(CURL *handle, CURLINFO info, double *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    char *result = NULL;
    CURLcode code = curl_easy_getinfo(handle, info, &result);
    *value = result;
    return code;
}

static inline CURLcode ccurl_easy_getinfo_slist(CURL *handle, CURLINFO info, struct curl_slist **value) {
    return curl_easy_getinfo(handle, info, value);
}

/* The certificate chain (CURLINFO_CERTINFO); it belongs to the handle. */
static inline CURLcode ccurl_easy_getinfo_certinfo(CURL *handle, struct curl_certinfo **value) {
    return curl_easy_getinfo(handle, CURLINFO_CERTINFO, value);
}

/* MARK: - Multi handle */

static inline CURLMcode ccurl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

static inline CURLMSG ccurl_msg_kind(const CURLMsg *message) {
    return message->msg;
}

static inline CURL *ccurl_msg_easy(const CURLMsg *message) {
    return message->easy_handle;
}

static inline CURLcode ccurl_msg_result(const CURLMsg *message) {
    return message->data.result;
}

/* MARK: - Share handle */

static inline CURLSHcode ccurl_share_setopt_long(CURLSH *share, CURLSHoption option, long value) {
    return curl_share_setopt(share, option, value);
}

/*
 * A share handle that several threads may use at once: one pthread mutex per kind of data
 * (curl_lock_data), locked and unlocked by the callbacks below, as CURLSHOPT_LOCKFUNC asks
 * ("a different lock for each kind of data"). libcurl also locks CURL_LOCK_DATA_SHARE itself
 * around changes to the share object. Shared access requests are served exclusively: the
 * critical sections are a hash look-up or insert.
 */
typedef struct ccurl_locked_share {
    CURLSH *share;
    pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
} ccurl_locked_share;

static void ccurl_locked_share_lock(CURL *handle, curl_lock_data data, curl_lock_access access, void *userptr) {
    (void)handle;
    (void)access;
    ccurl_locked_share *locked = (ccurl_locked_share *)userptr;
    if ((int)data >= 0 && data < CURL_LOCK_DATA_LAST) {
        pthread_mutex_lock(&locked->locks[data]);
    }
}

static void ccurl_locked_share_unlock(CURL *handle, curl_lock_data data, void *userptr) {
    (void)handle;
    ccurl_locked_share *locked = (ccurl_locked_share *)userptr;
    if ((int)data >= 0 && data < CURL_LOCK_DATA_LAST) {
        pthread_mutex_unlock(&locked->locks[data]);
    }
}

/* Frees the share handle and its locks; call it only once no easy handle uses it any more. */
static inline void ccurl_locked_share_destroy(ccurl_locked_share *locked) {
    if (locked == NULL) {
        return;
    }
    if (locked->share != NULL) {
        (void)curl_share_cleanup(locked->share);
    }
    for (int index = 0; index < (int)CURL_LOCK_DATA_LAST; index++) {
        pthread_mutex_destroy(&locked->locks[index]);
    }
    free(locked);
}

/*
 * Creates a thread-safe share handle that shares the DNS cache and, when share_tls_sessions is
 * non-zero, the TLS session cache (both documented as safe to share between threads with lock
 * callbacks; connections are not). Returns NULL when libcurl refuses any of it.
 */
static inline ccurl_locked_share *ccurl_locked_share_create(int share_tls_sessions) {
    ccurl_locked_share *locked = (ccurl_locked_share *)calloc(1, sizeof(ccurl_locked_share));
    if (locked == NULL) {
        return NULL;
    }
    for (int index = 0; index < (int)CURL_LOCK_DATA_LAST; index++) {
        pthread_mutex_init(&locked->locks[index], NULL);
    }
    locked->share = curl_share_init();
    if (locked->share == NULL
        || curl_share_setopt(locked->share, CURLSHOPT_USERDATA, (void *)locked) != CURLSHE_OK
        || curl_share_setopt(locked->share, CURLSHOPT_LOCKFUNC, ccurl_locked_share_lock) != CURLSHE_OK
        || curl_share_setopt(locked->share, CURLSHOPT_UNLOCKFUNC, ccurl_locked_share_unlock) != CURLSHE_OK
        || curl_share_setopt(locked->share, CURLSHOPT_SHARE, (long)CURL_LOCK_DATA_DNS) != CURLSHE_OK
        || (share_tls_sessions
            && curl_share_setopt(locked->share, CURLSHOPT_SHARE, (long)CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK)) {
        ccurl_locked_share_destroy(locked);
        return NULL;
    }
    return locked;
}

/* The CURLSH handle to give to CURLOPT_SHARE. */
static inline CURLSH *ccurl_locked_share_handle(ccurl_locked_share *locked) {
    return locked->share;
}

/* MARK: - Sockets (for CURLOPT_OPENSOCKETFUNCTION) */

static inline int ccurl_sockaddr_family(const struct curl_sockaddr *address) {
    return address->family;
}

static inline int ccurl_sockaddr_socktype(const struct curl_sockaddr *address) {
    return address->socktype;
}

static inline int ccurl_sockaddr_protocol(const struct curl_sockaddr *address) {
    return address->protocol;
}

/*
 * Writes the numeric address (no port) of an AF_INET or AF_INET6 curl_sockaddr into buffer.
 * Returns 0 on success, -1 for another family or a too-small buffer.
 */
static inline int ccurl_sockaddr_ntop(const struct curl_sockaddr *address, char *buffer, size_t length) {
    if (address->family == AF_INET && address->addrlen >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)&address->addr;
        return inet_ntop(AF_INET, &v4->sin_addr, buffer, (socklen_t)length) != NULL ? 0 : -1;
    }
    if (address->family == AF_INET6 && address->addrlen >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)&address->addr;
        return inet_ntop(AF_INET6, &v6->sin6_addr, buffer, (socklen_t)length) != NULL ? 0 : -1;
    }
    return -1;
}

/* OpenSSL's SSL_CTX_ctrl, found at run time like OPENSSL_init_crypto so that no OpenSSL headers
 * or link flags are needed. SSL_CTRL_MODE (33) with SSL_MODE_RELEASE_BUFFERS (0x10) makes every
 * connection of the context free its read and write buffers while they are idle. */
typedef long (*ccurl_ssl_ctx_ctrl_fn)(void *ctx, int cmd, long larg, void *parg);

static CURLcode ccurl_sslctx_release_buffers(CURL *handle, void *sslctx, void *userdata) {
    (void)handle;
    (void)userdata;
    static ccurl_ssl_ctx_ctrl_fn ctrl = NULL;
    if (ctrl == NULL) {
        ctrl = (ccurl_ssl_ctx_ctrl_fn)dlsym(RTLD_DEFAULT, "SSL_CTX_ctrl");
    }
    if (ctrl != NULL && sslctx != NULL) {
        ctrl(sslctx, 33 /* SSL_CTRL_MODE */, 0x10L /* SSL_MODE_RELEASE_BUFFERS */, NULL);
    }
    return CURLE_OK;
}

/* Installs ccurl_sslctx_release_buffers as the transfer's CURLOPT_SSL_CTX_FUNCTION. */
static inline CURLcode ccurl_easy_release_tls_buffers(CURL *handle) {
    return curl_easy_setopt(handle, CURLOPT_SSL_CTX_FUNCTION, ccurl_sslctx_release_buffers);
}

#endif
