import XCTest

@testable import TokenVaultKit

/// Sentences that read as English whatever the number or the moment.
final class WordingTests: XCTestCase {
    func testAnExpiryIsOneVerb() {
        XCTAssertEqual(Format.expires(1000 + 3 * 60, now: 1000), "expires in 3m")
        XCTAssertEqual(Format.expires(1000 - 3 * 60, now: 1000), "expired 3m ago")
        XCTAssertEqual(Format.expires(nil, now: 1000), "never expires")
    }

    func testCountsAndListsAgreeInNumber() {
        XCTAssertEqual(Format.count(1, "credential"), "1 credential")
        XCTAssertEqual(Format.count(0, "credential"), "0 credentials")
        XCTAssertEqual(Format.count(2, "renewal"), "2 renewals")
        XCTAssertEqual(Format.list(["the session bus"]), "the session bus")
        XCTAssertEqual(Format.list(["a", "b", "c"]), "a, b and c")
        XCTAssertEqual(Format.list(["a", "b", "c"], "or"), "a, b or c")
    }
}
