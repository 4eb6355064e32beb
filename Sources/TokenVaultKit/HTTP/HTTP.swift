internal import CTokenVault
import Dispatch
import FoundationEssentials
import Glibc

/// One HTTP exchange with a provider.
public struct HTTPRequest: Sendable {
    public var method: String
    public var url: String
    public var headers: [String]
    public var body: Data

    /// A header line as libcurl must be given it: `Name: ` with an empty
    /// value means "remove this header" to libcurl, so it is `Name;`, which
    /// libcurl sends as `Name:` with nothing after (an empty tool argument at
    /// MCP 2026-07-28 is such a header).
    static func curlLine(_ line: String) -> String {
        guard let colon = line.firstIndex(of: ":"), line[line.index(after: colon)...].allSatisfy({ $0 == " " })
        else { return line }
        return line[..<colon] + ";"
    }

    public init(method: String = "POST", url: String, headers: [String] = [], body: Data = Data()) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// A form-encoded POST (RFC 6749 §4.1.3 and friends).
    public static func form(_ url: String, _ fields: [(String, String)], headers: [String] = []) -> HTTPRequest {
        HTTPRequest(
            url: url,
            headers: ["Content-Type: application/x-www-form-urlencoded", "Accept: application/json"] + headers,
            body: Data(FormEncoding.encode(fields).utf8))
    }
}

public struct HTTPResponse: Sendable {
    public var status: Int
    public var contentType: String?
    public var body: Data
    /// The `Date` header, as sent (for the clock check of `doctor --network`).
    public var date: String?
    /// The response's header lines, names in lower case, in the order sent.
    public var headers: [(name: String, value: String)] = []

    /// The first value of header `name` (any case); nil when absent.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name == wanted }?.value
    }

    /// "Name: value" lines as libcurl hands them over, CR LF ended.
    static func parseHeaders(_ text: String) -> [(name: String, value: String)] {
        text.split(whereSeparator: { $0 == "\r" || $0 == "\n" || $0 == "\r\n" }).compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (line[..<colon].trimmedSpaces().lowercased(), line[line.index(after: colon)...].trimmedSpaces())
        }
    }

    /// The `Date` header as unix seconds (RFC 9110's IMF-fixdate); nil when absent or unreadable.
    public var dateSeconds: Int64? {
        // "Sun, 06 Nov 1994 08:49:37 GMT"
        let parts = (date ?? "").split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard parts.count == 6, parts[5] == "GMT", let day = Int32(parts[1]),
            let month = months.firstIndex(of: String(parts[2])),
            let year = Int32(parts[3]), (1970...9999).contains(year), (1...31).contains(day)
        else { return nil }
        let clock = parts[4].split(separator: ":").compactMap { Int32($0) }
        guard clock.count == 3, (0...23).contains(clock[0]), (0...59).contains(clock[1]), (0...60).contains(clock[2])
        else { return nil }
        var t = tm()
        t.tm_year = year - 1900
        t.tm_mon = Int32(month)
        t.tm_mday = day
        (t.tm_hour, t.tm_min, t.tm_sec) = (clock[0], clock[1], clock[2])
        return Int64(timegm(&t))
    }

    public init(status: Int, contentType: String? = nil, body: Data) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }
}

/// Sends requests: libcurl in the product, a double in unit tests.
public protocol HTTPTransport: Sendable {
    func send(_ request: HTTPRequest) throws -> HTTPResponse
    /// Throws the error a request would meet when `url`'s server takes no
    /// connection at all; sends nothing (`Reachability.swift`).
    func checkConnects(to url: String) throws
}

/// A transport that also hands a body over as it arrives (the MCP bridge's
/// answers and streams): libcurl's (`CurlTransport.stream`), or a script's in
/// the tests. See `CurlTransport.stream` for what each argument means.
public protocol HTTPStreamingTransport: HTTPTransport {
    func stream(
        _ request: HTTPRequest, idleSeconds: Int, cancel: Cancellation?, headers: ((HTTPResponse) -> Void)?,
        receive: @escaping (_ status: Int, _ contentType: String?, _ bytes: UnsafeRawBufferPointer) -> Bool
    ) throws -> HTTPResponse
}

extension HTTPStreamingTransport {
    /// A stream without a cancellation or a look at the headers.
    func stream(
        _ request: HTTPRequest, idleSeconds: Int,
        receive: @escaping (_ status: Int, _ contentType: String?, _ bytes: UnsafeRawBufferPointer) -> Bool
    ) throws -> HTTPResponse {
        try stream(request, idleSeconds: idleSeconds, cancel: nil, headers: nil, receive: receive)
    }
}

/// libcurl, opened on first use. Every exchange is bounded by `timeout`; a body
/// over `maxBody` is refused; TLS is always verified; no redirect is followed.
public struct CurlTransport: HTTPTransport {
    public var timeout: Int
    public var maxBody: Int
    /// The proxies of the run's settings (docs/config.md, "Behind a proxy");
    /// nil: libcurl reads this process's own variables.
    public var proxies: ProxySettings?

