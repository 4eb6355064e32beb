import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension TokenVault {
    struct Header: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "header",
            abstract: "Print one HTTP header line that authorizes a request.",
            discussion: """
                Authorization: Bearer TOKEN, or the provider's header template from the \
                config (header = "x-auth-token: {token}"). For OAuth 1.0a every request is \
                signed (RFC 5849, HMAC-SHA1) for its method and URL, with a fresh nonce and \
                timestamp; --data reads a form-encoded body from stdin and signs it too.

                A DPoP-bound token (dpop = true) is printed with a proof for the method and URL \
                of the request, one header a line: Authorization: DPoP TOKEN, then DPoP: PROOF \
                (--nonce: the resource's DPoP-Nonce).

                  curl -H "$(tokenvault header api.twitter.com --url "$URL")" "$URL"
                  tokenvault header api.github.com | curl -H @- https://api.github.com/user
                  tokenvault header api.example.com --method GET --url "$URL" | curl -H @- "$URL"
                """)

        @OptionGroup var credential: CredentialOptions

        @Option(
            help: "The request's HTTP method (for signed OAuth 1.0a and DPoP requests).",
            completion: .list(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]))
        var method: String = "GET"

        @Option(help: "The request's URL (for signed OAuth 1.0a and DPoP requests).")
        var url: String?

        @Option(help: "The nonce the resource gave in DPoP-Nonce (DPoP requests).")
        var nonce: String?

        @Flag(help: "Read the request's form-encoded body from stdin and sign its parameters (OAuth 1.0a).")
        var data = false

        func run(in context: Session) throws {
            let c = try context.usable(try credential.id(in: context), minValid: nil)
            if let key = c.dpopKey {
                guard let url else {
                    throw TokenVaultError.usage(
                        "\(c.id) holds a DPoP-bound token: give the request's --url (and --method) to prove it")
                }
                guard MCPRouting.isToken(method) else {
                    throw TokenVaultError.usage(
                        "--method must be an HTTP method (GET, POST, …), not \(Quoted.text(method))")
                }
                guard OAuth2Provider.isSafeEndpoint(url) else {
                    throw TokenVaultError.usage("\(Quoted.text(url)) is not an https URL (http only for loopback)")
                }
                if let nonce, nonce.isEmpty || !nonce.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) {
                    throw TokenVaultError.usage("--nonce must be the DPoP-Nonce the resource sent: visible ASCII")
                }
                let token = PresentedToken(c.accessToken, key: try DPoPKey(pem: SecureBytes(Array(key.utf8))))
                let lines = try token.authorization(
                    method: method.uppercased(), url: url, nonce: nonce, now: context.clock.now)
                context.output.value(lines.joined(separator: "\n"))
                return
            }
            guard c.type == .oauth1 else {
                context.output.value(try HeaderLine.line(for: c, template: try context.headerTemplate(of: c)))
                return
            }
            guard let url else {
                throw TokenVaultError.usage(
                    "\(c.id) is an OAuth 1.0a credential: give the request's --url (and --method) to sign")
            }
            guard let name = c.provider else {
                throw TokenVaultError.config(
                    "\(c.id) is tied to no provider, so there is no consumer key to sign with",
                    hint: "store it again with: tokenvault set \(ShellWord.word(c.service.description)) --provider NAME"
                )
            }
            var form: [(String, String)] = []
            if data {
                let body = try StandardInput.read(prompt: "Form body: ")
                guard body.count <= maxTokenInputBytes, let text = String(data: body, encoding: .utf8) else {
                    throw TokenVaultError.badInput("the form body on stdin is not UTF-8 text of at most 1 MiB")
                }
                form = OAuth1Signer.parseQuery(text.trimmedNewlines())
            }
            let signer = try context.oauth1Provider(name).signer(token: c.accessToken, tokenSecret: c.tokenSecret)
            let value = try signer.authorization(
                method: method.uppercased(), url: url, form: form,
                nonce: OAuth1Signer.freshNonce(), timestamp: context.clock.now)
            context.output.value("Authorization: " + value)
        }
    }
}
