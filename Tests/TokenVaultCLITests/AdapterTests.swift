import Foundation
import XCTest

/// What AdapterTests and SetupTests share: a git server, a Kubernetes API
/// endpoint, dovecot and the local provider, started once per class.
class AdapterTestCase: XCTestCase {
    nonisolated(unsafe) static var provider: LocalProvider!

    nonisolated(unsafe) static var servers: [Process] = []

    nonisolated(unsafe) static var gitPort = 0

    nonisolated(unsafe) static var kubePort = 0

    nonisolated(unsafe) static var imapPort = 0

    nonisolated(unsafe) static var work = ""

    override class func setUp() {
        work = NSTemporaryDirectory() + "tv-adapters-" + UUID().uuidString.prefix(8)
        do {
            for dir in ["git", "kube", "imap"] {
                try FileManager.default.createDirectory(atPath: work + "/" + dir, withIntermediateDirectories: true)
            }
            provider = try LocalProvider()
            let p = String(provider.port)
            let bare = runProcess(
                "/usr/bin/git", ["init", "-q", "--bare", "-b", "main", work + "/git/repo.git"],
                env: ["PATH": "/usr/bin:/bin"])
            guard bare.status == 0 else {
                throw NSError(domain: "git init", code: 1, userInfo: [NSLocalizedDescriptionKey: bare.stderr])
            }
            let git, kube, imap: Process
            (git, gitPort) = try startFixtureServer("gated_server.py", ["--provider", p, "--git", work + "/git"])
            (kube, kubePort) = try startFixtureServer("gated_server.py", ["--provider", p, "--kube", work + "/kube"])
            (imap, imapPort) = try startFixtureServer("imap_server.py", ["--provider", p, "--dir", work + "/imap"])
            servers = [git, kube, imap]
        } catch {
            fatalError("cannot start the adapter test servers: \(error)")
        }
    }

    override class func tearDown() {
        for s in servers where s.isRunning {
            s.terminate()
            s.waitUntilExit()
        }
        provider.stop()
        try? FileManager.default.removeItem(atPath: work)
    }

    var provider: LocalProvider { Self.provider }
    var gitBase: String { "http://127.0.0.1:\(Self.gitPort)" }

    /// A sandbox whose provider "local" claims the test git host.
    func sandbox(backend: String = "file", extra: String = "") throws -> Sandbox {
        let s = Sandbox(backend: backend)
        s.env["BROWSER"] = Paths.fixtures.appendingPathComponent("browser.sh").path
        try s.writeConfig(provider.config + "\ngit_hosts = [\"\(gitBase)\"]\n" + extra)
        return s
    }

    /// Runs the real git in `s`'s home with tokenvault as its only credential
    /// helper, never prompting (no terminal: setsid).
    @discardableResult
    func git(_ s: Sandbox, _ args: [String], in dir: String? = nil) -> Run {
        var env = s.env
        env["GIT_TERMINAL_PROMPT"] = "0"
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        env["GIT_AUTHOR_NAME"] = "Alice"
        env["GIT_AUTHOR_EMAIL"] = "alice@example.test"
        env["GIT_COMMITTER_NAME"] = "Alice"
        env["GIT_COMMITTER_EMAIL"] = "alice@example.test"
        let helper = ["-c", "credential.helper=", "-c", "credential.helper=!'\(Paths.binary)' git-credential"]
        return runProcess("/usr/bin/git", helper + args, env: env, limit: 60, in: dir)
    }

    func gitStats() throws -> [String: Int] { try fixtureStats(gitBase + "/stats") }

    /// The access token stored for "local", whatever its state.
    func storedToken(_ s: Sandbox) -> String {
        let json = s.tv("get", "local", "--format", "json", "--no-refresh").stdout
        let record = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        return record?["access_token"] as? String ?? ""
    }

    // MARK: kubectl

    func kubeconfig(

        _ s: Sandbox, apiVersion: String, interactive: String = "Never", service: String = "local"
    ) throws -> String {
        try kubeconfig(
            s, file: "kubeconfig-" + apiVersion.split(separator: "/").last!, user: "vault",
            users: """
                users:
                - name: vault
                  user:
                    exec:
                      apiVersion: \(apiVersion)
                      command: \(Paths.binary)
                      args: [get, \(service), --format, kubectl]
                      interactiveMode: \(interactive)

                """)
    }

