import Foundation
import XCTest

/// `make install PREFIX=…` puts the binary, the man page and the three
/// completion scripts where man, bash-completion, zsh and fish look for
/// them; `make uninstall` takes them all away again.
final class InstallTests: XCTestCase {
    func make(_ args: [String], env: [String: String]) -> Run {
        // `-o release`: the install recipe with the binary this test run built,
        // rather than a second (optimised, minutes-long) build of the same code.
        runProcess(
            "/usr/bin/make", ["-C", Paths.root.path, "-o", "release"] + args + ["RELEASE_BIN=" + Paths.binary],
            env: env, limit: 120)
    }

    func lines(_ r: Run) -> [String] { r.stdout.split(separator: "\n").map(String.init) }

    func testInstallIsFoundByManAndEveryShellThenUninstallRemovesIt() throws {
        let s = Sandbox()
        let prefix = s.home + "/prefix with space"
        let env = ["PATH": "/usr/bin:/bin", "HOME": s.home]
        let install = make(["install", "PREFIX=" + prefix], env: env)
        XCTAssertEqual(install.status, 0, install.stderr)

        let files: [(String, Int)] = [
            ("bin/tokenvault", 0o755), ("share/man/man1/tokenvault.1", 0o644),
            ("share/bash-completion/completions/tokenvault", 0o644), ("share/zsh/site-functions/_tokenvault", 0o644),
            ("share/fish/vendor_completions.d/tokenvault.fish", 0o644),
            ("lib/systemd/user/tokenvault-agent.socket", 0o644), ("lib/systemd/user/tokenvault-agent.service", 0o644),
            ("share/doc/tokenvault/README.md", 0o644), ("share/doc/tokenvault/config.md", 0o644),
        ]
        for (path, mode) in files {
            let attributes = try FileManager.default.attributesOfItem(atPath: prefix + "/" + path)
            XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, mode, path)
        }
        XCTAssertEqual(
            try Data(contentsOf: URL(fileURLWithPath: prefix + "/share/man/man1/tokenvault.1")),
            try Data(contentsOf: Paths.root.appendingPathComponent("man/tokenvault.1")))

        // The agent's units name the installed binary, and systemd reads them without a complaint.
        let service = try String(contentsOfFile: prefix + "/lib/systemd/user/tokenvault-agent.service", encoding: .utf8)
        XCTAssertTrue(service.contains("ExecStart=\"\(prefix)/bin/tokenvault\" agent run --foreground"), service)
        let verify = runProcess(
            "/usr/bin/systemd-analyze",
            [
                "verify", "--user", prefix + "/lib/systemd/user/tokenvault-agent.socket",
                prefix + "/lib/systemd/user/tokenvault-agent.service",
            ],
            env: env.merging(["XDG_RUNTIME_DIR": s.home + "/run"]) { $1 })
        XCTAssertEqual(verify.status, 0, verify.stdout + verify.stderr)

        // As a user with PREFIX on their paths sees it.
        var user = s.env
        user["PATH"] = prefix + "/bin:/usr/bin:/bin"
        user["XDG_DATA_DIRS"] = prefix + "/share:/usr/share"
        user["MANPATH"] = prefix + "/share/man"
        XCTAssertEqual(runProcess(prefix + "/bin/tokenvault", ["--version"], env: user).out, "0.1.0")

        var manEnv = user
        manEnv["MANPAGER"] = "cat"
        manEnv["MANWIDTH"] = "80"
        XCTAssertEqual(
            runProcess("/usr/bin/man", ["-w", "tokenvault"], env: manEnv).out, prefix + "/share/man/man1/tokenvault.1")
        let page = runProcess("/usr/bin/man", ["tokenvault"], env: manEnv)
        XCTAssertEqual(page.stderr, "")
        XCTAssertTrue(page.stdout.contains("EXIT STATUS"))

        let providers = ["github", "gitlab", "google"]
        // bash-completion's loader and fish find the installed scripts on their own.
        let bash = runProcess(
            "/bin/bash",
            [Paths.fixtures.appendingPathComponent("complete.bash").path, "-", "tokenvault", "login", "g"], env: user)
        XCTAssertEqual(lines(bash), providers, bash.stderr)
        let fish = runProcess(
            "/usr/bin/python3",
            [Paths.fixtures.appendingPathComponent("complete_shell.py").path, "fish", "-", "tokenvault", "login", "g"],
            env: user, limit: 60)
        XCTAssertEqual(lines(fish), providers, fish.stderr)
        // zsh: site-functions on fpath, as it is for zsh's own prefix.
        let zsh = runProcess(
            "/usr/bin/python3",
            [
                Paths.fixtures.appendingPathComponent("complete_shell.py").path, "zsh",
                prefix + "/share/zsh/site-functions/_tokenvault", "tokenvault", "login", "g",
            ], env: user, limit: 60)
        XCTAssertEqual(lines(zsh), providers, zsh.stderr)

        let uninstall = make(["uninstall", "PREFIX=" + prefix], env: env)
        XCTAssertEqual(uninstall.status, 0, uninstall.stderr)
        let left = FileManager.default.enumerator(atPath: prefix)?.compactMap { $0 as? String }
            .filter {
                (try? FileManager.default.attributesOfItem(atPath: prefix + "/" + $0)[.type] as? FileAttributeType)
                    != .typeDirectory
            }
        XCTAssertEqual(left, [])
    }

    /// A release, an install or a package pulls in what building needs, not
    /// the test toolchain; the tests' list has it all.
    func testEachTargetInstallsOnlyWhatItNeeds() throws {
        func list(_ mode: String) -> Set<String> {
            let r = runProcess(
                "/bin/bash", [Paths.root.appendingPathComponent("scripts/deps.sh").path, mode, "--list"],
                env: ["PATH": "/usr/bin:/bin"])
            XCTAssertEqual(r.status, 0, r.stderr)
            return Set(r.stdout.split(separator: "\n").map(String.init))
        }
        let testOnly: Set = ["etcd-server", "dovecot-imapd", "gnome-keyring", "lintian", "zsh", "fish", "mandoc"]
        for mode in ["build", "deb", "demo"] {
            XCTAssertTrue(list(mode).isDisjoint(with: testOnly), "\(mode): \(list(mode).intersection(testOnly))")
            XCTAssertTrue(list(mode).contains("libsodium-dev"), mode)
        }
        XCTAssertTrue(list("deb").contains("dpkg-dev"))
        XCTAssertTrue(testOnly.isSubset(of: list("test")))
        let dry = runProcess(
            "/usr/bin/make", ["-n", "-C", Paths.root.path, "release", "deb"], env: ["PATH": "/usr/bin:/bin"])
        XCTAssertTrue(dry.stdout.contains("scripts/deps.sh build"), dry.stdout)
        XCTAssertTrue(dry.stdout.contains("scripts/deps.sh deb"), dry.stdout)
        XCTAssertFalse(dry.stdout.contains("scripts/deps.sh test"), dry.stdout)
    }
}