    public static let userAgent = "tokenvault/0.1 (+https://github.com/tokenvault)"

    public init(timeout: Int = 30, maxBody: Int = maxTokenInputBytes, proxies: ProxySettings? = nil) {
        self.timeout = timeout
        self.maxBody = maxBody
        self.proxies = proxies
    }

    /// One exchange with a provider; a failure is worded for a provider's user (75, 65, 69).
    public func send(_ request: HTTPRequest) throws -> HTTPResponse {
        let host = (try? ServiceKey(parsing: request.url).description) ?? "the provider"
        do {
            return try CurlTransport.exchange(
                request, timeoutMilliseconds: timeout * 1000, maxBody: maxBody, proxies: proxies)
        } catch let failure as HTTPFailure {
            throw failure.error(peer: host, what: "a provider")
        }
    }

    /// TLS files for one exchange (etcd's CA and client certificate): their
    /// names, for messages, and what they held when they were read and
    /// checked (`TrustedFile`), which is what libcurl is given.
    public struct TLSFiles: Sendable, Equatable {
        public var caFile: String?
        public var certFile: String?
        public var keyFile: String?
        public var ca: [UInt8]?
        public var cert: [UInt8]?
        public var key: [UInt8]?

        public init(caFile: String? = nil, certFile: String? = nil, keyFile: String? = nil) {
            self.caFile = caFile
            self.certFile = certFile
            self.keyFile = keyFile
        }

        /// Names what the files held (for a connection kept per settings).
        var fingerprint: String {
            Hex.encode(Sodium.hash((ca ?? []) + [0] + (cert ?? []) + [0] + (key ?? []), bytes: 16))
        }
    }

    /// One exchange through libcurl, or the `HTTPFailure` that says why there
    /// is no response. `connectMilliseconds` bounds connecting alone, so a dead
    /// endpoint is left quickly for the next.
    static func exchange(
        _ request: HTTPRequest, timeoutMilliseconds: Int, connectMilliseconds: Int = 0,
        maxBody: Int, tls: TLSFiles = TLSFiles(), proxies: ProxySettings? = nil
    ) throws -> HTTPResponse {
        try transfer(
            request, timeoutMilliseconds: timeoutMilliseconds, connectMilliseconds: connectMilliseconds,
            maxBody: maxBody, tls: tls, proxies: proxies)
    }