    /// A kubeconfig whose one context uses the test API endpoint as `user`,
    /// with `users` (a YAML `users:` block, or nothing) between.
    func kubeconfig(_ s: Sandbox, file: String, user: String, users: String) throws -> String {
        let path = s.home + "/" + file
        let yaml = """
            apiVersion: v1
            kind: Config
            clusters:
            - name: local
              cluster:
                server: https://127.0.0.1:\(Self.kubePort)
                certificate-authority: \(Self.work)/kube/ca.pem
            \(users)contexts:
            - name: local
              context: {cluster: local, user: \(user)}
            current-context: local

            """
        try yaml.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func kubectl(_ s: Sandbox, _ config: String, env extra: [String: String] = [:]) -> Run {
        var env = s.env
        env["KUBECONFIG"] = config
        env["KUBECACHEDIR"] = s.home + "/kubecache"
        for (k, v) in extra { env[k] = v.isEmpty ? nil : v }
        return runProcess("/usr/bin/kubectl", ["get", "--raw", "/api"], env: env, limit: 60)
    }

    func gateStats(kube: Bool) throws -> [String: Int] {
        let r = runProcess(
            "/usr/bin/curl",
            ["-s", "--cacert", Self.work + "/kube/ca.pem", "https://127.0.0.1:\(Self.kubePort)/stats"], env: [:])
        return (try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Int]) ?? [:]
    }

    // MARK: mail

    func imapLogin(_ s: Sandbox, mechanism: String, user: String = "alice") -> Run {
        let sasl = s.tv("get", "local", "--format", "sasl", "--user", user, "--sasl", mechanism.lowercased())
        XCTAssertEqual(sasl.status, 0, sasl.stderr)
        return runProcess(
            "/usr/bin/python3",
            [Paths.fixtures.appendingPathComponent("imap_login.py").path, String(Self.imapPort), mechanism],
            stdin: sasl.stdout, env: ["PATH": "/usr/bin:/bin"], limit: 60)
    }
}

/// The adapters (docs/adapters.md) driven by the real clients: git (with git
/// http-backend behind a server that introspects each token at the authlib
/// provider), kubectl (an exec user against a small HTTPS API endpoint that
/// does the same) and dovecot's IMAP (its oauth2 passdb, same check). The
/// provider and the three servers start once for the class.
final class AdapterTests: AdapterTestCase {
    // MARK: git

    func testGitClonesAfterLoginPushesAfterExpiryAndRecoversFromARejectedToken() throws {
        let s = try sandbox()
        XCTAssertEqual(s.tv("login", "local", limit: 60).status, 0)
        let clone = s.home + "/clone"
        let cloned = git(s, ["clone", "-q", gitBase + "/repo.git", clone])
        XCTAssertEqual(cloned.status, 0, cloned.stderr)
        XCTAssertGreaterThan(try gitStats()["git_accepted"] ?? 0, 0)

        // The access token expires (and the provider stops honouring it): the
        // helper refreshes before answering, and git sees no failure.
        let first = storedToken(s)
        let before = try provider.stats()["refreshes"] ?? 0
        try provider.expireStored(in: s, revoke: true)
        XCTAssertEqual(git(s, ["commit", "-q", "--allow-empty", "-m", "one"], in: clone).status, 0)
        let pushed = git(s, ["push", "-q", "origin", "HEAD:main"], in: clone)
        XCTAssertEqual(pushed.status, 0, pushed.stderr)
        XCTAssertEqual(try provider.stats()["refreshes"], before + 1)
        let second = storedToken(s)
        XCTAssertNotEqual(second, first)
        XCTAssertFalse(pushed.stderr.contains(second), "no token on git's stderr")

        // The server rejects the stored (unexpired) token: git says so with
        // erase, which keeps the record and makes the next get renew it.
        provider.revokeAccess(second)
        XCTAssertEqual(git(s, ["commit", "-q", "--allow-empty", "-m", "two"], in: clone).status, 0)
        let rejected = git(s, ["push", "-q", "origin", "HEAD:main"], in: clone)
        XCTAssertNotEqual(rejected.status, 0)
        XCTAssertTrue(rejected.stderr.contains("Authentication failed"), rejected.stderr)
        XCTAssertTrue(rejected.stderr.contains("rejected the token"), rejected.stderr)
        XCTAssertFalse(rejected.stderr.contains(second))
        XCTAssertEqual(storedToken(s), second, "erase deletes nothing")
        XCTAssertEqual(s.tv("status", "local").status, 0, "still renewable")
        XCTAssertEqual(try provider.stats()["refreshes"], before + 1, "erase itself does not refresh")
        let again = git(s, ["push", "-q", "origin", "HEAD:main"], in: clone)
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertEqual(try provider.stats()["refreshes"], before + 2)
        let log = runProcess(
            "/usr/bin/git", ["--git-dir", Self.work + "/git/repo.git", "log", "--format=%s", "main"], env: s.env)
        XCTAssertEqual(log.out, "two\none")
    }

