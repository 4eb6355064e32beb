import Foundation
import XCTest

/// Behind an HTTP proxy (docs/config.md, "Behind a proxy"), with Debian's
/// tinyproxy in front of the quirk provider: the run's own proxy variables
/// decide, through the agent as without it; a proxy that is down or wants
/// credentials is named as the proxy's failure; a proxy's password is never
/// printed; `doctor --network` says which proxy each provider is reached through.
final class ProxyTests: QuirkProviderTestCase {
    /// A tinyproxy on a loopback port of its own; with `user`, it asks for Basic credentials.
    final class TinyProxy {
        let port: Int
        let log: String

        init(user: (String, String)? = nil) throws {
            let dir = NSTemporaryDirectory() + "tv-proxy-" + UUID().uuidString.prefix(8)
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            log = dir + "/log"
            var found: Int?
            for _ in 0..<5 where found == nil {
                let port = ClosedPort().port  // free a moment ago; tried again when taken meanwhile
                let conf = """
                    Port \(port)
                    Listen 127.0.0.1
                    Timeout 30
                    LogLevel Info
                    LogFile "\(log)"
                    MaxClients 50
                    Allow 127.0.0.1
                    \(user.map { "BasicAuth \($0.0) \($0.1)" } ?? "")
                    """
                try conf.write(toFile: dir + "/tinyproxy.conf", atomically: true, encoding: .utf8)
                let p = Process()
                p.executableURL = URL(fileURLWithPath: "/usr/bin/tinyproxy")
                p.arguments = ["-d", "-c", dir + "/tinyproxy.conf"]
                p.standardOutput = FileHandle.nullDevice
                p.standardError = FileHandle.nullDevice
                try p.runNoted()
                let listening = eventually(5) {
                    !p.isRunning
                        || runProcess(
                            "/usr/bin/curl", ["-s", "-o", "/dev/null", "http://127.0.0.1:\(port)/"], env: [:]
                        ).status == 0
                }
                if listening, p.isRunning {
                    found = port
                    running = p
                } else if p.isRunning {
                    p.terminate()
                }
            }
            port = try XCTUnwrap(found, "tinyproxy listens")
        }

        private var running: Process?
        var url: String { "http://127.0.0.1:\(port)" }

        /// The request lines it forwarded ("GET http://…", "CONNECT …").
        var requests: [String] {
            // "CONNECT   Nov 27 12:04:44 [11524]: Request (file descriptor 5): POST http://… HTTP/1.1"
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
                .filter { $0.contains("Request (file descriptor") }
                .compactMap { $0.components(separatedBy: "): ").last }
        }

        func stop() {
            if let running, running.isRunning {
                running.terminate()
                running.waitUntilExit()
            }
        }
    }

    nonisolated(unsafe) static var open: TinyProxy!
    nonisolated(unsafe) static var guarded: TinyProxy!

    override class func setUp() {
        super.setUp()
        open = try! TinyProxy()
        guarded = try! TinyProxy(user: ("alice", "s3cret-pw"))
    }

    override class func tearDown() {
        open.stop()
        guarded.stop()
        super.tearDown()
    }

    /// A sandbox holding an expired credential of provider `q` at the quirk provider's /rotate.
    func expired() throws -> Sandbox { try expiredAtQuirk("rotate", in: Sandbox()) }

    func forwarded(_ proxy: TinyProxy, _ path: String) -> Int {
        proxy.requests.filter { $0.contains("127.0.0.1:\(Self.port)\(path)") }.count
    }

