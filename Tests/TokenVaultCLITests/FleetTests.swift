import Foundation
import TokenVaultKit
import XCTest

/// A real 3-member etcd cluster on loopback (Tests/Fixtures/etcd_cluster.py):
/// TLS with client certificates, etcd auth with a user limited to the prefix.
final class EtcdCluster {
    let process: Process
    private let input: FileHandle
    private let output: FileHandle
    private var buffer = Data()
    let endpoints: [String]
    let ca: String, cert: String, keyFile: String, passwordFile: String, rootPassword: String

    init(directory: String, prefix: String) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [
            Paths.fixtures.appendingPathComponent("etcd_cluster.py").path, directory, "--tls", "--auth", prefix,
        ]
        process.environment = ["PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"]
        let inPipe = Pipe(), outPipe = Pipe()
        process.standardInput = inPipe
        process.standardOutput = outPipe
        process.standardError = FileHandle.nullDevice
        input = inPipe.fileHandleForWriting
        output = outPipe.fileHandleForReading
        try process.run()
        var first = ""
        var line: String?
        repeat {
            line = EtcdCluster.readLine(output, &buffer)
            first = line ?? ""
        } while line != nil && !first.hasPrefix("{")
        guard let o = try? JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any],
            let e = o["endpoints"] as? [String]
        else {
            throw NSError(
                domain: "etcd", code: 1,
                userInfo: [NSLocalizedDescriptionKey: "etcd_cluster.py did not start: \(first)"])
        }
        endpoints = e
        ca = o["ca"] as? String ?? ""
        cert = o["cert"] as? String ?? ""
        keyFile = o["key"] as? String ?? ""
        passwordFile = o["password_file"] as? String ?? ""
        rootPassword = o["root_password"] as? String ?? ""
    }

    private static func readLine(_ h: FileHandle, _ buffer: inout Data) -> String? {
        while true {
            if let i = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[buffer.startIndex..<i], as: UTF8.self)
                buffer = Data(buffer[(i + 1)...])
                return line
            }
            let chunk = Spawned.readChunk(h.fileDescriptor)
            if chunk.isEmpty { return nil }
            buffer += chunk
        }
    }

    /// One command of etcd_cluster.py, and its one-line answer.
    func command(_ line: String) -> String {
        input.write(Data((line + "\n").utf8))
        return EtcdCluster.readLine(output, &buffer) ?? ""
    }

    /// etcdctl as root (the tests' own view of what etcd holds).
    func etcdctl(_ args: String...) -> Run {
        runProcess(
            "/usr/bin/etcdctl",
            [
                "--endpoints", endpoints.joined(separator: ","), "--cacert", ca, "--cert", cert, "--key", keyFile,
                "--user", "root:" + rootPassword,
            ] + args, env: ["ETCDCTL_API": "3", "PATH": "/usr/bin:/bin"])
    }

    /// A key's raw value, base64 (etcdctl's JSON output).
    func rawGet(_ key: String) -> String {
        let r = etcdctl("get", key, "-w", "json")
        guard let o = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any],
            let kvs = o["kvs"] as? [[String: Any]], let v = kvs.first?["value"] as? String
        else { return "" }
        return v
    }

    /// Puts raw bytes (base64) through the gateway as root, as an attacker with write access would.
    @discardableResult
    func rawPut(_ key: String, _ base64: String) -> Bool {
        let tls = ["--cacert", ca, "--cert", cert, "--key", keyFile]
        let auth = runProcess(
            "/usr/bin/curl",
            ["-s"] + tls + [
                "-d", #"{"name":"root","password":"\#(rootPassword)"}"#, endpoints[0] + "/v3/auth/authenticate",
            ], env: [:])
        guard let o = try? JSONSerialization.jsonObject(with: Data(auth.stdout.utf8)) as? [String: Any],
            let token = o["token"] as? String
        else { return false }
        let body = #"{"key":"\#(Data(key.utf8).base64EncodedString())","value":"\#(base64)"}"#
        let put = runProcess(
            "/usr/bin/curl",
            ["-s", "-f"] + tls + ["-H", "Authorization: \(token)", "-d", body, endpoints[0] + "/v3/kv/put"], env: [:])
        return put.status == 0
    }

    func stop() {
        try? input.close()
        process.waitUntilExit()
    }

    /// The `[etcd]` table for this cluster.
    func table(prefix: String, leaseTTL: Int = 4) -> String {
        """
        backend = "etcd"
        [etcd]
        endpoints = [\(endpoints.map { "\"\($0)\"" }.joined(separator: ", "))]
        prefix = "\(prefix)"
        username = "tokenvault"
        password_file = "\(passwordFile)"
        ca_file = "\(ca)"
        cert_file = "\(cert)"
        key_file = "\(keyFile)"
        lease_ttl = \(leaseTTL)
        """
    }
}

/// docs/fleet.md against a real cluster: hosts are sandboxes with their own homes
/// and runtime directories, so no local file lock can order them; only etcd.
final class FleetTests: XCTestCase {
    nonisolated(unsafe) static var cluster: EtcdCluster!
    nonisolated(unsafe) static var provider: LocalProvider!
    nonisolated(unsafe) static var directory = ""
    static let prefix = "tokenvault/"

