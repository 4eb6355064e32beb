import Dispatch
import FoundationEssentials
import Glibc

/// The logins a server's refusal leads to (docs/adapters.md, "MCP servers"):
/// more scopes after a 403, a new login after a renewed token's 401; at most
/// one of each per bridge, and only where a person can answer.
extension MCPBridge {
    /// A renewed token refused too (401): the grant no longer works here —
    /// the resource may name another authorization server now. A login where
    /// one can run, at most one per bridge, and the token to send again; else
    /// the error (nil).
    func logInAgain(_ request: JSONValue?) -> String? {
        let first = state.once(\.loggedInAgain)
        do {
            guard first, try host.stepUp([]) else {
                fail(
                    request,
                    "\(shown) refuses the renewed token (HTTP 401); log in again: tokenvault login \(ShellWord.word(url))",
                    code: .authorization)
                return nil
            }
            return try host.token()
        } catch {
            fail(request, error, code: .authorization)
            return nil
        }
    }

    /// What a 403 says, with the login that gives the scopes it names.
    func refusal(of response: HTTPResponse, after: String) -> String {
        let challenge = response.header("WWW-Authenticate").flatMap(AuthChallenge.bearer)
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
    func stepUp(_ response: HTTPResponse, request: JSONValue?) -> String? {
        let challenge = response.header("WWW-Authenticate").flatMap(AuthChallenge.bearer)
        guard challenge?.parameters["error"] == "insufficient_scope" else {
            fail(request, "\(shown) refused the request (HTTP 403)", code: .authorization)
            return nil
        }
        let scopes = (challenge?.parameters["scope"] ?? "").split(separator: " ").map(String.init)
        let asked =
            scopes.isEmpty
            ? challenge?.parameters["error_description"].map { "it says: \($0)" } ?? "it does not say which"
            : scopes.joined(separator: " ")
        do {
            guard try host.stepUp(scopes) else {
                fail(
                    request,
                    "\(shown) asks for more scopes (\(OutsideText.line(asked, limit: 200))); log in with them: tokenvault login \(ShellWord.word(url))",
                    code: .scope)
                return nil
            }
            return try host.token()
        } catch {
            fail(request, error, code: .scope)
            return nil
        }
    }
}