    /// The refresh goes through the proxy the command's own variables name;
    /// through the agent too, which was started without any: the proxies
    /// travel with the request, and with the renewal made for that client.
    func testARefreshGoesThroughTheCallersProxy() throws {
        let s = try expired()
        let before = forwarded(Self.open, "/rotate")
        let direct = s.tv("get", "q", env: ["http_proxy": Self.open.url, "TOKENVAULT_AGENT": "off"])
        XCTAssertTrue(direct.out.hasPrefix("rot-at-"), direct.stderr)
        XCTAssertEqual(forwarded(Self.open, "/rotate"), before + 1, "through the proxy: \(Self.open.requests)")
        // An agent with no proxy of its own; a client with one.
        XCTAssertEqual(s.tv("agent").status, 0)
        addTeardownBlock { _ = s.tv("agent", "stop") }
        s.expect("set", "q", "--provider", "q", stdin: #"{"access_token":"b","refresh_token":"r2","expires_at":1}"#)
        func requests() -> Int {
            let o = try? JSONSerialization.jsonObject(with: Data(s.tv("agent", "status", "--json").stdout.utf8))
            return (o as? [String: Any])?["requests"] as? Int ?? -1
        }
        let asked = requests()
        let viaAgent = s.tv("get", "q", env: ["http_proxy": Self.open.url])
        XCTAssertTrue(viaAgent.out.hasPrefix("rot-at-"), viaAgent.stderr)
        XCTAssertEqual(requests() - asked, 2, "answered by the agent (and one status)")
        XCTAssertEqual(forwarded(Self.open, "/rotate"), before + 2, "the agent used the client's proxy")
        // no_proxy names the provider's host: reached directly.
        s.expect("set", "q", "--provider", "q", stdin: #"{"access_token":"c","refresh_token":"r3","expires_at":1}"#)
        let bypassed = s.tv("get", "q", env: ["http_proxy": Self.open.url, "no_proxy": "example.org, 127.0.0.1"])
        XCTAssertTrue(bypassed.out.hasPrefix("rot-at-"), bypassed.stderr)
        XCTAssertEqual(forwarded(Self.open, "/rotate"), before + 2, "no_proxy: not through the proxy")
    }

    /// The request's no_proxy decides, read as curl reads it, and libcurl
    /// is told: never the process's own. An agent started with `no_proxy=*`
    /// still sends a client's refresh through that client's proxy; a client's
    /// CIDR range sends it directly (a plain-http token endpoint on loopback,
    /// whose refresh token and client secret must not cross the proxy).
    func testTheRequestsNoProxyDecidesThroughTheAgent() throws {
        let s = try expired()
        XCTAssertEqual(s.tv("agent", env: ["no_proxy": "*", "NO_PROXY": "*"]).status, 0)
        addTeardownBlock { _ = s.tv("agent", "stop") }
        let before = forwarded(Self.open, "/rotate")
        let proxied = s.tv("get", "q", env: ["http_proxy": Self.open.url])
        XCTAssertTrue(proxied.out.hasPrefix("rot-at-"), proxied.stderr)
        XCTAssertEqual(forwarded(Self.open, "/rotate"), before + 1, "the client's proxy, not the agent's no_proxy")
        for noProxy in ["127.0.0.0/8", "localhost,127.0.0.1.", "::1/128 127.0.0.1/32", "*"] {
            s.expect(
                "set", "q", "--provider", "q",
                stdin: #"{"access_token":"c","refresh_token":"r3","expires_at":1}"#)
            let direct = s.tv("get", "q", env: ["http_proxy": Self.open.url, "no_proxy": noProxy])
            XCTAssertTrue(direct.out.hasPrefix("rot-at-"), "\(noProxy): \(direct.stderr)")
            XCTAssertEqual(forwarded(Self.open, "/rotate"), before + 1, "\(noProxy): not through the proxy")
        }
        // A range that does not hold the host: through the proxy.
        s.expect("set", "q", "--provider", "q", stdin: #"{"access_token":"d","refresh_token":"r4","expires_at":1}"#)
        let outside = s.tv("get", "q", env: ["http_proxy": Self.open.url, "no_proxy": "10.0.0.0/8,.127.0.0.1.example"])
        XCTAssertTrue(outside.out.hasPrefix("rot-at-"), outside.stderr)
        XCTAssertEqual(forwarded(Self.open, "/rotate"), before + 2)
    }

    /// A proxy that is down is the proxy's failure, said as such; the
    /// credential is kept as it was (its refresh token never left).
    func testAProxyThatIsDownIsNamed() throws {
        let s = try expired()
        let closed = ClosedPort()
        let r = s.tv("get", "q", env: ["http_proxy": "http://127.0.0.1:\(closed.port)"])
        XCTAssertEqual(r.status, 75, r.stderr)
        XCTAssertTrue(
            r.stderr.contains("cannot reach the proxy http://127.0.0.1:\(closed.port) (http_proxy)"), r.stderr)
        XCTAssertTrue(r.stderr.contains("nothing was sent to"), r.stderr)
        let kept = s.tv("get", "q", "--field", "refresh_token", "--no-refresh")
        XCTAssertEqual(kept.out, "r", kept.stderr)
    }

    /// A proxy that wants credentials: without them, its 407 is named as the
    /// proxy's refusal (78); with them, the refresh goes through.
    func testAProxyThatWantsCredentials() throws {
        let s = try expired()
        let refused = s.tv("get", "q", env: ["http_proxy": Self.guarded.url])
        XCTAssertEqual(refused.status, 78, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("refused to take the request"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("HTTP 407"), refused.stderr)
        let withCredentials = "http://alice:s3cret-pw@127.0.0.1:\(Self.guarded.port)"
        let through = s.tv("get", "q", env: ["http_proxy": withCredentials])
        XCTAssertTrue(through.out.hasPrefix("rot-at-"), through.stderr)
        XCTAssertFalse(through.stderr.contains("s3cret-pw"), through.stderr)
    }

    /// A proxy URL that cannot be read (a '#', '@' or space in its password)
    /// is one line that names the variable, and never the password.
    func testAnUnreadableProxyIsNeverPrinted() throws {
        let s = try expired()
        for bad in [
            "http://alice:pa#ss9@127.0.0.1:3128", "http://alice:p@ss wrd9@127.0.0.1:3128", "http://bob:x@y9@z:1",
        ] {
            let r = s.tv("get", "q", env: ["http_proxy": bad])
            XCTAssertEqual(r.status, 78, r.stderr)
            XCTAssertTrue(r.stderr.contains("the proxy in http_proxy cannot be read"), r.stderr)
            for secret in ["pa#ss9", "p@ss", "wrd9", "x@y9", "alice", "bob"] {
                XCTAssertFalse(r.stderr.contains(secret), r.stderr)
            }
            XCTAssertEqual(s.tv("get", "q", "--field", "refresh_token", "--no-refresh").out, "r")
        }
    }

    /// `doctor --network` says which proxy each provider is reached through,
    /// and a proxy's refusal is no provider's answer.
    func testDoctorSaysWhichProxyEachProviderIsReachedThrough() throws {
        let s = try expired()
        let through = s.tv("doctor", "--network", env: ["http_proxy": Self.open.url])
        XCTAssertTrue(through.stdout.contains("through the proxy \(Self.open.url) (http_proxy)"), through.stdout)
        let refused = s.tv("doctor", "--network", env: ["http_proxy": Self.guarded.url])
        XCTAssertNotEqual(refused.status, 0, refused.stdout)
        XCTAssertTrue(refused.stdout.contains("refused to take the request"), refused.stdout)
        let wrong = s.tv(
            "doctor", "--network", env: ["http_proxy": "http://alice:wrong@127.0.0.1:\(Self.guarded.port)"])
        XCTAssertNotEqual(wrong.status, 0, wrong.stdout)
        XCTAssertTrue(wrong.stdout.contains("may be the proxy refusing its credentials"), wrong.stdout)
        XCTAssertFalse(wrong.stdout.contains("wrong"), wrong.stdout)
    }
}
