import Foundation
import XCTest

@testable import TokenVaultKit

final class PresetAndAdapterUnitTests: XCTestCase {
    func testMicrosoftTenantFillsTheEndpoints() throws {
        let common = try OAuth2Provider.resolve(
            "microsoft", config: try Config.parse("[providers.microsoft]\nclient_id = \"app\"\n"), configPath: "c")
        XCTAssertEqual(common.tokenURL, "https://login.microsoftonline.com/common/oauth2/v2.0/token")
        XCTAssertEqual(common.deviceAuthorizationURL, "https://login.microsoftonline.com/common/oauth2/v2.0/devicecode")
        XCTAssertTrue(common.scopes.contains("offline_access"))
        XCTAssertNil(common.secretSource, "a public client")
        let tenant = try OAuth2Provider.resolve(
            "microsoft",
            config: try Config.parse(
                "[providers.microsoft]\nclient_id = \"app\"\ntenant = \"contoso.onmicrosoft.com\"\n"), configPath: "c")
        XCTAssertEqual(
            tenant.authorizeURL, "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/authorize")
        for bad in ["", "a/b", "x?y=1", "../common"] {
            XCTAssertThrowsError(
                try OAuth2Provider.resolve(
                    "microsoft",
                    config: try Config.parse("[providers.microsoft]\nclient_id = \"app\"\ntenant = \"\(bad)\"\n"),
                    configPath: "c")
            ) {
                XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 78, bad)
            }
        }
        let gitlab = try OAuth2Provider.resolve(
            "gitlab", config: try Config.parse("[providers.gitlab]\nclient_id = \"g\"\n"), configPath: "c")
        XCTAssertEqual(gitlab.service.description, "gitlab.com")
        XCTAssertEqual(gitlab.revokeURL, "https://gitlab.com/oauth/revoke")
    }

    func testExecCredentialFollowsKubectlsRequest() throws {
        let none = try ExecCredentialRequest.from(Settings(environment: [:]))
        XCTAssertEqual(none.apiVersion, ExecCredentialRequest.v1beta1)
        XCTAssertTrue(none.interactive)
        let v1 = try ExecCredentialRequest.from(
            Settings(environment: [
                "KUBERNETES_EXEC_INFO": #"{"apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":true}}"#
            ]))
        XCTAssertEqual(v1.apiVersion, ExecCredentialRequest.v1)
        XCTAssertTrue(v1.interactive)
        XCTAssertFalse(
            try ExecCredentialRequest.from(
                Settings(environment: ["KUBERNETES_EXEC_INFO": #"{"apiVersion":"client.authentication.k8s.io/v1"}"#])
            ).interactive)
        XCTAssertEqual(
            v1.response(token: "t", expiresAt: 1_800_000_000),
            .object([
                "apiVersion": .string(ExecCredentialRequest.v1), "kind": .string("ExecCredential"),
                "status": .object(["token": .string("t"), "expirationTimestamp": .string("2027-01-15T08:00:00Z")]),
            ]))
        XCTAssertEqual(
            v1.response(token: "t", expiresAt: nil),
            .object([
                "apiVersion": .string(ExecCredentialRequest.v1), "kind": .string("ExecCredential"),
                "status": .object(["token": .string("t")]),
            ]))
    }
}
