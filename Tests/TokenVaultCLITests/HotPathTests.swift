import Foundation
import XCTest

/// The structure of the hot path (docs/benchmarks.md), checked by what the
/// dynamic loader reports, never by a timing: a `get` of a valid token from
/// the file vault loads none of the libraries only other paths need
/// (libsecret and GLib, libcurl, libqrencode, libcrypto), which are opened
/// with dlopen on first use. The binary is the debug build, linked as the
/// release is: none of those libraries in its NEEDED list.
final class HotPathTests: XCTestCase {
    static let lazyLibraries = ["libsecret", "libgio", "libgobject", "libglib", "libcurl"]
    static let unwanted = [
        "libsecret", "libglib", "libgio", "libgcrypt", "libcurl", "libqrencode", "libcrypto.so", "libssl",
    ]

    /// The libraries the loader initialised while `tokenvault ARGS` ran, by file name.
    func loaded(_ s: Sandbox, _ args: [String], env extra: [String: String] = [:]) -> (Run, Set<String>) {
        var env = s.env.merging(extra) { $1 }
        env["LD_DEBUG"] = "files"
        let r = runProcess(Paths.binary, args, env: env)
        let libs = r.stderr.split(separator: "\n").filter { $0.contains("calling init:") }
            .compactMap { $0.split(separator: "/").last.map(String.init) }
        return (r, Set(libs))
    }

    func testNoLibraryOpenedOnFirstUseIsLinked() {
        let dynamic = runProcess("/usr/bin/readelf", ["-d", Paths.binary], env: [:])
        XCTAssertEqual(dynamic.status, 0)
        let needed = dynamic.stdout.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        XCTAssertTrue(needed.contains { $0.contains("libsodium") }, "the dynamic section is read: \(needed)")
        XCTAssertEqual(needed.filter { line in Self.lazyLibraries.contains { line.contains($0) } }, [])
        // What dlopen serves must stay out of the link too: no symbol of theirs is imported.
        let nm = runProcess("/usr/bin/nm", ["-D", "--undefined-only", Paths.binary], env: [:])
        XCTAssertEqual(nm.status, 0)
        let direct = nm.stdout.split(separator: "\n").filter { line in
            ["secret_", "g_", "curl_", "QRcode_", "EVP_", "PEM_", "BIO_"].contains {
                line.split(separator: " ").last?.hasPrefix($0) == true
            }
        }
        XCTAssertEqual(direct, [], "linked directly")
    }

    func testAGetFromTheFileVaultLoadsNoLibraryItDoesNotUse() throws {
        let s = Sandbox(backend: "file")
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: #"{"access_token":"tok","expires_in":3600}"#).status, 0)
        for args in [
            ["get", "api.example.com"], ["header", "api.example.com"],
            ["get", "api.example.com", "--format", "kubectl"],
        ] {
            let (r, libs) = loaded(s, args)
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertTrue(libs.contains { $0.hasPrefix("libsodium") }, "the loader report is read: \(libs)")
            XCTAssertEqual(libs.filter { lib in Self.unwanted.contains { lib.hasPrefix($0) } }, [], "\(args)")
        }
    }

    func testAGetTheAgentAnswersLoadsNoBackendLibrary() throws {
        let keyring = try PrivateKeyring()
        defer { keyring.stop() }
        let s = Sandbox(backend: "secret-service")
        s.env.merge(keyring.env) { $1 }
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: #"{"access_token":"tok","expires_in":3600}"#).status, 0)
        XCTAssertEqual(s.tv("agent").status, 0)
        defer { s.expect("agent", "stop") }
        for args in [
            ["get", "api.example.com"], ["header", "api.example.com"], ["get", "api.example.com", "--format", "json"],
        ] {
            let (r, libs) = loaded(s, args)
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertTrue(r.stdout.contains("tok"), r.stdout)
            XCTAssertTrue(libs.contains { $0.hasPrefix("libsodium") }, "the loader report is read: \(libs)")
            XCTAssertEqual(libs.filter { lib in Self.unwanted.contains { lib.hasPrefix($0) } }, [], "\(args)")
        }
        // The same get without the agent opens the Secret Service itself.
        let (direct, directLibs) = loaded(s, ["get", "api.example.com"], env: ["TOKENVAULT_AGENT": "off"])
        XCTAssertEqual(direct.status, 0, direct.stderr)
        XCTAssertTrue(directLibs.contains("libsecret-1.so.0"), "\(directLibs)")
    }

