import Foundation
import TokenVaultKit
import XCTest

/// `login URL` with a Client ID Metadata Document, against cimd_server.py:
/// an authorization server that fetches https client ids over TLS on
/// loopback (the certificate made here) and checks the document's
/// `client_id` and redirect URIs, one offering CIMD alone and one offering
/// RFC 7591 registration as well. The document hosted is the one
/// `tokenvault setup client-metadata URL` prints.
final class CIMDLoginTests: XCTestCase {
    nonisolated(unsafe) static var only: Process!
    nonisolated(unsafe) static var onlyPort = 0
    nonisolated(unsafe) static var both: Process!
    nonisolated(unsafe) static var bothPort = 0
    nonisolated(unsafe) static var docDir = ""
    nonisolated(unsafe) static var docPort = 0

    override class func setUp() {
        let dir = NSTemporaryDirectory() + "tv-cimd-" + UUID().uuidString.prefix(8)
        docDir = dir + "/docs"
        try! FileManager.default.createDirectory(atPath: docDir + "/tv", withIntermediateDirectories: true)
        let made = runProcess(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", dir + "/key.pem",
                "-out", dir + "/cert.pem",
            ], env: ["PATH": "/usr/bin:/bin"])
        precondition(made.status == 0, made.stderr)
        let tls = ["--cert", dir + "/cert.pem", "--key", dir + "/key.pem", "--doc-dir", docDir]
        (only, onlyPort) = try! startFixtureServer("cimd_server.py", tls)
        (both, bothPort) = try! startFixtureServer("cimd_server.py", tls + ["--registration"])
        let info = runProcess("/usr/bin/curl", ["-s", "http://127.0.0.1:\(onlyPort)/info"], env: [:])
        docPort = (try! JSONSerialization.jsonObject(with: Data(info.stdout.utf8)) as! [String: Int])["doc_port"]!
    }

    override class func tearDown() {
        for p in [only, both] where p!.isRunning {
            p!.terminate()
            p!.waitUntilExit()
        }
    }

    var documentURL: String { "https://127.0.0.1:\(Self.docPort)/tv/client.json" }

    func resource(_ port: Int) -> String { "http://127.0.0.1:\(port)/mcp" }

    func stats(_ port: Int) throws -> [String: Any] {
        let r = runProcess("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/stats"], env: [:])
        return try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any] ?? [:]
    }

    func count(_ port: Int, _ key: String) throws -> Int { try stats(port)[key] as? Int ?? -1 }

    /// A sandbox whose config names the document's URL, with the document
    /// `setup client-metadata` printed hosted there.
    func sandbox(url: String? = nil) throws -> Sandbox {
        let s = Sandbox()
        s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        let url = url ?? documentURL
        let printed = s.tv("setup", "client-metadata", documentURL)
        XCTAssertEqual(printed.status, 0, printed.stderr)
        try printed.stdout.write(toFile: Self.docDir + "/tv/client.json", atomically: true, encoding: .utf8)
        try s.writeConfig("client_metadata_url = \"\(url)\"\n")
        return s
    }

    func testALoginUsesTheDocumentsURLAsClientIDAndTheGrantRenewsWithIt() throws {
        let s = try sandbox()
        let port = Self.onlyPort
        let before = try stats(port)
        let login = s.tv("login", resource(port), limit: 60)
        XCTAssertEqual(login.status, 0, login.stderr)
        XCTAssertEqual(try stats(port)["last_client_id"] as? String, documentURL, "the URL is the client id")
        XCTAssertGreaterThan(try count(port, "fetches"), before["fetches"] as? Int ?? 0, "the server fetched it")
        XCTAssertEqual(try count(port, "codes"), (before["codes"] as? Int ?? 0) + 1)
        try s.expireStored(resource(port))
        let get = s.tv("get", resource(port))
        XCTAssertEqual(get.status, 0, get.stderr)
        XCTAssertEqual(try count(port, "refreshes"), (before["refreshes"] as? Int ?? 0) + 1, "renewed as that client")
    }

    func testTheDocumentIsChosenOverARegistration() throws {
        let s = try sandbox()
        let port = Self.bothPort
        let before = try count(port, "registrations")
        XCTAssertEqual(s.tv("login", resource(port), limit: 60).status, 0)
        XCTAssertEqual(try count(port, "registrations"), before, "no registration request")
        XCTAssertEqual(try stats(port)["last_client_id"] as? String, documentURL)
    }

    func testWithoutTheSettingAServerOfDocumentsAloneIs78WithTheWayToHostOne() throws {
        let s = Sandbox()
        s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        let before = try count(Self.onlyPort, "fetches")
        let login = s.tv("login", resource(Self.onlyPort), limit: 60)
        XCTAssertEqual(login.status, 78, login.stderr)
        XCTAssertTrue(login.stderr.contains("no client_metadata_url is set"), login.stderr)
        XCTAssertTrue(login.stderr.contains("tokenvault setup client-metadata"), login.stderr)
        XCTAssertEqual(try count(Self.onlyPort, "fetches"), before)
        // Where the server also registers clients, that is what happens.
        let both = s.tv("login", resource(Self.bothPort), limit: 60)
        XCTAssertEqual(both.status, 0, both.stderr)
        XCTAssertTrue((try stats(Self.bothPort)["last_client_id"] as? String ?? "").hasPrefix("reg-"))
    }

    func testAnHTTPURLOrOneWithoutAPathIsRefusedBeforeAnyRequest() throws {
        for bad in ["http://127.0.0.1:\(Self.docPort)/tv/client.json", "https://127.0.0.1:\(Self.docPort)"] {
            let s = try sandbox(url: bad)
            let before = try count(Self.onlyPort, "requests")
            let login = s.tv("login", resource(Self.onlyPort), limit: 60)
            XCTAssertEqual(login.status, 78, login.stderr)
            XCTAssertTrue(login.stderr.contains("client_metadata_url must"), login.stderr)
            XCTAssertEqual(try count(Self.onlyPort, "requests"), before, "nothing was sent")
        }
    }

    func testTheServerRefusesADocumentThatNamesAnotherClient() throws {
        // What the stub checks, shown: a document whose client_id is not its URL gives no code.
        let s = try sandbox(url: "https://127.0.0.1:\(Self.docPort)/tv/other.json")
        try String(contentsOfFile: Self.docDir + "/tv/client.json", encoding: .utf8)
            .write(toFile: Self.docDir + "/tv/other.json", atomically: true, encoding: .utf8)
        let before = try count(Self.onlyPort, "refused")
        let login = s.tv("login", resource(Self.onlyPort), "--timeout", "5", limit: 60)
        XCTAssertNotEqual(login.status, 0)
        XCTAssertEqual(try count(Self.onlyPort, "refused"), before + 1)
    }

    func testDoctorFetchesTheConfiguredDocument() throws {
        let s = try sandbox()
        let r = s.tv("doctor", "--network")
        // This machine does not trust the test's certificate: the fetch fails, and doctor says so with the fix.
        let line = r.stdout.split(separator: "\n").first { $0.contains("client_metadata_url") }.map(String.init) ?? ""
        XCTAssertTrue(line.hasPrefix("✗ client_metadata_url: "), r.stdout)
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stdout.contains("tokenvault setup client-metadata \(documentURL)"), r.stdout)
        // An http URL is named for what it is before anything is fetched.
        try s.writeConfig("client_metadata_url = \"http://127.0.0.1:\(Self.docPort)/tv/client.json\"\n")
        let http = s.tv("doctor", "--network")
        XCTAssertTrue(http.stdout.contains("client_metadata_url must be an https URL"), http.stdout)
    }
}
