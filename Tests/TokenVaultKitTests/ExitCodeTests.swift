import XCTest

@testable import TokenVaultKit

/// The exit-code table that --help and the man page print is the one the
/// errors use.
final class ExitCodeTests: XCTestCase {
    func testEveryErrorsCodeIsDocumentedOnce() {
        let errors: [TokenVaultError] = [
            .usage("u"), .notFound(service: "s", account: "a"), .loginRequired("l"), .badInput("b"),
            .backendUnavailable("b"), .vault("v"), .temporary("t"), .providerRefused(code: "c", description: nil),
            .permission("p"), .config("c"), .configDetail("c", excerpt: [], hint: nil), .internal("i"),
        ]
        let documented = TokenVaultError.exitCodes.map(\.code)
        XCTAssertEqual(Set(documented).count, documented.count, "a code listed twice")
        XCTAssertEqual(documented, documented.sorted())
        for error in errors {
            XCTAssertTrue(
                documented.contains(error.exitCode), "\(error) exits \(error.exitCode), which is undocumented")
        }
        // Every documented failure code is one some error uses (0 is success; 2 is doctor's own
        // verdict; 130 is Ctrl-C's, from its handler).
        XCTAssertEqual(Set(documented).subtracting([0, 2, 130]), Set(errors.map(\.exitCode)))
    }
}
