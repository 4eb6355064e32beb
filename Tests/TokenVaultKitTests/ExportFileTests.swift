import XCTest

@testable import TokenVaultKit

/// The provider tables an export carries (docs/FORMAT.md, "An export"):
/// `[providers.NAME]` and its sub-tables, and nothing else, whatever the
/// text beside them.
final class ExportFileTests: XCTestCase {
    func testOnlyProviderTablesAreTakenFromAnExportsText() {
        let text = """
            stray = "before any table"
            [providers.a]
            client_id = "a"
            [hooks]
            on_login_required = "touch /tmp/never"
            [providers.b.endpoints]
            token_url = "https://b.example/token"
            [[servers]]
            name = "x"
            [providers.b]
            client_id = "b"
            [providers.a.extra]
            scope = "s"
            """
        let tables = ExportFile.tables(in: text)
        XCTAssertEqual(tables.map(\.name), ["a", "b"])
        XCTAssertEqual(
            tables[0].text, "[providers.a]\nclient_id = \"a\"\n[providers.a.extra]\nscope = \"s\"\n")
        XCTAssertEqual(
            tables[1].text,
            "[providers.b.endpoints]\ntoken_url = \"https://b.example/token\"\n[providers.b]\nclient_id = \"b\"\n")
        let all = tables.map(\.text).joined()
        for gone in ["hooks", "on_login_required", "servers", "stray"] { XCTAssertFalse(all.contains(gone), gone) }
    }
}