    func testThePathsThatNeedThemLoadThemOnFirstUse() throws {
        // The Secret Service loads libsecret (and GLib, libgcrypt)…
        let keyring = try PrivateKeyring()
        defer { keyring.stop() }
        let ss = Sandbox(backend: "secret-service")
        ss.env.merge(keyring.env) { $1 }
        XCTAssertEqual(ss.tv("set", "api.example.com", stdin: "tok").status, 0)
        let (r, libs) = loaded(ss, ["get", "api.example.com"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(libs.contains("libsecret-1.so.0"), "\(libs)")
        XCTAssertFalse(libs.contains { $0.hasPrefix("libcurl") })
        // …and a refresh libcurl, still without libsecret on the file vault.
        let provider = try LocalProvider()
        defer { provider.stop() }
        let s = Sandbox(backend: "file")
        try s.writeConfig(provider.config)
        try provider.storeExpired(in: s)
        let (refreshed, refreshLibs) = loaded(s, ["get", "local"])
        XCTAssertEqual(refreshed.status, 0, refreshed.stderr)
        XCTAssertTrue(refreshLibs.contains("libcurl.so.4"), "\(refreshLibs)")
        XCTAssertFalse(refreshLibs.contains("libsecret-1.so.0"))
    }

    func testTheSecretServiceHeadStartAsksTheBusOnlyWhenTheBackendWill() throws {
        // `get` readies the Secret Service on a thread of its own while it parses
        // its arguments; a backend of file (config or environment) must keep it
        // from loading libsecret or connecting at all.
        let s = Sandbox(backend: "file")
        XCTAssertEqual(s.tv("set", "api.example.com", stdin: "tok").status, 0)
        let socket = s.home + "/run/bus", log = s.home + "/connections"
        let (listener, _) = try startFixtureServer("bus_listener.py", [socket, log])
        defer { listener.terminate() }
        func connections() -> Int {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").count
        }
        s.env["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=" + socket
        for (config, backend) in [
            ("backend = \"file\"\n", nil), ("", "file"), ("backend = \"secret-service\"\n", "file"),
        ] {
            try s.writeConfig(config)
            s.env["TOKENVAULT_BACKEND"] = backend
            let (r, libs) = loaded(s, ["get", "api.example.com"])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertEqual(r.out, "tok")
            XCTAssertFalse(
                libs.contains("libsecret-1.so.0"), "config \(config), TOKENVAULT_BACKEND \(backend ?? "unset")")
            XCTAssertEqual(connections(), 0, "config \(config), TOKENVAULT_BACKEND \(backend ?? "unset")")
        }
        // Auto (no backend anywhere) does ask the bus: the listener sees it.
        try s.writeConfig("")
        s.env["TOKENVAULT_BACKEND"] = nil
        let (r, libs) = loaded(s, ["get", "api.example.com"])
        XCTAssertEqual(r.out, "tok", r.stderr)
        XCTAssertTrue(libs.contains("libsecret-1.so.0"), "\(libs)")
        XCTAssertGreaterThan(connections(), 0)
    }

    func testTheVaultsCodeReferencesFoundationEssentialsOnly() throws {
        // The whole of Foundation (ICU, CoreFoundation, thousands of conformance
        // records) stays out of the binary only while no object file of these
        // modules references it; MemberImportVisibility catches most of it at
        // compile time, this catches the rest.
        let buildDir = (Paths.binary as NSString).deletingLastPathComponent
        for module in ["TokenVaultKit", "TokenVaultCLI"] {
            let dir = buildDir + "/\(module).build"
            // Only the objects of sources that exist: a deleted file's object stays behind.
            let sources = Set(
                (FileManager.default.enumerator(atPath: Paths.root.appendingPathComponent("Sources/\(module)").path)?
                    .compactMap { ($0 as? String).map { ($0 as NSString).lastPathComponent } }) ?? [])
            let objects = try FileManager.default.contentsOfDirectory(atPath: dir)
                .filter { $0.hasSuffix(".swift.o") && sources.contains(String($0.dropLast(2))) }
            XCTAssertGreaterThan(objects.count, 5, dir)
            let nm = runProcess("/usr/bin/nm", ["-u"] + objects.map { dir + "/" + $0 }, env: [:])
            XCTAssertEqual(nm.status, 0, nm.stderr)
            XCTAssertTrue(nm.stdout.contains("$s20FoundationEssentials"), "the check sees Swift symbols")
            let foundation = nm.stdout.split(separator: "\n").filter {
                $0.contains("$s10Foundation") || $0.contains("$s26FoundationInternationalization")
            }
            XCTAssertEqual(foundation, [], "\(module) references the whole of Foundation")
        }
    }
}
