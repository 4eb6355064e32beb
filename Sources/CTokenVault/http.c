/* The glue between Swift and libcurl (CurlTransport), loaded on first use
 * through the shared loader; Swift sees only the tv_* functions of tv_http.h. */
#include "tv_http.h"
#include "loader.h"
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

_Static_assert(CURL_ERROR_SIZE == sizeof(((tv_http_response *)0)->error), "the error buffer is CURL_ERROR_SIZE");

#define TV_CURL_FUNCS(X) \
    X(curl_global_init) X(curl_easy_init) X(curl_easy_setopt) X(curl_easy_perform) \
    X(curl_easy_getinfo) X(curl_easy_cleanup) X(curl_easy_strerror) \
    X(curl_slist_append) X(curl_slist_free_all)

TV_DL_API(tv_curl_api, TV_CURL_FUNCS, "libcurl.so.4", tv_curl_load)
static int global_ok;

static void tv_curl_global_init(void) { global_ok = api.curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK; }

/* The loaded and initialised API, or NULL. */
static const tv_curl_api *tv_curl(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (!tv_curl_load()) return NULL;
    pthread_once(&once, tv_curl_global_init);
    return global_ok ? &api : NULL;
}

/* What the callbacks of one transfer share. */
typedef struct {
    const tv_curl_api *api;
    CURL *handle;
    const tv_http_options *options;
    tv_http_response *out;
} tv_http_transfer;

static size_t tv_http_collect(char *data, size_t size, size_t n, void *userdata) {
    tv_http_transfer *t = userdata;
    tv_http_response *r = t->out;
    size_t len = size * n;
    if (t->options->sink) {
        long status = 0;
        char *ct = NULL;
        t->api->curl_easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &status);
        t->api->curl_easy_getinfo(t->handle, CURLINFO_CONTENT_TYPE, &ct);
        if (t->options->sink(t->options->sink_context, status, ct, r->headers, (const unsigned char *)data, len))
            return len;
        r->stopped = 1;
        return 0;
    }
    if (r->body_len + len > r->max_body) { r->too_large = 1; return 0; }
    unsigned char *grown = realloc(r->body, r->body_len + len + 1);
    if (grown == NULL) return 0;
    r->body = grown;
    memcpy(r->body + r->body_len, data, len);
    r->body_len += len;
    return len;
}

/* Stops the transfer once its cancel flag is set (called about once a
   second while nothing arrives, and as bytes arrive). */
static int tv_http_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                            curl_off_t ulnow) {
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    tv_http_transfer *t = userdata;
    if (t->options->cancel == NULL || *t->options->cancel == 0) return 0;
    t->out->stopped = 1;
    return 1;
}

/* Keeps the final response's header lines (at most 64 KiB), and the Date
   header apart (for `doctor --network`'s clock check). */
static size_t tv_http_header(char *line, size_t size, size_t count, void *userdata) {
    tv_http_response *out = userdata;
    size_t n = size * count;
    if (n >= 5 && strncmp(line, "HTTP/", 5) == 0) out->headers_len = 0;  /* an interim response's lines are dropped */
    else if (out->headers_len + n <= 65536) {
        char *grown = realloc(out->headers, out->headers_len + n + 1);
        if (grown == NULL) return 0;
        out->headers = grown;
        memcpy(out->headers + out->headers_len, line, n);
        out->headers_len += n;
        out->headers[out->headers_len] = 0;
    }
    if (n > 5 && strncasecmp(line, "date:", 5) == 0) {
        size_t start = 5, end = n;
        while (start < end && (line[start] == ' ' || line[start] == '\t')) start++;
        while (end > start && (line[end - 1] == '\r' || line[end - 1] == '\n' || line[end - 1] == ' ')) end--;
        size_t len = end - start < sizeof out->date - 1 ? end - start : sizeof out->date - 1;
        memcpy(out->date, line + start, len);
        out->date[len] = 0;
    }
    return n;
}

/* One request. `headers` is a NULL-terminated list of "Name: value" lines.
   Redirects are not followed; TLS peers and host names are always verified. */
