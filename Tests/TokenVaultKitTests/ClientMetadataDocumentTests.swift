import XCTest

@testable import TokenVaultKit

/// tokenvault's Client ID Metadata Document (`ClientMetadataDocument`):
/// which URLs can be a client id, the document printed for one, and what
/// `doctor` says of a hosted one that drifted.
final class ClientMetadataDocumentTests: XCTestCase {
    let url = "https://example.com/tv/client.json"

    func testOnlyAnHTTPSURLWithAPathIsAClientID() {
        XCTAssertTrue(ClientMetadataDocument.isClientID(url))
        for bad in [
            "http://example.com/tv/client.json", "https://example.com", "https://example.com/",
            "https://u:p@example.com/c.json", "https://example.com/c.json#x", "https://example.com/a/../c.json",
            "reg-1",
        ] {
            XCTAssertFalse(ClientMetadataDocument.isClientID(bad), bad)
            XCTAssertThrowsError(try ClientMetadataDocument.check(bad, setting: "client_metadata_url")) {
                XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 78)
            }
        }
    }

    func testTheDocumentNamesItsURLAndLoopbackRedirectsOfAnyPort() {
        let d = ClientMetadataDocument.document(for: url)
        XCTAssertEqual(d["client_id"], .string(url))
        XCTAssertEqual(d["token_endpoint_auth_method"], .string("none"))
        XCTAssertEqual(d["application_type"], .string("native"))
        XCTAssertEqual(
            d["redirect_uris"], .array([.string("http://127.0.0.1/callback"), .string("http://[::1]/callback")]))
        XCTAssertEqual(ClientMetadataDocument.differences(d, for: url), [])
    }

    func testADriftedDocumentIsNamedByWhatDiffers() {
        guard case .object(var o) = ClientMetadataDocument.document(for: url) else { return XCTFail() }
        o["client_id"] = .string("https://example.com/old.json")
        o["redirect_uris"] = .array([.string("http://127.0.0.1:8080/cb")])
        o["client_name"] = .string("renamed")  // cosmetic: not a difference
        XCTAssertEqual(ClientMetadataDocument.differences(.object(o), for: url), ["client_id", "redirect_uris"])
    }
}
