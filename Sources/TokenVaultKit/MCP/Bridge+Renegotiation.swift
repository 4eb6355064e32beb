import FoundationEssentials

/// A session the server forgot (docs/adapters.md, "MCP servers"): a restart,
/// a load balancer, an idle expiry answers 404 for a session id it no longer
/// knows. A stdio host cannot start a new session on its own, so the bridge
/// sets one up with the client's own `initialize` and carries on.
extension MCPBridge {
    /// The session id a response sets, when it is one a header can carry back
    /// as it is (1 to 1024 bytes of visible ASCII).
    static func sessionID(of response: HTTPResponse) -> String? {
        response.header("Mcp-Session-Id").flatMap { MCPRouting.isVisible($0, limit: 1024) ? $0 : nil }
    }

    /// The protocol version an `initialize` answer names, when a header can
    /// carry it as it is (at most 64 bytes of visible ASCII).
    static func protocolVersion(of answer: JSONValue?) -> String? {
        answer?["result"]?["protocolVersion"]?.string.flatMap {
            $0.utf8.count <= 64 && $0.utf8.allSatisfy { (0x21...0x7E).contains($0) } ? $0 : nil
        }
    }

    /// The session id a message's era headers carry.
    static func session(in headers: [String]) -> String? {
        headers.first { $0.hasPrefix("Mcp-Session-Id: ") }.map { String($0.dropFirst("Mcp-Session-Id: ".count)) }
    }

    /// After a 404 for `failed` (the session the refused message carried): a
    /// new session, set up once for every request that met the same 404, with
    /// the client's `initialize` (under an id of the bridge's own: its answer
    /// goes to nobody) and `notifications/initialized`; the headers of the new
    /// session for the message's second try. Nil when no session of the
    /// client's was known, or the new one could not be set up.
    func renegotiated(after failed: String?, token: PresentedToken) -> [String]? {
        guard let failed else { return nil }
        return handshake.renegotiation.withLock { count -> [String]? in
            let (current, kept, initialized) = handshake.state.withLock {
                ($0.sessionID, $0.initialize, $0.initialized)
            }
            // Another request met the same 404 and set one up already.
            if let current, current != failed { return handshake.headers }
            guard case .object(var initialize)? = kept else { return nil }
            count += 1
            initialize["id"] = .string("tokenvault-initialize-\(count)")
            handshake.state.withLock {
                $0.sessionID = nil
                $0.protocolVersion = nil
            }
            var body: [UInt8] = []
            guard
                var response = try? transport.stream(
                    post(Array(JSONValue.object(initialize).text.utf8), token: token, eraHeaders: []),
                    idleSeconds: idleSeconds,
                    receive: { _, _, bytes in
                        body += bytes
                        return body.count <= JSONRPC.maxLineBytes
                    }),
                (200..<300).contains(response.status), let session = MCPBridge.sessionID(of: response)
            else { return nil }
            response.body = Data(body)
            let version = MCPBridge.protocolVersion(of: MCPBridge.answer(in: response))
            handshake.state.withLock {
                $0.sessionID = session
                $0.protocolVersion = version
            }
            let notification = initialized ?? Array(#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.utf8)
            _ = try? transport.send(post(notification, token: token, eraHeaders: handshake.headers))
            tokens.say("\(shown) had forgotten the MCP session; a new one was set up with your initialize")
            startListening()
            return handshake.headers
        }
    }
}
