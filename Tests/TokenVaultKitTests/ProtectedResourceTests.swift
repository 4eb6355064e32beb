import Foundation
import XCTest

@testable import TokenVaultKit

/// RFC 9728: where a protected resource's metadata lives, and what of it is
/// believed.
final class ProtectedResourceTests: XCTestCase {
    func testTheWellKnownNameGoesBetweenTheOriginAndThePath() {
        XCTAssertEqual(
            ProtectedResourceMetadata.wellKnownURLs(for: "https://mcp.example.com/a/mcp"),
            [
                "https://mcp.example.com/.well-known/oauth-protected-resource/a/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource",
            ])
        XCTAssertEqual(
            ProtectedResourceMetadata.wellKnownURLs(for: "http://127.0.0.1:8000/mcp/?x=1#f"),
            [
                "http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp",
                "http://127.0.0.1:8000/.well-known/oauth-protected-resource",
            ])
        XCTAssertEqual(
            ProtectedResourceMetadata.wellKnownURLs(for: "https://mcp.example.com"),
            [
                "https://mcp.example.com/.well-known/oauth-protected-resource"
            ])
    }

    func document(_ resource: String, servers: String = #"["https://auth.example.com"]"#) -> Data {
        Data(
            #"{"resource":"\#(resource)","authorization_servers":\#(servers),"scopes_supported":["read","write"]}"#.utf8
        )
    }

    func testTheDocumentMustDescribeTheResourceAskedAbout() throws {
        let m = try ProtectedResourceMetadata.parse(
            document("https://MCP.example.com/a/mcp/"), for: "https://mcp.example.com/a/mcp")
        XCTAssertEqual(m.authorizationServers, ["https://auth.example.com"])
        XCTAssertEqual(m.scopesSupported, ["read", "write"])
        for (doc, why) in [
            (document("https://mcp.example.com/b/mcp"), "describes another resource"),
            (document("https://evil.example/a/mcp"), "describes another resource"),
            (document("https://evil.example"), "describes another resource"),
            (document("http://mcp.example.com"), "describes another resource"),
            (document("https://mcp.example.com/a/m"), "describes another resource"),
            (document("https://mcp.example.com:8443"), "describes another resource"),
            (document("https://mcp.example.com/a/mcp", servers: "[]"), "names no authorization server"),
            (document("https://mcp.example.com/a/mcp", servers: #"["http://auth.example.com"]"#), "not an https URL"),
            (Data("[]".utf8), "not a JSON object"),
        ] {
            XCTAssertThrowsError(try ProtectedResourceMetadata.parse(doc, for: "https://mcp.example.com/a/mcp")) {
                error in
                XCTAssertEqual(
                    (error as? TokenVaultError)?.exitCode, why == "describes another resource" ? 78 : 65, why)
                XCTAssertTrue(error.errorText.contains(why), error.errorText)
            }
        }
        XCTAssertNoThrow(
            try ProtectedResourceMetadata.parse(
                document("http://127.0.0.1:8000/mcp", servers: #"["http://127.0.0.1:8000"]"#),
                for: "http://127.0.0.1:8000/mcp"))
    }

    /// A server that publishes its metadata at the root for all it serves
    /// (MCP conformance `auth/metadata-var2`): the origin, or a path prefix
    /// on whole segments, covers the URL, and is what is kept as the resource.
    func testARootOrParentResourceOfTheSameOriginIsTaken() throws {
        for stated in ["https://mcp.example.com", "https://mcp.example.com/", "https://MCP.example.com/a"] {
            let m = try ProtectedResourceMetadata.parse(document(stated), for: "https://mcp.example.com/a/mcp")
            XCTAssertEqual(m.resource, stated)
        }
    }
}
