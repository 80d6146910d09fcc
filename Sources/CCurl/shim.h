#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

/*
 * Typed, non-variadic shims over libcurl for Swift.
 *
 * curl_easy_setopt, curl_easy_getinfo, curl_multi_setopt and curl_share_setopt are variadic
 * (and macro-wrapped), so Swift cannot call them. Each function below forwards one argument
 * kind; the logic stays in Swift (CurlTransport). The exceptions are the plumbing of curl's socket
 * interface (ccurl_events_*): the callbacks that keep an epoll set and curl's timer run for every
 * socket change, and epoll's packed struct epoll_event has no Swift layout; and the threads' and
 * malloc's settings under an address-space limit or a small stack limit (ccurl_fit_address_space,
 * ccurl_set_default_thread_stack), and the CPU affinity count (ccurl_affinity_cpu_count), which
 * Swift's Glibc module does not declare. Every function is static (inline): this module is header-only.
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
#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

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

/* How many CPUs the calling thread may run on: its affinity mask, as `taskset` or a container's
   cpuset sets it; 0 when the kernel does not say (over 8,192 CPUs). The raw call, as glibc's
   CPU_COUNT needs _GNU_SOURCE. */
static inline int ccurl_affinity_cpu_count(void) {
    unsigned long long mask[128];
    memset(mask, 0, sizeof mask);
    long bytes = syscall(SYS_sched_getaffinity, 0, sizeof mask, mask);
    if (bytes <= 0) return 0;
    int count = 0;
    for (size_t i = 0; i < (size_t)(bytes + 7) / 8 && i < 128; i++) count += __builtin_popcountll(mask[i]);
    return count;
}

/* Names the calling thread (what /proc/PID/task/TID/comm and profilers show; 15 characters kept). */
static inline void ccurl_name_current_thread(const char *name) {
    (void)prctl(PR_SET_NAME, name, 0, 0, 0);
}

/*
 * ccurl_set_default_thread_stack sets the stack size of threads created from now on without one of
 * their own (the concurrency runtime's, the curl loops'); glibc's default is the soft RLIMIT_STACK.
 * Returns 0 when it took effect.
 *
 * Under an address-space limit (RLIMIT_AS, `ulimit -v`), reservations count as much as memory
 * used: every thread's stack (RLIMIT_STACK, 8 MiB by default) and every glibc malloc arena
 * (64 MiB each, one per thread that allocates, up to 8 per core). A thread the concurrency
 * runtime cannot create makes it retry forever, and an allocation that fails ends a Swift
 * program. So this sets the default stack size of threads created from now on (the runtime's
 * and the curl loops', which set none of their own) and caps the arenas. Both through dlsym:
 * pthread_setattr_default_np needs _GNU_SOURCE, and mallopt's header is glibc's. Returns 0 when
 * both took effect.
 */
static inline int ccurl_set_default_thread_stack(size_t stack_bytes) {
    typedef int (*set_default_fn)(const pthread_attr_t *);
    set_default_fn set_default = (set_default_fn)dlsym(RTLD_DEFAULT, "pthread_setattr_default_np");
    pthread_attr_t attr;
    int failed = 0;
    if (set_default != NULL && pthread_attr_init(&attr) == 0) {
        if (pthread_attr_setstacksize(&attr, stack_bytes) != 0 || set_default(&attr) != 0) failed = 1;
        (void)pthread_attr_destroy(&attr);
    } else {
        failed = 1;
    }
    return failed ? -1 : 0;
}