    func testGitCredentialAnswersPerProtocolWithExpiryAndAccounts() throws {
        let s = try sandbox()
        try provider.storeExpired(in: s)
        let host = "127.0.0.1:\(Self.gitPort)"
        let r = s.tv(
            "git-credential", "get",
            stdin: "protocol=http\nhost=\(host)\nwwwauth[]=Basic realm=\"x\"\ncapability[]=authtype\n\n")
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "username=oauth2")
        let token = storedToken(s)
        XCTAssertEqual(lines.dropFirst().first, "password=\(token)", "refreshed first, then answered")
        let expiry = lines.first { $0.hasPrefix("password_expiry_utc=") }.flatMap { Int($0.dropFirst(20)) } ?? 0
        XCTAssertGreaterThan(expiry, Int(Date().timeIntervalSince1970) + 3000)
        XCTAssertEqual(r.stderr, "")

        // git's own front end (url= expanded, the username kept) gets the same answer.
        var env = s.env
        env["GIT_TERMINAL_PROMPT"] = "0"
        let viaGit = runProcess(
            "/usr/bin/git",
            [
                "-c", "credential.helper=", "-c", "credential.helper=!'\(Paths.binary)' git-credential", "credential",
                "fill",
            ],
            stdin: "url=\(gitBase)/repo.git\nusername=alice\n\n", env: env)
        XCTAssertEqual(viaGit.status, 0, viaGit.stderr)
        XCTAssertTrue(viaGit.stdout.contains("username=alice\npassword=\(token)\n"), "git kept the username it sent")