    override class func setUp() {
        super.setUp()
        directory = NSTemporaryDirectory() + "tv-etcd-" + UUID().uuidString.prefix(8)
        do {
            cluster = try EtcdCluster(directory: directory, prefix: prefix)
            provider = try LocalProvider()
        } catch {
            fatalError("cannot start the etcd cluster or the provider: \(error)")
        }
    }

    override class func tearDown() {
        cluster?.stop()
        provider?.stop()
        try? FileManager.default.removeItem(atPath: directory)
        super.tearDown()
    }

    var cluster: EtcdCluster { Self.cluster }
    var provider: LocalProvider { Self.provider }

    /// A host of the fleet, on its own prefix (`sub`) so tests do not meet.
    func host(_ sub: String, leaseTTL: Int = 4, extra: String = "") throws -> Sandbox {
        let s = Sandbox(backend: "etcd")
        s.env["TOKENVAULT_BACKEND"] = nil
        // Hosts share the kernel keyring here (one user); the key cache is not what is tested.
        s.env["TOKENVAULT_KEY_TTL"] = "900"
        try s.writeConfig(
            cluster.table(prefix: Self.prefix + sub + "/", leaseTTL: leaseTTL) + "\n" + provider.config + "\n" + extra)
        return s
    }

    func storeExpired(_ s: Sandbox) throws {
        try provider.storeExpired(in: s)
    }