    /// The one call into libcurl: the whole body into the response, or with
    /// `sink`, each piece of it to the sink as it arrives.
    static func transfer(
        _ request: HTTPRequest, timeoutMilliseconds: Int, connectMilliseconds: Int = 0,
        maxBody: Int, tls: TLSFiles = TLSFiles(), idleSeconds: Int = 0, sink: BodySink? = nil,
        cancel: Cancellation? = nil, proxies: ProxySettings? = nil
    ) throws -> HTTPResponse {
        // The proxy, checked before anything is sent (its URL is never shown).
        let proxy = try proxies?.proxy(for: request.url)
        let proxyURL = proxy.map { strdup($0.url) } ?? nil
        defer { free(proxyURL) }
        var response = tv_http_response()
        let headers = request.headers.map { strdup(HTTPRequest.curlLine($0)) } + [nil]
        let files = [tls.caFile, tls.certFile, tls.keyFile].map { $0.map { strdup($0) } ?? nil }
        let agent = strdup(CurlTransport.userAgent)
        defer {
            headers.forEach { free($0) }
            files.forEach { free($0) }
            free(agent)
        }
        var options = tv_http_options(
            timeout_ms: timeoutMilliseconds, connect_timeout_ms: connectMilliseconds, max_body: maxBody,
            user_agent: agent, ca_file: files[0], cert_file: files[1], key_file: files[2], ca_blob: nil,
            cert_blob: nil, key_blob: nil, ca_blob_len: 0, cert_blob_len: 0, key_blob_len: 0,
            sink: sink == nil ? nil : BodySink.deliver,
            sink_context: sink.map { Unmanaged.passUnretained($0).toOpaque() },
            idle_timeout_s: idleSeconds, cancel: cancel.map { UnsafePointer($0.flag) },
            use_proxy: proxies == nil ? 0 : 1,
            proxy: proxyURL.map { UnsafePointer($0) })
        let rc = (tls.ca ?? []).withUnsafeBufferPointer { ca in
            (tls.cert ?? []).withUnsafeBufferPointer { cert in
                (tls.key ?? []).withUnsafeBufferPointer { key in
                    if tls.ca != nil { (options.ca_blob, options.ca_blob_len) = (ca.baseAddress, ca.count) }
                    if tls.cert != nil { (options.cert_blob, options.cert_blob_len) = (cert.baseAddress, cert.count) }
                    if tls.key != nil { (options.key_blob, options.key_blob_len) = (key.baseAddress, key.count) }
                    return headers.map { UnsafePointer($0) }.withUnsafeBufferPointer { h in
                        request.body.withUnsafeBytes { b in
                            tv_http_request(
                                request.method, request.url, h.baseAddress,
                                b.baseAddress?.assumingMemoryBound(to: CChar.self), b.count, &options, &response)
                        }
                    }
                }
            }
        }
        defer { tv_http_response_free(&response) }
        withExtendedLifetime(sink) {}
        withExtendedLifetime(cancel) {}
        var detail = withUnsafeBytes(of: response.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if let proxy { detail = proxy.masked(detail) }
        let kind: HTTPFailure.Kind
        switch Int(rc) {
        case TV_HTTP_OK where proxy != nil && response.status == 407:
            kind = .proxyRefused(status: 407)
        case TV_HTTP_OK:
            let body = response.body.map { Data(bytes: $0, count: response.body_len) } ?? Data()
            var r = HTTPResponse(
                status: response.status, contentType: response.content_type.map { String(cString: $0) }, body: body)
            let date = withUnsafeBytes(of: response.date) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            r.date = date.isEmpty ? nil : OutsideText.line(date, limit: 64)
            r.headers = response.headers.map { HTTPResponse.parseHeaders(String(cString: $0)) } ?? []
            return r
        case TV_HTTP_TIMEOUT: kind = .timedOut(milliseconds: timeoutMilliseconds)
        case TV_HTTP_UNREACHABLE: kind = .unreachable
        case TV_HTTP_REFUSED: kind = .refused
        case TV_HTTP_TOO_LARGE: kind = .tooLarge(limit: maxBody)
        case TV_HTTP_NO_LIBRARY: kind = .noLibrary
        case TV_HTTP_TLS: kind = .tls
        case TV_HTTP_STOPPED: kind = .stopped
        case TV_HTTP_PROXY_UNREACHABLE: kind = .proxyUnreachable
        case TV_HTTP_PROXY_REFUSED: kind = .proxyRefused(status: Int(response.connect_code))
        default: kind = .failed
        }
        throw HTTPFailure(kind: kind, detail: detail, proxy: proxy)
    }
}

/// application/x-www-form-urlencoded, both ways, and URL percent-decoding.
public enum FormEncoding {
    /// `%XX` escapes decoded; nil when one is malformed or the result is not UTF-8.
    public static func percentDecoded(_ s: String) -> String? {
        var out: [UInt8] = []
        var bytes = Array(s.utf8)[...]
        while let b = bytes.popFirst() {
            guard b == UInt8(ascii: "%") else {
                out.append(b)
                continue
            }
            guard bytes.count >= 2, let v = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16) else {
                return nil
            }
            out.append(v)
            bytes = bytes.dropFirst(2)
        }
        return String(validating: out, as: UTF8.self)
    }

    static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)

    public static func percentEncode(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            if unreserved.contains(b) { out.unicodeScalars.append(UnicodeScalar(b)) } else { out += "%" + hex(b) }
        }
        return out
    }

    private static func hex(_ b: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(b >> 4)], digits[Int(b & 15)]])
    }

    public static func encode(_ fields: [(String, String)]) -> String {
        fields.map { percentEncode($0.0) + "=" + percentEncode($0.1) }.joined(separator: "&")
    }

    /// Decodes `a=1&b=x%20y`; `+` is a space. Nil when it is not form data.
    public static func decode(_ text: String) -> [(String, String)]? {
        var out: [(String, String)] = []
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, let k = unescape(parts[0]), let v = unescape(parts[1]), !k.isEmpty else {
                return nil
            }
            out.append((k, v))
        }
        return out.isEmpty ? nil : out
    }

    private static func unescape(_ s: Substring) -> String? {
        var bytes: [UInt8] = []
        var i = s.utf8.startIndex
        let u = s.utf8
        while i < u.endIndex {
            let c = u[i]
            if c == UInt8(ascii: "+") {
                bytes.append(0x20)
            } else if c == UInt8(ascii: "%") {
                let h1 = u.index(after: i)
                guard h1 < u.endIndex, u.index(after: h1) < u.endIndex,
                    let v = UInt8(String(decoding: [u[h1], u[u.index(after: h1)]], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(v)
                i = u.index(after: h1)
            } else {
                bytes.append(c)
            }
            i = u.index(after: i)
        }
        return String(bytes: bytes, encoding: .utf8)
    }
}

/// What a confined client of the agent gets for a transport: every request
/// refused before anything is sent (docs/security.md, "Clients less trusted
/// than the agent").
struct RefusedTransport: HTTPTransport {
    let confinement: Confinement

    func send(_ request: HTTPRequest) throws -> HTTPResponse {
        throw confinement.refuse("send a request")
    }

    func checkConnects(to url: String) throws { throw confinement.refuse("send a request") }
}
