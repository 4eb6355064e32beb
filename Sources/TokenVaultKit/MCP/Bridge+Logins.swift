import Dispatch
import FoundationEssentials
import Glibc

/// What a server's refusal of a message leads to (docs/adapters.md, "MCP
/// servers"): a renewal, more scopes after a 403, a new login after a
/// renewed token's 401; at most one of each per message (the logins, per
/// bridge), and the logins only where a person can answer.
extension MCPBridge {
    /// What was done to get a refused message through: each once.
    struct Attempt {
        var renewed = false, steppedUp = false, loggedIn = false, nonced = false, renegotiated = false
        /// The session the last try carried, and the era's headers for the next try after a new one was set up.
        var session: String?
        var eraHeaders: [String]?
    }

    /// A refusal: the token to send the message again with (a 401 renews
    /// once, then logs in once; a 403 for scopes logs in for them once per
    /// bridge), or nil when the message's error was written.
    func retry(
        after response: HTTPResponse, token: PresentedToken, attempt: inout Attempt, request: JSONValue?,
        errorBody: [UInt8],
        exchange: any MCPExchange
    ) -> PresentedToken? {
        // A resource that wants its nonce in the proof (RFC 9449 §9): the same token, once more.
        if DPoPNonces.asksForNonce(response), !attempt.nonced, token.key != nil,
            nonces.kept(from: response, origin: origin) != nil
        {
            attempt.nonced = true
            return token
        }
        // A server that forgot the session (404): a new one with the client's own initialize, and the
        // same message once more (docs/adapters.md, "MCP servers").
        if response.status == 404, !attempt.renegotiated {
            attempt.renegotiated = true
            if let headers = exchange.renegotiated(after: attempt.session, token: token, on: self) {
                attempt.eraHeaders = headers
                return token
            }
        }
        switch response.status {
        case 401 where !attempt.renewed:
            attempt.renewed = true
            do { return try tokens.renewed(after: token) } catch {
                fail(request, error, code: .authorization)
                return nil
            }
        case 401 where !attempt.loggedIn:
            attempt.loggedIn = true
            return logInAgain(request)
        case 403 where attempt.steppedUp:
            fail(request, "\(shown) still refuses the request (HTTP 403) after a login for more scopes", code: .scope)
            return nil
        case 403 where !state.once(\.steppedUp):
            // One login for more scopes per bridge: a server that asks again gets its error.
            fail(request, refusal(of: response, after: "a login for more scopes already ran"), code: .scope)
            return nil
        case 403:
            attempt.steppedUp = true
            return stepUp(response, request: request)
        default:
            if exchange.answered(refusal: response, body: errorBody, request: request, on: self) { return nil }
            let why = OutsideText.line(String(decoding: errorBody.prefix(300), as: UTF8.self), limit: 200)
            fail(request, "\(shown) answered HTTP \(response.status)\(why.isEmpty ? "" : ": \(why)")")
            return nil
        }
    }

    /// A renewed token refused too (401): the grant no longer works here —
    /// the resource may name another authorization server now. A login where
    /// one can run, at most one per bridge, and the token to send again; else
    /// the error (nil).
    func logInAgain(_ request: JSONValue?) -> PresentedToken? {
        let refused =
            "\(shown) refuses the renewed token (HTTP 401); log in again: tokenvault login \(ShellWord.word(url))"
        guard state.once(\.loggedInAgain) else {
            fail(request, refused, code: .authorization)
            return nil
        }
        return login([], request: request, code: .authorization, otherwise: refused)
    }

    /// A login through the host, then the token to send again; nil when none
    /// could run (`otherwise` is the message's error) or it failed (its error).
    private func login(
        _ scopes: [String], request: JSONValue?, code: ErrorCode, otherwise: String
    ) -> PresentedToken? {
        do {
            guard try tokens.stepUp(scopes) else {
                fail(request, otherwise, code: code)
                return nil
            }
            return try tokens.token()
        } catch {
            fail(request, error, code: code)
            return nil
        }
    }

    /// What a 403 says, with the login that gives the scopes it names.
    func refusal(of response: HTTPResponse, after: String) -> String {
        let challenge = response.header("WWW-Authenticate").flatMap(AuthChallenge.tokenChallenge)
        guard challenge?.parameters["error"] == "insufficient_scope" else {
            return "\(shown) refused the request (HTTP 403)"
        }
        let scopes = (challenge?.parameters["scope"] ?? "").split(separator: " ").map(String.init)
        let login =
            "tokenvault login \(ShellWord.word(url))"
            + (scopes.isEmpty
                ? "" : " --scope \(ShellWord.word(OutsideText.line(scopes.joined(separator: " "), limit: 200)))")
        return "\(shown) asks for more scopes again (\(after)); log in with them: \(login)"
    }

    /// A 403: with `insufficient_scope`, a login for more scopes where one
    /// can run, and the token to send again; else the error (nil).
    func stepUp(_ response: HTTPResponse, request: JSONValue?) -> PresentedToken? {
        let challenge = response.header("WWW-Authenticate").flatMap(AuthChallenge.tokenChallenge)
        guard challenge?.parameters["error"] == "insufficient_scope" else {
            fail(request, "\(shown) refused the request (HTTP 403)", code: .authorization)
            return nil
        }
        let scopes = (challenge?.parameters["scope"] ?? "").split(separator: " ").map(String.init)
        let asked =
            scopes.isEmpty
            ? challenge?.parameters["error_description"].map { "it says: \($0)" } ?? "it does not say which"
            : scopes.joined(separator: " ")
        let named =
            scopes.isEmpty
            ? "" : " --scope \(ShellWord.word(OutsideText.line(scopes.joined(separator: " "), limit: 200)))"
        return login(
            scopes, request: request, code: .scope,
            otherwise:
                "\(shown) asks for more scopes (\(OutsideText.line(asked, limit: 200))); log in with them: tokenvault login \(ShellWord.word(url))\(named)"
        )
    }
}
