internal import CTokenVault
import FoundationEssentials
import Glibc

/// Where a streamed body goes: the receiver of `CurlTransport.stream`, called
/// on the transfer's thread with each piece as it arrives.
final class BodySink {
    let receive: (_ status: Int, _ contentType: String?, _ bytes: UnsafeRawBufferPointer) -> Bool
    /// Told the response's header lines once, before the first piece of its body.
    let headers: ((HTTPResponse) -> Void)?
    private var told = false

    init(
        headers: ((HTTPResponse) -> Void)? = nil, _ receive: @escaping (Int, String?, UnsafeRawBufferPointer) -> Bool
    ) {
        self.headers = headers
        self.receive = receive
    }

    /// The C callback: the sink comes back from the context pointer.
    static let deliver: tv_http_sink = { context, status, contentType, headerLines, data, length in
        guard let context else { return 0 }
        let sink = Unmanaged<BodySink>.fromOpaque(context).takeUnretainedValue()
        if !sink.told, let tell = sink.headers {
            sink.told = true
            var response = HTTPResponse(
                status: Int(status), contentType: contentType.map { String(cString: $0) }, body: Data())
            response.headers = HTTPResponse.parseHeaders(headerLines.map { String(cString: $0) } ?? "")
            tell(response)
        }
        let type = contentType.map { String(cString: $0) }
        return sink.receive(Int(status), type, UnsafeRawBufferPointer(start: data, count: length)) ? 1 : 0
    }
}

extension CurlTransport: HTTPStreamingTransport {
    /// One exchange whose body is not kept but handed to `receive` as it
    /// arrives, with the status and content type (a Server-Sent Events
    /// stream that stays open). `receive` returns false to stop the transfer:
    /// the exchange then throws 65 (a caller that knows why may say so
    /// instead). Connecting is bounded by the transport's
    /// timeout; after that, the stream may last as long as it brings a byte
    /// every `idleSeconds`. The response has the status and headers, no body.
    /// With `headers`, the response's status and headers are told once, as
    /// soon as its body starts (a stream that stays open has them long before it ends).
    /// With `cancel`, the exchange stops (65) within about a second of its cancellation.
    public func stream(
        _ request: HTTPRequest, idleSeconds: Int, cancel: Cancellation? = nil, headers: ((HTTPResponse) -> Void)? = nil,
        receive: @escaping (_ status: Int, _ contentType: String?, _ bytes: UnsafeRawBufferPointer) -> Bool
    ) throws -> HTTPResponse {
        let host = (try? ServiceKey(parsing: request.url).description) ?? "the server"
        do {
            return try CurlTransport.transfer(
                request, timeoutMilliseconds: 0, connectMilliseconds: timeout * 1000, maxBody: maxBody,
                idleSeconds: max(idleSeconds, 1), sink: BodySink(headers: headers, receive), cancel: cancel,
                proxies: proxies)
        } catch let failure as HTTPFailure {
            if case .timedOut = failure.kind {
                throw TokenVaultError.temporary(
                    "\(host) sent nothing for \(max(idleSeconds, 1)) s; the stream was closed")
            }
            throw failure.error(peer: host, what: "a server")
        }
    }
}

/// A flag that stops a streamed exchange (`CurlTransport.stream`) from any
/// thread: libcurl looks at it about once a second and as bytes arrive.
public final class Cancellation: @unchecked Sendable {
    let flag = UnsafeMutablePointer<Int32>.allocate(capacity: 1)

    public init() { flag.initialize(to: 0) }
    deinit { flag.deallocate() }

    public func cancel() { flag.pointee = 1 }
    public var isCancelled: Bool { flag.pointee != 0 }
}
