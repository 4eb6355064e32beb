import XCTest

@testable import TokenVaultKit

/// Reading FastMCP's store (docs/reference.md, "Moving in"): the file names
/// py-key-value gives FastMCP's keys, and Fernet as the cryptography package
/// writes it.
final class MCPClientStoreTests: XCTestCase {
    /// Names FastMCP 4.2.3 gave its files when it logged in to a local server.
    func testAKeysFileIsFoundByItsSanitizedNameAndHash() {
        let key = "http://127.0.0.1:34439/a/mcp/tokens"
        XCTAssertEqual(FastMCPStore.sanitized(key), "http_127_0_0_1_34439_a_mcp_tokens")
        XCTAssertTrue(FastMCPStore.isFile("S_http_127_0_0_1_34439_a_mcp_tokens-ee6e7fa0.json", of: key))
        // Cut to fit a file name: still its file.
        XCTAssertTrue(FastMCPStore.isFile("S_http_127_0_0_1-ee6e7fa0.json", of: key))
        XCTAssertTrue(
            FastMCPStore.isFile(
                "S_http_127_0_0_1_34439_a_mcp_client_info-316d8f6e.json", of: "http://127.0.0.1:34439/a/mcp/client_info"
            ))
        // Another URL's file, another hash, or a name that is not the key's.
        XCTAssertFalse(FastMCPStore.isFile("S_http_127_0_0_1_34439_a_mcp_tokens-ee6e7fa0.json", of: key + "x"))
        XCTAssertFalse(FastMCPStore.isFile("S_http_127_0_0_1_34439_a_mcp_tokens-00000000.json", of: key))
        XCTAssertFalse(FastMCPStore.isFile("S_https_127_0_0_1-ee6e7fa0.json", of: key))
        XCTAssertEqual(FastMCPStore.sanitized("a//b é_c"), "a_b__c")  // as py-key-value makes it
    }

    /// A token the cryptography package made (key 0…31, time 499162800, IV 0…15).
    func testFernetOpensWhatTheCryptographyPackageSealed() throws {
        let token = Array(
            "gAAAAAAdwJ6wAAECAwQFBgcICQoLDA0OD2NBxvlxLtJlPvkubsmddmHmNdpWPRqGuHyMyw-aztP0gi6Ez9oKgm8xJSJc-9XbZDtRXuSQwpKAURTOt_N2oDg="
                .utf8)
        let fernet = try XCTUnwrap(Fernet(key: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="))
        XCTAssertEqual(try fernet.open(token).map { String(decoding: $0, as: UTF8.self) }, #"{"access_token":"at"}"#)
        // Another key: its HMAC differs, nil (the caller's 77).
        let other = try XCTUnwrap(Fernet(key: String(repeating: "A", count: 43) + "="))
        XCTAssertNil(try other.open(token))
        // A changed byte of the ciphertext fails the HMAC too; no token at all is 65.
        var changed = token
        changed[60] = changed[60] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        XCTAssertNil(try fernet.open(changed))
        XCTAssertThrowsError(try fernet.open(Array("not a token".utf8))) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 65)
        }
        XCTAssertNil(Fernet(key: "short"))
    }
}