        // A second login stored under the username git sends is the one answered.
        XCTAssertEqual(s.tv("set", "local", "--account", "alice", stdin: #"{"access_token":"alice-token"}"#).status, 0)
        let alice = s.tv("git-credential", "get", stdin: "protocol=http\nhost=\(host)\nusername=alice\n")
        XCTAssertEqual(alice.stdout, "username=alice\npassword=alice-token\n")
        let chosen = s.tv(
            "git-credential", "--account", "default", "get", stdin: "protocol=http\nhost=\(host)\nusername=alice\n")
        XCTAssertTrue(chosen.stdout.contains("password=\(token)"), "--account wins")

        // The same host over https is another remote: no answer.
        XCTAssertEqual(s.tv("git-credential", "get", stdin: "protocol=https\nhost=\(host)\n").stdout, "")
    }

    func testGitCredentialBadInputIsQuietOrClearAndChangesNothing() throws {
        let s = try sandbox()
        try provider.storeExpired(in: s)
        s.expect("get", "local")
        let token = storedToken(s)
        let record = s.tv("get", "local", "--format", "json").stdout
        let listed = s.tv("list").stdout.split(separator: "\n").count
        let host = "host=127.0.0.1:\(Self.gitPort)"
        func helper(_ action: String, _ input: String, env: [String: String] = [:]) -> Run {
            let r = s.tv("git-credential", action, stdin: input, env: env, limit: 30)
            XCTAssertFalse(r.stderr.contains(token), "no secret on stderr")
            XCTAssertLessThanOrEqual(r.stderr.split(separator: "\n").count, 2, r.stderr)
            return r
        }
        // An unknown host: nothing at all, so git asks its next helper.
        let unknown = helper("get", "protocol=https\nhost=git.example.org\n")
        XCTAssertEqual([unknown.status], [0])
        XCTAssertEqual(unknown.stdout + unknown.stderr, "")
        // No protocol or host (e.g. a certificate request): nothing.
        XCTAssertEqual(helper("get", "protocol=cert\npath=/etc/x.pem\n").stdout, "")
        // Malformed requests: one clear line, 65.
        for bad in [
            "protocol=http\nno equals sign\n", "=value\n", "protocol=http\0\nhost=x\n",
            String(repeating: "a=b\n", count: 20000),
        ] {
            let r = helper("get", bad)
            XCTAssertEqual(r.status, 65, "\(bad.prefix(20)): \(r.stderr)")
            XCTAssertTrue(r.stderr.hasPrefix("tokenvault: error: "), r.stderr)
            XCTAssertEqual(r.stdout, "")
        }
        // Unknown actions are ignored, as git asks of helpers.
        XCTAssertEqual(helper("approve", "protocol=http\n\(host)\n").status, 0)
        // store keeps nothing; erase of a password that is not the stored token changes nothing.
        XCTAssertEqual(helper("store", "protocol=http\n\(host)\nusername=x\npassword=typed-by-hand\n").status, 0)
        XCTAssertEqual(helper("erase", "protocol=http\n\(host)\nusername=x\npassword=someone-elses\n").status, 0)
        XCTAssertEqual(s.tv("get", "local", "--format", "json").stdout, record, "nothing altered")
        XCTAssertEqual(s.tv("list").stdout.split(separator: "\n").count, listed, "nothing added")
        // A locked vault without a terminal: no prompt, no answer, one line, 77.
        let locked = helper("get", "protocol=http\n\(host)\n", env: ["TOKENVAULT_PASSPHRASE": ""])
        XCTAssertEqual(locked.status, 77, locked.stderr)
        XCTAssertEqual(locked.stdout, "")
        XCTAssertTrue(locked.stderr.contains("no passphrase source and no terminal"), locked.stderr)
        // A login required: no answer, the hint on stderr, 0.
        XCTAssertEqual(
            s.tv("set", "local", "--provider", "local", stdin: #"{"access_token":"dead","expires_at":1}"#).status, 0)
        let login = helper("get", "protocol=http\n\(host)\n")
        XCTAssertEqual([login.status], [0])
        XCTAssertEqual(login.stdout, "")
        XCTAssertTrue(login.stderr.contains("tokenvault login local"), login.stderr)
        // Nothing stored: no answer, and where to log in.
        XCTAssertEqual(s.tv("delete", "local").status, 0)
        let none = helper("get", "protocol=http\n\(host)\n")
        XCTAssertEqual([none.status], [0])
        XCTAssertEqual(none.stdout, "")
        XCTAssertTrue(none.stderr.contains("no credential stored"), none.stderr)
        // A plain-http git host that is not loopback is a config error.
        try s.writeConfig(provider.config + "\ngit_hosts = [\"http://git.example.org\"]\n")
        let clear = helper("get", "protocol=http\nhost=git.example.org\n")
        XCTAssertEqual(clear.status, 78, clear.stderr)
    }

    func testKubectlExecUserGetsTheTokenAndARenewedOneAfterExpiry() throws {
        let s = try sandbox()
        try provider.storeExpired(in: s)
        for version in ["client.authentication.k8s.io/v1beta1", "client.authentication.k8s.io/v1"] {
            let config = try kubeconfig(s, apiVersion: version)
            // Expired, and no longer honoured by the provider: kubectl gets a renewed token.
            try provider.expireStored(in: s, revoke: true)
            let before = try provider.stats()["refreshes"] ?? 0
            let r = kubectl(s, config)
            XCTAssertEqual(r.status, 0, "\(version): \(r.stderr)")
            XCTAssertTrue(r.stdout.contains("\"APIVersions\""), r.stdout)
            XCTAssertEqual(try provider.stats()["refreshes"], before + 1, "renewed before kubectl got it")
            // Valid: the same token again, no refresh.
            let again = kubectl(s, config)
            XCTAssertEqual(again.status, 0, again.stderr)
            XCTAssertEqual(try provider.stats()["refreshes"], before + 1)
        }
        // What kubectl reads: the version it asked for, and the expiry in RFC 3339.
        let info =
            #"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":false}}"#
        let out = s.tv("get", "local", "--format", "kubectl", env: ["KUBERNETES_EXEC_INFO": info])
        let cred = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any]
        XCTAssertEqual(cred?["apiVersion"] as? String, "client.authentication.k8s.io/v1")
        XCTAssertEqual(cred?["kind"] as? String, "ExecCredential")
        let status = cred?["status"] as? [String: Any]
        XCTAssertEqual(status?["token"] as? String, storedToken(s))
        let expiresAt = Int(s.tv("get", "local", "--field", "expires_at").out) ?? 0
        let f = ISO8601DateFormatter()
        XCTAssertEqual(
            (status?["expirationTimestamp"] as? String).flatMap(f.date(from:)),
            Date(timeIntervalSince1970: TimeInterval(expiresAt)))
        XCTAssertTrue((status?["expirationTimestamp"] as? String)?.hasSuffix("Z") == true)
    }

    func testKubectlBadCasesFailClearlyWithoutAPrompt() throws {
        let s = try sandbox()
        try provider.storeExpired(in: s)
        let config = try kubeconfig(s, apiVersion: "client.authentication.k8s.io/v1")
        // A locked vault, and kubectl says nobody can answer: no prompt, kubectl fails at once.
        let locked = kubectl(s, config, env: ["TOKENVAULT_PASSPHRASE": ""])
        XCTAssertNotEqual(locked.status, 0)
        XCTAssertTrue(locked.stderr.contains("tokenvault: error: the vault is locked"), locked.stderr)
        // Nothing stored for the service kubectl names: exit 3, kubectl reports it.
        let missing = kubectl(
            s, try kubeconfig(s, apiVersion: "client.authentication.k8s.io/v1beta1", service: "nothing.example"))
        XCTAssertNotEqual(missing.status, 0)
        XCTAssertTrue(missing.stderr.contains("no credential stored for nothing.example"), missing.stderr)
        XCTAssertEqual((try gateStats(kube: true))["kube_rejected"] ?? 0, 0, "no request went out without a token")
        // An ExecCredential version tokenvault does not write, and a malformed request: 65.
        for info in [#"{"apiVersion":"client.authentication.k8s.io/v2"}"#, "not json"] {
            let r = s.tv("get", "local", "--format", "kubectl", env: ["KUBERNETES_EXEC_INFO": info])
            XCTAssertEqual(r.status, 65, r.stderr)
            XCTAssertEqual(r.stdout, "")
        }
        XCTAssertEqual(s.tv("get", "local", "--format", "kubectl", "--field", "scope").status, 64)
    }

    func testDovecotTakesTheSASLResponsesAndCurlTheBareToken() throws {
        let s = try sandbox()
        try provider.storeExpired(in: s)
        for mechanism in ["XOAUTH2", "OAUTHBEARER"] {
            let r = imapLogin(s, mechanism: mechanism)
            XCTAssertEqual(r.out, "OK", "\(mechanism): \(r.stdout)")
        }
        // curl's IMAP client with the bare token, kept out of argv (a config on stdin).
        let curl = s.shell(
            #"printf 'oauth2-bearer = "%s"\n' "$("$TV" get local)" | curl -s -K - --user alice "imap://127.0.0.1:\#(Self.imapPort)/" -X 'EXAMINE INBOX'"#
        )
        XCTAssertEqual(curl.status, 0, curl.stderr)
        XCTAssertTrue(curl.stdout.contains("EXISTS"), curl.stdout)
        // After a refresh (the old token no longer honoured) the new one logs in.
        let before = try provider.stats()["refreshes"] ?? 0
        try provider.expireStored(in: s, revoke: true)
        XCTAssertEqual(imapLogin(s, mechanism: "XOAUTH2").out, "OK")
        XCTAssertEqual(try provider.stats()["refreshes"], before + 1)
        // The server really checks: another user's name, or a revoked token, is refused.
        XCTAssertTrue(imapLogin(s, mechanism: "XOAUTH2", user: "mallory").out.hasPrefix("NO"))
        provider.revokeAccess(storedToken(s))
        XCTAssertTrue(imapLogin(s, mechanism: "OAUTHBEARER").out.hasPrefix("NO"))
    }

    func testSASLResponsesAreExactlyTheMechanismsBytes() throws {
        let s = try sandbox()
        XCTAssertEqual(s.tv("set", "mail.example", stdin: #"{"access_token":"ya29.tok"}"#).status, 0)
        func decoded(_ args: String...) -> String {
            let r = s.run(["get", "mail.example", "--format", "sasl"] + args)
            XCTAssertEqual(r.status, 0, r.stderr)
            return String(decoding: Data(base64Encoded: r.out) ?? Data(), as: UTF8.self)
        }
        XCTAssertEqual(decoded("--user", "a@b.example"), "user=a@b.example\u{1}auth=Bearer ya29.tok\u{1}\u{1}")
        XCTAssertEqual(
            decoded("--user", "a,b=c@d.example", "--sasl", "oauthbearer"),
            "n,a=a=2Cb=3Dc@d.example,\u{1}auth=Bearer ya29.tok\u{1}\u{1}")
        for bad in [["--user", ""], ["--user", "a b@c"], ["--user", "a\u{1}b"]] {
            XCTAssertEqual(s.run(["get", "mail.example", "--format", "sasl"] + bad).status, 64, "\(bad)")
        }
        XCTAssertEqual(s.tv("get", "mail.example", "--format", "sasl").status, 64, "--user is needed")
        XCTAssertEqual(s.tv("get", "mail.example", "--sasl", "xoauth2").status, 64, "--sasl only with --format sasl")
    }
}