static inline int ccurl_fit_address_space(size_t stack_bytes, int arenas) {
    typedef int (*mallopt_fn)(int, int);
    int failed = ccurl_set_default_thread_stack(stack_bytes) != 0;
    mallopt_fn set_option = (mallopt_fn)dlsym(RTLD_DEFAULT, "mallopt");
    /* M_ARENA_MAX is -8 in glibc's malloc.h; mallopt returns 1 on success. */
    if (set_option == NULL || set_option(-8, arenas) != 1) failed = 1;
    return failed ? -1 : 0;
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

/* MARK: - curl's socket interface over epoll (one per loop thread) */

/*
 * The state a loop shares with libcurl's socket and timer callbacks (CURLMOPT_SOCKETFUNCTION,
 * CURLMOPT_TIMERFUNCTION): the epoll set of the sockets curl wants watched, an eventfd other
 * threads write to wake the loop, and when curl's timer is due. The callbacks run inside
 * curl_multi_socket_action and curl_multi_add_handle on the loop thread; only
 * ccurl_events_wake is called from other threads.
 */
#define CCURL_EVENTS_FAILED_MAX 32
typedef struct ccurl_events {
    CURLM *multi;
    int epoll_fd;
    int wake_fd;
    /* CLOCK_MONOTONIC nanoseconds at which curl's timer expires; -1: no timer. */
    int64_t deadline_ns;
    /* The deadline the loop last ran curl's timer for (ccurl_events_timer_due): while curl has
     * not set another, the loop waits at least 1 ms between runs instead of spinning (curl rounds
     * its timeout to whole milliseconds, so its timer may expire a moment after ours). */
    int64_t fired_ns;
    /* Transfers whose socket could not be added to the epoll set (epoll_ctl failed: ENOMEM, or
     * ENOSPC past fs.epoll.max_user_watches), with the errno; the loop fails them. */
    int failed_count;
    CURL *failed[CCURL_EVENTS_FAILED_MAX];
    int failed_errno;
} ccurl_events;

static inline int64_t ccurl_monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* A socket's new wants: watched for reading and/or writing (level-triggered), or no longer. */
static int ccurl_events_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
    ccurl_events *events = (ccurl_events *)userp;
    if (what == CURL_POLL_REMOVE) {
        (void)epoll_ctl(events->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
        return 0;
    }
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0);
    event.data.fd = fd;
    /* socketp is set (curl_multi_assign) once the socket is in the set. */
    int op = socketp != NULL ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    int result = epoll_ctl(events->epoll_fd, op, fd, &event);
    if (result != 0 && op == EPOLL_CTL_ADD && errno == EEXIST) {
        result = epoll_ctl(events->epoll_fd, EPOLL_CTL_MOD, fd, &event);
    } else if (result != 0 && op == EPOLL_CTL_MOD && errno == ENOENT) {
        result = epoll_ctl(events->epoll_fd, EPOLL_CTL_ADD, fd, &event);
    }
    if (result != 0) {
        if (events->failed_count < CCURL_EVENTS_FAILED_MAX) {
            events->failed[events->failed_count] = easy;
        }
        events->failed_count += 1;
        events->failed_errno = errno;
        return 0;
    }
    if (socketp == NULL) {
        (void)curl_multi_assign(events->multi, fd, events);
    }
    return 0;
}

/* curl's one timer: due in timeout_ms (0: at once), or cancelled (-1). */
static int ccurl_events_timer(CURLM *multi, long timeout_ms, void *userp) {
    (void)multi;
    ccurl_events *events = (ccurl_events *)userp;
    events->deadline_ns = timeout_ms < 0 ? -1 : ccurl_monotonic_ns() + (int64_t)timeout_ms * 1000000;
    return 0;
}

/*
 * Makes the epoll set and the wake-up eventfd and installs the callbacks on multi. Returns NULL
 * (errno set) when a descriptor or the memory could not be had.
 */
static inline ccurl_events *ccurl_events_create(CURLM *multi) {
    ccurl_events *events = (ccurl_events *)calloc(1, sizeof(ccurl_events));
    if (events == NULL) {
        return NULL;
    }
    events->multi = multi;
    events->deadline_ns = -1;
    events->fired_ns = -1;
    events->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    events->wake_fd = events->epoll_fd < 0 ? -1 : eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = EPOLLIN;
    event.data.fd = events->wake_fd;
    if (events->wake_fd < 0 || epoll_ctl(events->epoll_fd, EPOLL_CTL_ADD, events->wake_fd, &event) != 0) {
        int saved = errno;
        if (events->wake_fd >= 0) close(events->wake_fd);
        if (events->epoll_fd >= 0) close(events->epoll_fd);
        free(events);
        errno = saved;
        return NULL;
    }
    (void)curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, ccurl_events_socket);
    (void)curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, events);
    (void)curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, ccurl_events_timer);
    (void)curl_multi_setopt(multi, CURLMOPT_TIMERDATA, events);
    return events;
}

