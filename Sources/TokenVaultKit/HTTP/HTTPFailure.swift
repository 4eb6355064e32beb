import FoundationEssentials

/// Why an exchange brought no response, as a type: whether the request may
/// have reached the server decides whether it can be sent elsewhere (docs/design.md).
public struct HTTPFailure: Error, Sendable {
    public enum Kind: Sendable, Equatable {
        /// Refused, unresolvable: nothing was sent.
        case unreachable
        /// The host's name resolved, but nothing took the connection.
        case refused
        /// No answer in time: the request may have been applied.
        case timedOut(milliseconds: Int)
        /// A certificate was refused: nothing was sent.
        case tls
        /// The answer was larger than allowed.
        case tooLarge(limit: Int)
        /// libcurl cannot be loaded: nothing was sent, and retrying will not help.
        case noLibrary
        /// The exchange broke off: the request may have been applied.
        case failed
        /// The receiver of a streamed body stopped it.
        case stopped
        /// The proxy could not be reached: nothing was sent to the server.
        case proxyUnreachable
        /// The proxy refused to take the request on (407: it wants
        /// credentials): nothing was sent to the server.
        case proxyRefused(status: Int)
    }

    public var kind: Kind
    /// libcurl's words (a proxy's credentials never in them).
    public var detail: String
    /// The proxy the exchange went through, if any.
    public var proxy: Proxy?

    public init(kind: Kind, detail: String, proxy: Proxy? = nil) {
        (self.kind, self.detail, self.proxy) = (kind, detail, proxy)
    }

    /// False when the server cannot have seen the request.
    public var maybeSent: Bool {
        switch kind {
        case .unreachable, .refused, .tls, .noLibrary, .proxyUnreachable, .proxyRefused: false
        case .timedOut, .tooLarge, .failed, .stopped: true
        }
    }

    /// The error a user of `peer` sees: 75 for what may pass, 65 for an
    /// oversized answer, 69 when libcurl is missing (`what`: "a provider",
    /// "etcd", for its message).
    public func error(peer: String, what: String) -> TokenVaultError {
        switch kind {
        case .timedOut(let ms):
            let seconds = ms % 1000 == 0 ? "\(ms / 1000) s" : "\(ms) ms"
            return .temporary("\(peer) did not answer within \(seconds)")
        case .unreachable:
            return .temporary("cannot reach \(peer): \(detail)")
        case .refused:
            // Most often a wrong port or host in a config: say where to look, not only "later".
            return .temporary(
                "cannot reach \(peer): \(detail)",
                hint:
                    "nothing was changed; if \(peer) comes from your config, check its host and port (tokenvault doctor --network checks every provider's), else try again later"
            )
        case .tooLarge(let limit):
            return .badInput("\(peer) sent a response larger than \(limit >> 20) MiB; refused")
        case .noLibrary:
            // Not a network failure: retrying will not help (69, not 75).
            return .backendUnavailable(
                "libcurl cannot be loaded, so \(what) cannot be reached: \(detail)",
                hint: "install libcurl (Debian: apt-get install libcurl4)")
        case .tls, .failed:
            return .temporary("the exchange with \(peer) failed: \(detail)")
        case .stopped:
            return .badInput("the answer of \(peer) was refused while it arrived")
        case .proxyUnreachable:
            let p = proxy.map { "the proxy \($0.shown) (\($0.variable))" } ?? "the proxy"
            return .temporary(
                "cannot reach \(p) on the way to \(peer): \(detail)",
                hint:
                    "nothing was sent to \(peer); start the proxy or fix \(proxy?.variable ?? "the proxy variable"), or set no_proxy for \(peer) to reach it directly"
            )
        case .proxyRefused(let status):
            let p = proxy.map { "the proxy \($0.shown) (\($0.variable))" } ?? "the proxy"
            let why = status == 407 ? ": it wants credentials, or took none of the ones given" : ""
            return .config(
                "\(p) refused to take the request to \(peer) on (HTTP \(status)\(why)); nothing was sent to \(peer)",
                hint:
                    "set the proxy's user name and password in \(proxy?.variable ?? "the proxy variable") (http://USER:PASSWORD@HOST:PORT, percent-encoded), or ask its administrator"
            )
        }
    }
}
