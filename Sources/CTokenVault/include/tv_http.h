/* HTTP for the OAuth exchanges through libcurl, loaded on first use: a `get`
 * of a valid token never maps libcurl and its TLS stack. */
#ifndef TV_HTTP_H
#define TV_HTTP_H
#include <stddef.h>

typedef struct {
    long status;
    char *content_type;     /* malloc'd, or NULL */
    unsigned char *body;    /* malloc'd, body_len bytes */
    size_t body_len;
    size_t max_body;
    int too_large;
    char error[256];         /* CURL_ERROR_SIZE */
    char date[64];           /* the Date header's value, or "" */
    char *headers;           /* malloc'd: the final response's header lines, "Name: value\r\n" each; or NULL */
    size_t headers_len;
    int stopped;             /* the sink asked to stop */
    long connect_code;       /* a proxy's answer to CONNECT, when there was one */
} tv_http_response;

enum {
    TV_HTTP_OK = 0,            /* a response arrived (any status) */
    TV_HTTP_TIMEOUT = 1,
    TV_HTTP_UNREACHABLE = 2,   /* the name did not resolve */
    TV_HTTP_TOO_LARGE = 3,
    TV_HTTP_FAILED = 4,        /* TLS and the rest: see error */
    TV_HTTP_NO_LIBRARY = 5,
    TV_HTTP_TLS = 6,           /* the peer's certificate, or ours, was refused */
    TV_HTTP_STOPPED = 7,       /* the sink asked to stop the transfer */
    TV_HTTP_REFUSED = 8,       /* the host resolved, but no connection could be made (refused, no route) */
    TV_HTTP_PROXY_UNREACHABLE = 9, /* the proxy's name did not resolve, or it took no connection */
    TV_HTTP_PROXY_REFUSED = 10,    /* the proxy answered CONNECT with an error (connect_code) */
};

/* Takes the body as it arrives, with the response's status, content type
   (NULL when none) and header lines (NULL when none); returns 0 to stop the
   transfer, anything else to go on. */
typedef int (*tv_http_sink)(void *context, long status, const char *content_type, const char *headers,
                            const unsigned char *data, size_t len);


/* How one request is made. Zero/NULL fields take the defaults. */
typedef struct {
    long timeout_ms;          /* the whole exchange */
    long connect_timeout_ms;  /* connecting alone (default: timeout_ms) */
    size_t max_body;
    const char *user_agent;
    const char *ca_file;      /* trust these CAs instead of the system's */
    const char *cert_file;    /* client certificate (PEM) */
    const char *key_file;     /* its key (PEM) */
    /* The same, as the bytes of those files, read (and checked) by the caller:
       used instead of the file names when set, so nothing is opened by name. */
    const unsigned char *ca_blob, *cert_blob, *key_blob;
    size_t ca_blob_len, cert_blob_len, key_blob_len;
    tv_http_sink sink;        /* when set, the body goes here instead of into the response */
    void *sink_context;
    long idle_timeout_s;      /* with timeout_ms 0: give up after this many seconds without a byte */
    const volatile int *cancel; /* when set and nonzero, the transfer stops within about a second */
    /* With use_proxy: `proxy` is the proxy for this request ("" or NULL: none),
       and libcurl's proxy variables of this process (no_proxy too) are not read. */
    int use_proxy;
    const char *proxy;
} tv_http_options;

/* One request. `headers` is a NULL-terminated list of "Name: value" lines.
   Redirects are not followed; TLS peers and host names are always verified. */
int tv_http_request(const char *method, const char *url, const char *const *headers,
                    const char *body, size_t body_len, const tv_http_options *options,
                    tv_http_response *out);
/* Frees (and wipes) what a request allocated. */
void tv_http_response_free(tv_http_response *r);

#endif