/* The eventfd other threads write to (ccurl_events_wake). */
static inline int ccurl_events_wake_fd(const ccurl_events *events) {
    return events->wake_fd;
}

/* Wakes the loop sleeping in ccurl_events_wait on the set whose wake-up eventfd is wake_fd. */
static inline void ccurl_events_wake(int wake_fd) {
    uint64_t one = 1;
    ssize_t written;
    do {
        written = write(wake_fd, &one, sizeof one);
    } while (written < 0 && errno == EINTR);
    /* EAGAIN: the counter is full, so the loop is woken anyway. */
}

/*
 * Sleeps until a watched socket is ready, curl's timer is due, the loop is woken, or cap_ms
 * passes. Writes up to max ready sockets into sockets and their CURL_CSELECT_* masks into masks
 * (a wake-up only empties the eventfd). Returns how many sockets, or -1 (errno set) when
 * epoll_wait failed (an interrupted wait returns 0).
 */
static inline int ccurl_events_wait(ccurl_events *events, int cap_ms, int *sockets, int *masks, int max) {
    enum { batch = 256 };
    struct epoll_event ready[batch];
    int timeout = cap_ms;
    if (events->deadline_ns >= 0) {
        int64_t left = events->deadline_ns - ccurl_monotonic_ns();
        int64_t ms = left <= 0 ? 0 : (left + 999999) / 1000000;
        if (ms == 0 && events->fired_ns == events->deadline_ns) {
            ms = 1;
        }
        if (ms < timeout) {
            timeout = (int)ms;
        }
    }
    int count = epoll_wait(events->epoll_fd, ready, max < batch ? max : batch, timeout);
    if (count < 0) {
        return errno == EINTR ? 0 : -1;
    }
    int kept = 0;
    for (int i = 0; i < count; i++) {
        if (ready[i].data.fd == events->wake_fd) {
            uint64_t value;
            (void)read(events->wake_fd, &value, sizeof value);
            continue;
        }
        uint32_t flags = ready[i].events;
        sockets[kept] = ready[i].data.fd;
        masks[kept] = ((flags & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) ? CURL_CSELECT_IN : 0)
            | ((flags & EPOLLOUT) ? CURL_CSELECT_OUT : 0) | ((flags & EPOLLERR) ? CURL_CSELECT_ERR : 0);
        kept += 1;
    }
    return kept;
}

/* Whether curl's timer is due (the caller then runs curl_multi_socket_action with
 * CURL_SOCKET_TIMEOUT, and curl sets its next timer, or cancels it, through the callback). */
static inline int ccurl_events_timer_due(ccurl_events *events) {
    if (events->deadline_ns < 0 || events->deadline_ns > ccurl_monotonic_ns()) {
        return 0;
    }
    events->fired_ns = events->deadline_ns;
    return 1;
}

/* Transfers whose socket could not be watched since the last call: copies up to max into
 * handles, returns how many there were (more than max: the rest are lost to the count), and the
 * errno into error. */
static inline int ccurl_events_take_failed(ccurl_events *events, CURL **handles, int max, int *error) {
    int count = events->failed_count;
    int copied = count < CCURL_EVENTS_FAILED_MAX ? count : CCURL_EVENTS_FAILED_MAX;
    for (int i = 0; i < copied && i < max; i++) {
        handles[i] = events->failed[i];
    }
    *error = events->failed_errno;
    events->failed_count = 0;
    return count;
}

/* Closes the epoll set and the eventfd and frees the state (after curl_multi_cleanup). */
static inline void ccurl_events_destroy(ccurl_events *events) {
    close(events->wake_fd);
    close(events->epoll_fd);
    free(events);
}

#endif