    /// `tokenvault get local` on `s` in the background; the returned call waits for it.
    func getInBackground(_ s: Sandbox) -> () -> Run? {
        let result = Locked<Run?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let r = s.tv("get", "local", limit: 60)
            result.mutate { $0 = r }
            done.signal()
        }
        return {
            done.wait()
            return result.value
        }
    }

    /// `perHost` concurrent `get`s on each host at once.
    func fleetGets(_ hosts: [Sandbox], perHost: Int, during: (() -> Void)? = nil) -> [Run] {
        let runs = Locked<[Run]>([])
        let group = DispatchGroup()
        for h in hosts {
            for _ in 0..<perHost {
                DispatchQueue.global().async(group: group) {
                    let r = h.tv("get", "local", limit: 60)
                    runs.mutate { $0.append(r) }
                }
            }
        }
        during?()
        group.wait()
        return runs.value
    }

    func expireAgain(_ s: Sandbox) throws {
        try Self.provider.expireStored(in: s)
    }

    // MARK: One refresh for the fleet

    func testFourHostsManyProcessesOneRefreshPerRound() throws {
        let hosts = try (0..<4).map { _ in try host("share") }
        try storeExpired(hosts[0])
        for round in 0..<3 {
            let before = try provider.stats()
            let runs = fleetGets(hosts, perHost: 8)
            let after = try provider.stats()
            XCTAssertEqual(runs.filter { $0.status != 0 }.map(\.stderr), [], "round \(round)")
            let printed = Swift.Set(runs.map(\.out))
            XCTAssertEqual(printed.count, 1, "round \(round): all 32 print the same token")
            XCTAssertEqual(
                (after["refreshes"] ?? 0) - (before["refreshes"] ?? 0), 1, "round \(round): one refresh for the fleet")
            XCTAssertEqual(after["reuse_detected"] ?? 0, 0, "round \(round): no refresh token replayed")
            XCTAssertEqual(provider.resourceStatus(printed.first ?? ""), 200)
            try expireAgain(hosts[round % 4])
        }
        let last = hosts[3].tv("refresh", "local")
        XCTAssertEqual(last.status, 0, last.stderr)
        XCTAssertEqual(provider.resourceStatus(hosts[1].tv("get", "local").out), 200, "the chain is intact")
        // No lock is left behind.
        XCTAssertEqual(
            cluster.etcdctl("get", "--prefix", "--keys-only", Self.prefix + "share/lock/").stdout.trimmingCharacters(
                in: .whitespacesAndNewlines), "")
    }

    /// A DPoP-bound credential logged in on one host is renewed on another
    /// with the key that came with it through etcd, and the server that bound
    /// it takes the new token's proofs (docs/security.md, "Sender-constrained tokens").
    func testABoundCredentialIsRenewedOnAnotherHostWithItsKey() throws {
        let (server, port) = try startFixtureServer("dpop_server.py", ["--token-ttl", "2"])
        defer { server.terminate() }
        let table = """
            [providers.dp]
            issuer = "http://127.0.0.1:\(port)"
            service = "api.dpop.example"
            client_id = "dpop-client"
            client_secret = "dpop-secret"
            scopes = ["profile"]
            dpop = true
            """
        let a = try host("dpop", extra: table), b = try host("dpop", extra: table)
        a.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        a.expect("login", "dp", limit: 60)
        let expired = FixedClock(SystemClock().now + 3)  // b's clock: past the 2-second token's expiry
        let url = "http://127.0.0.1:\(port)/userinfo"
        let header = b.tv(
            "header", "api.dpop.example", "--method", "GET", "--url", url, at: expired,
            env: ["TOKENVAULT_BACKEND": "etcd"])
        XCTAssertEqual(header.status, 0, header.stderr)
        let pair = header.stdout
        let status = runProcess(
            "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "@-", url], stdin: pair, env: [:])
        XCTAssertEqual(status.stdout, "200")
        let stats = runProcess("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/stats"], env: [:]).stdout
        let o = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(stats.utf8)) as? [String: Any])
        XCTAssertEqual(o["refreshes"] as? Int, 1, stats)
        XCTAssertEqual(Swift.Set(o["jkts"] as? [String] ?? []).count, 1, "one key for both hosts: \(stats)")
    }

    /// A fleet at expiry as CI runs one: 4 hosts x 16 processes at once, TLS
    /// and password auth on; every get answers, with the round's one token.
    func testSixtyFourGetsAtExpiryAllAnswerWithOneRefreshPerRound() throws {
        let hosts = try (0..<4).map { _ in try host("burst") }
        try storeExpired(hosts[0])
        for round in 0..<2 {
            let before = try provider.stats()
            let runs = fleetGets(hosts, perHost: 16)
            let after = try provider.stats()
            XCTAssertEqual(runs.filter { $0.status != 0 }.map(\.stderr), [], "round \(round): every get answered")
            XCTAssertEqual(Swift.Set(runs.map(\.out)).count, 1, "round \(round): one token")
            XCTAssertEqual((after["refreshes"] ?? 0) - (before["refreshes"] ?? 0), 1, "round \(round)")
            XCTAssertEqual(after["reuse_detected"] ?? 0, 0)
            try expireAgain(hosts[(round + 1) % 4])
        }
    }

    /// The kernel keyring's name for the etcd auth token `s` keeps.
    func authTokenName(_ s: Sandbox, endpoints: [String]) -> String {
        let who = (endpoints.sorted() + ["tokenvault", s.env["XDG_RUNTIME_DIR"]! + "/tokenvault"]).joined(
            separator: "\n")
        let hash = runProcess(
            "/usr/bin/python3",
            [
                "-c", "import hashlib,sys; print(hashlib.blake2b(sys.argv[1].encode(), digest_size=16).hexdigest())",
                who,
            ],
            env: [:]
        ).out
        return "tokenvault:etcd-auth:" + hash
    }

    func testAHostSignsInOnceAndAnAuthTokenEtcdRefusesIsReplacedOnce() throws {
        let (proxy, port) = try hostileMember("--count")
        defer { proxy.terminate() }
        let s = try proxiedHost("signin", port: port)
        s.env["TOKENVAULT_KEY_TTL"] = "900"
        XCTAssertEqual(s.tv("set", "t.example", stdin: "tok-signin").status, 0)
        func signins() throws -> [String: Int] { try fixtureStats("http://127.0.0.1:\(port)/proxy-stats") }
        func burst() -> [Run] {
            let runs = Locked<[Run]>([])
            DispatchQueue.concurrentPerform(iterations: 16) { _ in
                let r = s.tv("get", "t.example", limit: 60)
                runs.mutate { $0.append(r) }
            }
            return runs.value
        }
        let name = authTokenName(s, endpoints: ["http://127.0.0.1:\(port)"])
        _ = runProcess("/usr/bin/keyctl", ["purge", "-s", "user", name], env: [:])
        let first = try signins()
        let runs = burst()
        XCTAssertEqual(runs.filter { $0.out != "tok-signin" }.map(\.stderr), [])
        XCTAssertEqual((try signins()["signins"] ?? 0) - (first["signins"] ?? 0), 1, "16 processes, one sign-in")
        // Etcd no longer takes the kept token: one process signs in again, the others take its token.
        let poisoned = runProcess("/usr/bin/keyctl", ["add", "user", name, "not-a-token-etcd-knows", "@u"], env: [:])
        XCTAssertEqual(poisoned.status, 0, poisoned.stderr)
        let before = try signins()
        let again = burst()
        XCTAssertEqual(again.filter { $0.out != "tok-signin" }.map(\.stderr), [])
        let after = try signins()
        XCTAssertGreaterThanOrEqual((after["refused_tokens"] ?? 0) - (before["refused_tokens"] ?? 0), 1, "\(after)")
        XCTAssertEqual((after["signins"] ?? 0) - (before["signins"] ?? 0), 1, "replaced once, not by every process")
    }

    func testKillingTheLeaderDuringARoundLosesNothing() throws {
        let hosts = try (0..<3).map { _ in try host("leader") }
        try storeExpired(hosts[0])
        let leader = try XCTUnwrap(Int(cluster.command("leader")))
        XCTAssertGreaterThanOrEqual(leader, 0)
        let before = try provider.stats()
        let runs = fleetGets(hosts, perHost: 6) {
            usleep(150_000)
            XCTAssertEqual(self.cluster.command("kill \(leader)"), "killed")
        }
        let after = try provider.stats()
        XCTAssertEqual(
            runs.filter { $0.status != 0 }.map(\.stderr), [], "no get fails: they fail over and wait out the election")
        XCTAssertEqual(Swift.Set(runs.map(\.out)).count, 1)
        XCTAssertEqual((after["refreshes"] ?? 0) - (before["refreshes"] ?? 0), 1)
        XCTAssertEqual(after["reuse_detected"] ?? 0, 0)
        // With two members left the fleet goes on; then the third comes back.
        let token = hosts[1].tv("get", "local")
        XCTAssertEqual(token.status, 0, token.stderr)
        XCTAssertEqual(provider.resourceStatus(token.out), 200)
        XCTAssertEqual(cluster.command("start \(leader)"), "started")
        XCTAssertEqual(hosts[2].tv("refresh", "local").status, 0)
    }

    func testAKilledLockHolderReleasesTheFleetWithinTheLease() throws {
        // The provider behind a proxy that swallows the first request: the first
        // refresher hangs holding the fleet lock, as a host whose network died.
        let (proxy, port) = try startFixtureServer("stall_proxy.py", [String(provider.port), "--stall-first", "1"])
        defer { proxy.terminate() }
        let a = try host("killed", leaseTTL: 3)
        let b = try host("killed", leaseTTL: 3)
        let viaProxy = provider.config.replacingOccurrences(
            of: "\(provider.base)/token\"", with: "http://127.0.0.1:\(port)/token\"")
        for h in [a, b] {
            try h.writeConfig(cluster.table(prefix: Self.prefix + "killed/", leaseTTL: 3) + "\n" + viaProxy)
        }
        // Stored through the proxy's origin: the issuer its refresh token goes to.
        try storeExpired(a)
        let before = try provider.stats()
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: Paths.binary)
        holder.arguments = ["get", "local"]
        holder.environment = a.env
        holder.standardOutput = FileHandle.nullDevice
        holder.standardError = FileHandle.nullDevice
        try holder.runNoted()
        // Wait until it holds the fleet lock.
        let locked = eventually(10) {
            !self.cluster.etcdctl("get", "--prefix", "--keys-only", Self.prefix + "killed/lock/").stdout
                .trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
        }
        XCTAssertTrue(locked, "the first get holds the fleet lock")
        let started = Date()
        let waiter = getInBackground(b)
        // etcd's lock service keeps one key per contender: the second is b's, waiting.
        let contenders = eventually(10) {
            self.cluster.etcdctl("get", "--prefix", "--keys-only", Self.prefix + "killed/lock/").stdout
                .split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }.count >= 2
        }
        XCTAssertTrue(contenders, "b waits for the fleet lock")
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
        let finished = waiter()
        let took = Date().timeIntervalSince(started)
        let r = try XCTUnwrap(finished)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertLessThan(took, 3 + 10, "taken over within lease_ttl (3 s) and a margin for this shared machine")
        let after = try provider.stats()
        XCTAssertEqual(
            (after["refreshes"] ?? 0) - (before["refreshes"] ?? 0), 1,
            "the swallowed request never reached the provider")
        XCTAssertEqual(after["reuse_detected"] ?? 0, 0, "the family survives")
        XCTAssertEqual(provider.resourceStatus(r.out), 200)
        XCTAssertEqual(a.tv("refresh", "local").status, 0, "the chain goes on")
    }

    /// The provider rotates, then the cluster loses quorum before the result
    /// is written: the host keeps it in its spool, prints it, and writes it
    /// for the fleet on its next run.
    /// Hosts a and b on `sub`; a renews through a slow proxy and the cluster
    /// loses quorum (members 0 and 1 killed, left down) before a can write:
    /// a's `get` and what it printed.
    func renewalSpooledWithoutQuorum(_ sub: String) throws -> (a: Sandbox, b: Sandbox, get: Run) {
        let log = NSTemporaryDirectory() + "tv-proxy-" + UUID().uuidString.prefix(8)
        defer { try? FileManager.default.removeItem(atPath: log) }
        let (proxy, port) = try startFixtureServer(
            "stall_proxy.py", [String(provider.port), "--delay-first", "2", "--log", log])
        defer { proxy.terminate() }
        let viaProxy = provider.config.replacingOccurrences(
            of: "\(provider.base)/token\"", with: "http://127.0.0.1:\(port)/token\"")
        let a = try host(sub), b = try host(sub)
        // Stored once a's provider goes through the proxy: a token endpoint on
        // another origin is another issuer, and gets no refresh token.
        try a.writeConfig(
            cluster.table(prefix: Self.prefix + sub + "/").replacingOccurrences(
                of: "lease_ttl", with: "timeout = 2\nlease_ttl") + "\n" + viaProxy)
        try storeExpired(a)
        let got = getInBackground(a)
        // a holds the fleet lock once its request reached the proxy (where it waits 2 s).
        XCTAssertTrue(eventually(30) { FileManager.default.fileExists(atPath: log) }, "a's renewal started")
        XCTAssertEqual(cluster.command("kill 0"), "killed")
        XCTAssertEqual(cluster.command("kill 1"), "killed")
        let r = try XCTUnwrap(got())
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("spool"), r.stderr)
        return (a, b, r)
    }

    func testARotatedTokenThatCannotBeWrittenIsSpooledAndWrittenLater() throws {
        let before = try provider.stats()
        let (a, b, r) = try renewalSpooledWithoutQuorum("spool")
        XCTAssertEqual(provider.resourceStatus(r.out), 200, "the renewed token is handed out")
        let spool = a.home + "/run/tokenvault/spool"
        let files = try FileManager.default.contentsOfDirectory(atPath: spool)
        XCTAssertEqual(files.count, 1)
        var st = stat()
        XCTAssertEqual(lstat(spool + "/" + files[0], &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
        XCTAssertEqual(cluster.command("start 0"), "started")
        XCTAssertEqual(cluster.command("start 1"), "started")
        let next = a.tv("get", "local", "--no-refresh")
        XCTAssertEqual(next.status, 0, next.stderr)
        XCTAssertTrue(next.stderr.contains("kept in the spool"), next.stderr)
        XCTAssertEqual(next.out, r.out)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: spool), [])
        XCTAssertEqual(b.tv("get", "local").out, r.out, "the other host gets it from etcd, without a refresh")
        let after = try provider.stats()
        XCTAssertEqual((after["refreshes"] ?? 0) - (before["refreshes"] ?? 0), 1)
        XCTAssertEqual(after["reuse_detected"] ?? 0, 0)
    }

    func testARefusalIsWrittenForTheWholeFleet() throws {
        let a = try host("refusal"), b = try host("refusal")
        let stale = #"{"access_token":"gone","refresh_token":"not-a-refresh-token","expires_at":1}"#
        XCTAssertEqual(a.tv("set", "local", "--provider", "local", stdin: stale).status, 0)
        let before = try provider.stats()
        XCTAssertEqual(a.tv("get", "local").status, 4)
        let other = b.tv("get", "local")
        XCTAssertEqual(other.status, 4, other.stderr)
        XCTAssertTrue(other.stderr.contains("tokenvault login local"), other.stderr)
        XCTAssertEqual(b.tv("status", "local").status, 4)
        XCTAssertEqual(
            (try provider.stats()["refresh_attempts"] ?? 0) - (before["refresh_attempts"] ?? 0), 1,
            "the second host does not ask the provider again")
    }

    // MARK: What etcd sees

    func testEtcdSeesNoSecretAndRefusesMovedOrOldValues() throws {
        let s = try host("opaque")
        let p = Self.prefix + "opaque/"
        XCTAssertEqual(
            s.tv(
                "set", "secret-service.example", "--account", "alice@example.com",
                stdin: #"{"access_token":"tok-A-visible?","refresh_token":"rt-A-visible?","expires_in":3600}"#
            ).status, 0)
        XCTAssertEqual(s.tv("set", "other.example", stdin: #"{"access_token":"tok-B","expires_in":3600}"#).status, 0)
        let dump = cluster.etcdctl("get", "--prefix", p)
        XCTAssertEqual(dump.status, 0, dump.stderr)
        for secret in ["tok-A", "rt-A", "tok-B", "secret-service.example", "alice", "other.example"] {
            XCTAssertFalse(dump.stdout.contains(secret), "etcd shows \(secret)")
        }
        let keys = cluster.etcdctl("get", "--prefix", "--keys-only", p + "c/").stdout.split(separator: "\n").map(
            String.init
        ).filter { !$0.isEmpty }
        XCTAssertEqual(keys.count, 2)
        func value(_ key: String) -> String { cluster.rawGet(key) }
        func put(_ key: String, _ v: String) { XCTAssertTrue(cluster.rawPut(key, v)) }
        // Which key is whose: rewrite B and see which value changes.
        let first = value(keys[0])
        XCTAssertEqual(s.tv("set", "other.example", stdin: #"{"access_token":"tok-B","expires_in":3600}"#).status, 0)
        let (a, b) = value(keys[0]) == first ? (keys[0], keys[1]) : (keys[1], keys[0])
        let valueA = value(a), valueB = value(b)
        // A value copied to the other key is refused.
        put(b, valueA)
        let moved = s.tv("list")
        XCTAssertEqual(moved.status, 74, moved.stderr)
        put(b, valueB)  // back, but as an old value put again: still refused
        XCTAssertEqual(s.tv("list").status, 74)
        // Delete and restore the old value: refused too (a new create revision).
        XCTAssertEqual(cluster.etcdctl("del", b).status, 0)
        put(b, valueB)
        XCTAssertEqual(s.tv("list").status, 74)
        XCTAssertEqual(cluster.etcdctl("del", b).status, 0)
        // A rolled-back value of a record tokenvault rewrote.
        let r0 = s.tv("get", "secret-service.example", "--account", "alice@example.com")
        XCTAssertEqual(r0.out, "tok-A-visible?")
        let old = value(a)
        XCTAssertEqual(
            s.tv(
                "set", "secret-service.example", "--account", "alice@example.com",
                stdin: #"{"access_token":"tok-A2","expires_in":3600}"#
            ).status, 0)
        put(a, old)
        let rolled = s.tv("get", "secret-service.example", "--account", "alice@example.com")
        XCTAssertEqual(rolled.status, 74, rolled.stderr)
        XCTAssertTrue(rolled.stderr.contains("does not authenticate"), rolled.stderr)
        XCTAssertFalse(rolled.stderr.contains("tok-A"))
        // Wrong passphrase (no cached key): 77. A damaged key record: 74.
        let wrong = s.tv("list", env: ["TOKENVAULT_PASSPHRASE": "wrong", "TOKENVAULT_KEY_TTL": "0"])
        XCTAssertEqual(wrong.status, 77, wrong.stderr)
        put(p + "kdf", Data("{}".utf8).base64EncodedString())
        XCTAssertEqual(s.tv("list", env: ["TOKENVAULT_KEY_TTL": "0"]).status, 74)
    }

    // MARK: Every command

    func testCommandsAndMigrationOnEtcd() throws {
        let s = try host("commands")
        let backend = s.tv("backend")
        XCTAssertEqual(backend.status, 0, backend.stderr)
        for e in cluster.endpoints { XCTAssertTrue(backend.stdout.contains(e), backend.stdout) }
        XCTAssertTrue(backend.stdout.contains(", leader"), backend.stdout)
        XCTAssertTrue(backend.stdout.contains("auth: user tokenvault"), backend.stdout)
        XCTAssertTrue(backend.stdout.contains("fleet key: not created yet"), backend.stdout)
        XCTAssertTrue(s.tv("backend", "--json").stdout.contains("\"in_use\":\"etcd\""))
        XCTAssertEqual(s.tv("set", "api.one.example", stdin: #"{"access_token":"one","expires_in":3600}"#).status, 0)
        XCTAssertTrue(s.tv("backend").stdout.contains("fleet key: present"))
        let list = s.tv("list")
        XCTAssertTrue(list.stdout.contains("api.one.example") && list.stdout.contains("etcd"), list.stdout)
        XCTAssertEqual(s.tv("status", "api.one.example").status, 0)
        XCTAssertEqual(s.tv("get", "api.one.example").out, "one")
        // File → etcd and back.
        XCTAssertEqual(
            s.tv("set", "api.two.example", stdin: #"{"access_token":"two"}"#, env: ["TOKENVAULT_BACKEND": "file"])
                .status, 0)
        let toEtcd = s.tv("migrate", "--to", "etcd", "--from", "file")
        XCTAssertEqual(toEtcd.status, 0, toEtcd.stderr)
        XCTAssertEqual(s.tv("get", "api.two.example").out, "two")
        XCTAssertEqual(s.tv("get", "api.two.example", env: ["TOKENVAULT_BACKEND": "file"]).status, 3)
        let toFile = s.tv("migrate", "--to", "file")
        XCTAssertEqual(toFile.status, 0, toFile.stderr)
        XCTAssertTrue(toFile.stderr.contains("moved 2 credentials from etcd to file"), toFile.stderr)
        XCTAssertEqual(s.tv("get", "api.one.example", env: ["TOKENVAULT_BACKEND": "file"]).out, "one")
        XCTAssertEqual(s.tv("get", "api.one.example", env: ["TOKENVAULT_BACKEND": "etcd"]).status, 3)
        // The config follows the credentials: new logins and gets go to the file now.
        XCTAssertTrue(toFile.stderr.contains("set backend = \"file\""), toFile.stderr)
        XCTAssertEqual(s.tv("get", "api.one.example").out, "one")
        XCTAssertEqual(s.tv("migrate", "--to", "etcd", "--from", "file").status, 0)
        XCTAssertEqual(s.tv("delete", "api.one.example").status, 0)
        XCTAssertEqual(s.tv("get", "api.one.example").status, 3)
        XCTAssertEqual(s.tv("get", "api.two.example").out, "two")
        XCTAssertEqual(s.tv("migrate", "--to", "etcd", "--from", "etcd").status, 64)
        // revoke: the provider is told, and the fleet's copy goes.
        try storeExpired(s)
        let revocationsBefore = try provider.stats()["revocations"] ?? 0
        let revoke = s.tv("revoke", "local")
        XCTAssertEqual(revoke.status, 0, revoke.stderr)
        XCTAssertEqual((try provider.stats()["revocations"] ?? 0) - revocationsBefore, 1)
        XCTAssertEqual(s.tv("get", "local").status, 3)
        let lock = s.tv("lock")
        XCTAssertEqual(lock.status, 0, lock.stderr)
        XCTAssertTrue(lock.stderr.contains("forgot the cached key of the fleet vault"), lock.stderr)
    }

    func testResourceKeysOnEtcdAndThroughMigration() throws {
        let s = try host("resources")
        for (service, token) in [
            ("mcp.example.com/a/mcp", "a"), ("mcp.example.com/b/mcp", "b"), ("mcp.example.com", "h"),
        ] {
            XCTAssertEqual(s.tv("set", service, stdin: token).status, 0)
        }
        let list = s.tv("list").stdout
        for service in ["mcp.example.com/a/mcp", "mcp.example.com/b/mcp"] {
            XCTAssertTrue(list.contains(service), list)
        }
        XCTAssertEqual(s.tv("get", "https://mcp.example.com/a/mcp/tools").out, "a")
        XCTAssertEqual(s.tv("get", "https://mcp.example.com/b/mcp").out, "b")
        XCTAssertEqual(s.tv("get", "https://mcp.example.com/c").out, "h")
        let toFile = s.tv("migrate", "--to", "file")
        XCTAssertTrue(toFile.stderr.contains("moved 3 credentials from etcd to file"), toFile.stderr)
        XCTAssertEqual(s.tv("get", "mcp.example.com/b/mcp").out, "b")
        XCTAssertEqual(s.tv("migrate", "--to", "etcd").status, 0)
        XCTAssertEqual(s.tv("get", "mcp.example.com/a/mcp", env: ["TOKENVAULT_BACKEND": "etcd"]).out, "a")
        XCTAssertEqual(s.tv("delete", "mcp.example.com/a/mcp").status, 0)
        XCTAssertEqual(s.tv("get", "https://mcp.example.com/a/mcp").out, "h", "the host's credential holds the rest")
    }

    func testAgentsOnThreeHostsAnswerAsDirectSeeEachOtherAndRenewOnce() throws {
        let hosts = try (0..<3).map { _ -> Sandbox in
            let h = try host("agents")
            try h.writeConfig(
                "min_valid = 5\n" + cluster.table(prefix: Self.prefix + "agents/", leaseTTL: 4) + "\n" + provider.config
            )
            return h
        }
        var token = try provider.obtainToken()
        token["expires_in"] = 12  // renewed ahead half its lifetime before it expires: 6 s from now
        let json = String(decoding: try JSONSerialization.data(withJSONObject: token), as: UTF8.self)
        XCTAssertEqual(hosts[0].tv("set", "local", "--provider", "local", stdin: json).status, 0)
        let direct = hosts[1].tv("get", "local", "--format", "json", "--no-refresh", env: ["TOKENVAULT_AGENT": "off"])
        let before = try provider.stats()
        for h in hosts {
            let started = h.tv("agent")
            XCTAssertEqual(started.status, 0, started.stderr)
            addTeardownBlock { h.expect("agent", "stop") }
        }
        let viaAgent = hosts[1].tv("get", "local", "--format", "json", "--no-refresh")
        XCTAssertEqual(viaAgent.stdout, direct.stdout, "the agent answers as the host would")
        XCTAssertEqual(viaAgent.stderr, direct.stderr)
        // Another host's write is seen by the next request.
        XCTAssertEqual(hosts[0].tv("set", "api.seen.example", stdin: "one").status, 0)
        XCTAssertEqual(hosts[2].tv("get", "api.seen.example").out, "one")
        XCTAssertEqual(hosts[0].tv("set", "api.seen.example", stdin: "two").status, 0)
        XCTAssertEqual(hosts[2].tv("get", "api.seen.example").out, "two")
        // Every agent has been asked for it, and it is due: one renewal for the fleet.
        DispatchQueue.concurrentPerform(iterations: 3) { i in _ = hosts[i].tv("get", "local") }
        XCTAssertTrue(try provider.waitForRefresh(after: before["refreshes"] ?? 0))
        XCTAssertTrue(eventually(15) { hosts.allSatisfy { $0.agentSettled() } }, "every host's agent settled")
        let after = try provider.stats()
        XCTAssertEqual(after["refreshes"], (before["refreshes"] ?? 0) + 1, "one renewal for three agents")
        XCTAssertEqual(after["reuse_detected"], before["reuse_detected"])
        let tokens = Set(hosts.map { $0.tv("get", "local").out })
        XCTAssertEqual(tokens.count, 1)
        XCTAssertEqual(provider.resourceStatus(tokens.first ?? ""), 200)
    }

    func testUnreachableWrongAndRefusedClusters() throws {
        let s = try host("errors")
        XCTAssertEqual(s.tv("set", "api.x.example", stdin: #"{"access_token":"x"}"#).status, 0)
        // Reached before, now gone: 75 (retry).
        let dead = "http://127.0.0.1:1,http://127.0.0.1:2"
        let gone = s.tv("get", "api.x.example", env: ["TOKENVAULT_ETCD_ENDPOINTS": dead])
        XCTAssertEqual(gone.status, 69, "never reached: a configuration error, \(gone.stderr)")
        let fresh = try host("errors")
        // Each its own process: a process keeps one etcd client (and its token) per cluster, whatever the password.
        fresh.inProcess = false
        // A wrong etcd password: 77. A wrong CA: 69. An http endpoint elsewhere: 78.
        try "not-the-password\n".write(toFile: fresh.home + "/pw", atomically: true, encoding: .utf8)
        chmod(fresh.home + "/pw", 0o600)
        try fresh.writeConfig(
            cluster.table(prefix: Self.prefix + "errors/").replacingOccurrences(
                of: cluster.passwordFile, with: fresh.home + "/pw"))
        let refused = fresh.tv("get", "api.x.example")
        XCTAssertEqual(refused.status, 77, refused.stderr)
        try fresh.writeConfig(
            cluster.table(prefix: Self.prefix + "errors/").replacingOccurrences(
                of: "ca_file = \"\(cluster.ca)\"", with: "ca_file = \"/etc/ssl/certs/ca-certificates.crt\""))
        let untrusted = fresh.tv("get", "api.x.example")
        XCTAssertEqual(untrusted.status, 69, untrusted.stderr)
        let plain = fresh.tv("get", "api.x.example", env: ["TOKENVAULT_ETCD_ENDPOINTS": "http://10.0.0.5:2379"])
        XCTAssertEqual(plain.status, 78, plain.stderr)
        // Outside its prefix the user may not go: 77.
        let outside = s.tv("get", "api.x.example", env: ["TOKENVAULT_ETCD_PREFIX": "elsewhere/"])
        XCTAssertEqual(outside.status, 77, outside.stderr)
        // A cluster this host reached before that stops answering: 75.
        let members = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(cluster.command("pids").utf8)) as? [Int])
        XCTAssertEqual(members.count, 3)
        XCTAssertEqual(cluster.command("kill 0"), "killed")
        XCTAssertEqual(cluster.command("kill 1"), "killed")
        let noQuorum = s.tv("get", "api.x.example", limit: 60)
        XCTAssertEqual(noQuorum.status, 75, noQuorum.stderr)
        XCTAssertEqual(cluster.command("start 0"), "started")
        XCTAssertEqual(cluster.command("start 1"), "started")
        XCTAssertEqual(s.tv("get", "api.x.example").out, "x")
    }

    // MARK: A spool never undoes a newer write

    /// Host A's renewal is spooled while the cluster has no quorum; host B then
    /// deletes the credential and logs in as someone else. A's next run must not
    /// bring the old session back for the fleet (docs/security.md).
    func testASpooledRenewalNeverUndoesANewerLoginOnAnotherHost() throws {
        let (a, b, r) = try renewalSpooledWithoutQuorum("newer")
        XCTAssertEqual(cluster.command("start 0"), "started")
        XCTAssertEqual(cluster.command("start 1"), "started")
        XCTAssertEqual(b.tv("delete", "local").status, 0)
        let newer = #"{"access_token":"b-newer-at","refresh_token":"b-newer-rt","expires_in":3600}"#
        XCTAssertEqual(b.tv("set", "local", "--provider", "local", stdin: newer).status, 0)
        let next = a.tv("get", "local")
        XCTAssertEqual(next.status, 0, next.stderr)
        XCTAssertEqual(next.out, "b-newer-at", "the newer login wins for the fleet: \(next.stderr)")
        XCTAssertTrue(next.stderr.contains("dropped") && next.stderr.contains("may still be valid"), next.stderr)
        XCTAssertFalse(next.stderr.contains(r.out), "no token on stderr")
        XCTAssertEqual(b.tv("get", "local").out, "b-newer-at")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: a.home + "/run/tokenvault/spool"), [])
    }

    /// A host whose [etcd] table points at `port` on loopback (a hostile
    /// member in front of a real one): no TLS files, the same auth.
    func proxiedHost(_ sub: String, port: Int) throws -> Sandbox {
        let s = Sandbox(backend: "etcd")
        s.env["TOKENVAULT_BACKEND"] = nil
        try s.writeConfig(
            """
            backend = "etcd"
            [etcd]
            endpoints = ["http://127.0.0.1:\(port)"]
            prefix = "\(Self.prefix)\(sub)/"
            username = "tokenvault"
            password_file = "\(cluster.passwordFile)"
            """)
        return s
    }

    func hostileMember(_ mode: String) throws -> (Process, Int) {
        try startFixtureServer(
            "etcd_rewrite_proxy.py", [cluster.endpoints[0], cluster.ca, cluster.cert, cluster.keyFile, mode])
    }

    func testNumbersAndTextFromAHostileMemberNeverCrashOrReachTheTerminal() throws {
        let (maxVersion, port) = try hostileMember("--max-version")
        defer { maxVersion.terminate() }
        let s = try proxiedHost("hostile", port: port)
        let r = s.tv("set", "v.example", stdin: "tok-v")
        XCTAssertEqual(r.status, 74, "refused, not a crash: \(r.stderr)")
        XCTAssertTrue(r.stderr.contains("impossible version"), r.stderr)
        let (escapes, port2) = try hostileMember("--escapes")
        defer { escapes.terminate() }
        let t = try proxiedHost("hostile", port: port2)
        for run in [t.tv("backend"), t.tv("get", "v.example")] {
            XCTAssertTrue(
                run.stdout.contains("no such thing") || run.stderr.contains("no such thing"), run.stdout + run.stderr)
            for c in ["\u{1B}", "\u{07}", "\u{202E}", "\u{2028}"] {
                XCTAssertFalse(
                    run.stdout.contains(c) || run.stderr.contains(c), (run.stdout + run.stderr).debugDescription)
            }
        }
        XCTAssertTrue(t.tv("backend").stdout.contains("etcd 3.4"), "the version, cleaned")
    }

    /// A member that hands out a token with CR LF in it would add header
    /// lines to every later request: the sign-in is refused, nothing sent with it.
    func testATokenThatCannotGoInAHeaderIsRefused() throws {
        let (proxy, port) = try hostileMember("--crlf-token")
        defer { proxy.terminate() }
        let s = try proxiedHost("crlf", port: port)
        let r = s.tv("set", "crlf.example", stdin: "tok-c")
        XCTAssertEqual(r.status, 69, r.stderr)
        XCTAssertTrue(r.stderr.contains("cannot go in a header"), r.stderr)
        XCTAssertEqual(try fixtureStats("http://127.0.0.1:\(port)/proxy-stats")["injected"], 0)
        XCTAssertEqual(s.tv("get", "crlf.example").status, 69, "and not taken from the keyring either")
        XCTAssertEqual(try fixtureStats("http://127.0.0.1:\(port)/proxy-stats")["injected"], 0)
    }

    func testTLSFilesOthersCouldSwapAreRefused() throws {
        let s = try host("tlsfiles")
        XCTAssertEqual(s.tv("set", "t.example", stdin: "tok-t").status, 0)
        for (key, path) in [("ca_file", cluster.ca), ("cert_file", cluster.cert), ("key_file", cluster.keyFile)] {
            let copy = s.home + "/" + key + ".pem"
            try FileManager.default.copyItem(atPath: path, toPath: copy)
            chmod(copy, 0o666)
            try s.writeConfig(
                cluster.table(prefix: Self.prefix + "tlsfiles/").replacingOccurrences(
                    of: "\(key) = \"\(path)\"", with: "\(key) = \"\(copy)\""))
            let r = s.tv("get", "t.example")
            XCTAssertEqual(r.status, 77, "\(key): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("etcd.\(key)") && r.stderr.contains("writable by others"), r.stderr)
            chmod(copy, 0o600)
            XCTAssertEqual(s.tv("get", "t.example").out, "tok-t", "\(key): the same file, private, is used")
            // In a directory others can write, it could be swapped for theirs between a check and a read.
            chmod(s.home, 0o777)
            let open = s.tv("get", "t.example")
            chmod(s.home, 0o755)
            XCTAssertEqual(open.status, 77, "\(key): \(open.stderr)")
            XCTAssertTrue(open.stderr.contains("which others can write"), open.stderr)
        }
    }
}