int tv_http_request(const char *method, const char *url, const char *const *headers,
                    const char *body, size_t body_len, const tv_http_options *o, tv_http_response *out) {
    memset(out, 0, sizeof *out);
    out->max_body = o->max_body;
    const tv_curl_api *c = tv_curl();
    if (c == NULL) {
        snprintf(out->error, sizeof out->error, "%s", library.error[0] ? library.error : "libcurl.so.4 cannot be loaded");
        return TV_HTTP_NO_LIBRARY;
    }
    CURL *h = c->curl_easy_init();
    if (h == NULL) return TV_HTTP_FAILED;
    struct curl_slist *list = NULL;
    for (; headers && *headers; headers++) list = c->curl_slist_append(list, *headers);
    c->curl_easy_setopt(h, CURLOPT_URL, url);
    c->curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    c->curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    c->curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, o->timeout_ms);
    if (o->idle_timeout_s > 0) {
        c->curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        c->curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, o->idle_timeout_s);
    }
    c->curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms > 0 ? o->connect_timeout_ms : o->timeout_ms);
    c->curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    c->curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    /* curl copies a blob (CURL_BLOB_COPY) and wipes nothing: the caller wipes its own. */
    struct curl_blob ca = {(void *)o->ca_blob, o->ca_blob_len, CURL_BLOB_COPY};
    struct curl_blob cert = {(void *)o->cert_blob, o->cert_blob_len, CURL_BLOB_COPY};
    struct curl_blob key = {(void *)o->key_blob, o->key_blob_len, CURL_BLOB_COPY};
    if (o->ca_blob) c->curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca);
    else if (o->ca_file) c->curl_easy_setopt(h, CURLOPT_CAINFO, o->ca_file);
    if (o->cert_blob) c->curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
    else if (o->cert_file) c->curl_easy_setopt(h, CURLOPT_SSLCERT, o->cert_file);
    if (o->key_blob) c->curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
    else if (o->key_file) c->curl_easy_setopt(h, CURLOPT_SSLKEY, o->key_file);
    c->curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    int proxied = 0;
    if (o->use_proxy) {
        proxied = o->proxy && o->proxy[0];
        c->curl_easy_setopt(h, CURLOPT_PROXY, proxied ? o->proxy : "");
        /* The run's no_proxy decided already: an empty list, so that libcurl
           never reads this process's own no_proxy for another's request. */
        c->curl_easy_setopt(h, CURLOPT_NOPROXY, "");
    }
    if (o->user_agent) c->curl_easy_setopt(h, CURLOPT_USERAGENT, o->user_agent);
    c->curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
    c->curl_easy_setopt(h, CURLOPT_ERRORBUFFER, out->error);
    tv_http_transfer transfer = {c, h, o, out};
    c->curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, tv_http_collect);
    c->curl_easy_setopt(h, CURLOPT_WRITEDATA, &transfer);
    if (o->cancel) {
        c->curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, tv_http_progress);
        c->curl_easy_setopt(h, CURLOPT_XFERINFODATA, &transfer);
        c->curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    }
    c->curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, tv_http_header);
    c->curl_easy_setopt(h, CURLOPT_HEADERDATA, out);
    if (strcmp(method, "GET") == 0) {
        c->curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else {
        c->curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        c->curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
        c->curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    }
    CURLcode rc = c->curl_easy_perform(h);
    if (proxied) {
        c->curl_easy_getinfo(h, CURLINFO_HTTP_CONNECTCODE, &out->connect_code);
        /* A plain-http request the proxy answered 407 and then cut (before it read the body). */
        long answered = 0;
        if (rc != CURLE_OK && out->connect_code == 0 && c->curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &answered) == CURLE_OK &&
            answered == 407)
            out->connect_code = 407;
    }
    if (rc == CURLE_OK) {
        char *ct = NULL;
        c->curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
        if (c->curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct) out->content_type = strdup(ct);
    } else if (out->error[0] == 0) {
        strncpy(out->error, c->curl_easy_strerror(rc), sizeof out->error - 1);
    }
    c->curl_slist_free_all(list);
    c->curl_easy_cleanup(h);
    if (rc == CURLE_OK) return TV_HTTP_OK;
    if (out->stopped) return TV_HTTP_STOPPED;
    if (out->too_large) return TV_HTTP_TOO_LARGE;
    if (proxied && (rc == CURLE_COULDNT_RESOLVE_PROXY || rc == CURLE_COULDNT_CONNECT)) return TV_HTTP_PROXY_UNREACHABLE;
    if (proxied && out->connect_code >= 300) return TV_HTTP_PROXY_REFUSED;
    if (rc == CURLE_OPERATION_TIMEDOUT) return TV_HTTP_TIMEOUT;
    if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE || rc == CURLE_SSL_CERTPROBLEM ||
        rc == CURLE_SSL_ISSUER_ERROR)
        return TV_HTTP_TLS;
    if (rc == CURLE_COULDNT_CONNECT) return TV_HTTP_REFUSED;
    if (rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY) return TV_HTTP_UNREACHABLE;
    return TV_HTTP_FAILED;
}

void tv_http_response_free(tv_http_response *r) {
    free(r->content_type);
    free(r->headers);
    r->headers = NULL;
    if (r->body) { memset(r->body, 0, r->body_len); free(r->body); }
    r->content_type = NULL;
    r->body = NULL;
}
