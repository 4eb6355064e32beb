import Foundation
import XCTest

/// `setup git` and `setup kubectl` against the real git and kubectl of
/// `AdapterTestCase` (its git server, its Kubernetes API endpoint, its provider).
final class SetupTests: AdapterTestCase {
    func plainGit(_ s: Sandbox, _ args: [String]) -> Run {
        var env = s.env
        env["GIT_TERMINAL_PROMPT"] = "0"
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        return runProcess("/usr/bin/git", args, env: env, limit: 60)
    }

    func testSetupGitAloneMakesACloneWorkAndNoOtherHelperGetsTheToken() throws {
        let s = try sandbox()
        XCTAssertEqual(s.tv("login", "local", limit: 60).status, 0)
        // A helper set earlier, as many have: it must never receive the token.
        XCTAssertEqual(plainGit(s, ["config", "--global", "credential.helper", "store"]).status, 0)
        let dry = s.tv("setup", "git", "local", "--global", "--dry-run")
        XCTAssertEqual(dry.status, 0, dry.stderr)
        XCTAssertTrue(dry.stdout.contains("git config --global --add credential.\(gitBase).helper ''"), dry.stdout)
        XCTAssertEqual(
            plainGit(s, ["config", "--global", "--get-all", "credential.\(gitBase).helper"]).status, 1,
            "a dry run writes nothing")
        let setup = s.tv("setup", "git", "local", "--global")
        XCTAssertEqual(setup.status, 0, setup.stderr)
        XCTAssertTrue(setup.stderr.contains("\(gitBase): git asks tokenvault (provider local)"), setup.stderr)
        XCTAssertTrue(s.tv("setup", "git", "local", "--global").stderr.contains("already set up"), "idempotent")
        XCTAssertEqual(
            plainGit(s, ["config", "--global", "--get-all", "credential.\(gitBase).helper"]).stdout,
            "\n!'\(Self.realBinary)' git-credential\n", "an empty helper first, then tokenvault")
        // git alone, as a user runs it: the clone works through tokenvault.
        let cloned = plainGit(s, ["clone", "-q", gitBase + "/repo.git", s.home + "/clone"])
        XCTAssertEqual(cloned.status, 0, cloned.stderr)
        let stored = (try? String(contentsOfFile: s.home + "/.git-credentials", encoding: .utf8)) ?? ""
        XCTAssertFalse(stored.contains(storedToken(s)), "the store helper got nothing: \(stored)")
        XCTAssertTrue(stored.isEmpty, stored)
        // Undone: git no longer asks tokenvault.
        XCTAssertEqual(s.tv("setup", "git", "local", "--global", "--undo").status, 0)
        XCTAssertEqual(plainGit(s, ["config", "--global", "--get-all", "credential.\(gitBase).helper"]).status, 1)
        // A host nobody claims, and outside a repository without --global.
        XCTAssertEqual(s.tv("setup", "git", "git.nowhere.example", "--global").status, 64)
        // (Run from the sandbox's home, which is no repository: never the checkout the tests run in.)
        var env = s.env
        env["GIT_CEILING_DIRECTORIES"] = s.home
        let outside = runProcess(Paths.binary, ["setup", "git", "local"], env: env, in: s.home)
        XCTAssertEqual(outside.status, 64, outside.stderr)
        XCTAssertTrue(outside.stderr.contains("not in a git repository"), outside.stderr)
    }

    /// A tokenvault installed where the path has an apostrophe: the helper
    /// setup writes is one shell word, and git runs it.
    func testSetupGitQuotesABinaryPathWithAnApostrophe() throws {
        let s = try sandbox()
        XCTAssertEqual(s.tv("login", "local", limit: 60).status, 0)
        let dir = s.home + "/it's here"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.realBinary, toPath: dir + "/tokenvault")
        let setup = runProcess(dir + "/tokenvault", ["setup", "git", "local", "--global"], env: s.env)
        XCTAssertEqual(setup.status, 0, setup.stderr)
        let cloned = plainGit(s, ["clone", "-q", gitBase + "/repo.git", s.home + "/clone"])
        XCTAssertEqual(cloned.status, 0, cloned.stderr)
    }

    /// The build's tokenvault, as setup writes it (its real path).
    static var realBinary: String { URL(fileURLWithPath: Paths.binary).resolvingSymlinksInPath().path }

    func testSetupKubectlWritesAnExecUserKubectlUses() throws {
        let s = try sandbox()
        try provider.storeExpired(in: s)
        let config = try kubeconfig(s, file: "kubeconfig", user: "dev", users: "")
        let env = ["KUBECONFIG": config]
        let dry = s.tv("setup", "kubectl", "dev", "--service", "local", "--dry-run", env: env)
        XCTAssertTrue(
            dry.stdout.hasPrefix(
                "kubectl config set-credentials dev --exec-api-version=client.authentication.k8s.io/v1"), dry.stdout)
        let setup = s.tv("setup", "kubectl", "dev", "--service", "local", env: env)
        XCTAssertEqual(setup.status, 0, setup.stderr)
        let r = kubectl(s, config)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("\"APIVersions\""), r.stdout)
        XCTAssertEqual(s.tv("setup", "kubectl", "dev", "--undo", env: env).status, 0)
        XCTAssertNotEqual(kubectl(s, config).status, 0, "no user, no token")
        XCTAssertEqual(s.tv("setup", "kubectl", "dev").status, 64, "--service is needed")
    }

    func testSetupNamesAndPutsBackTheHelpersItReplaces() throws {
        let s = try sandbox()
        XCTAssertEqual(s.tv("login", "local", limit: 60).status, 0)
        let key = "credential.\(gitBase).helper"
        XCTAssertEqual(plainGit(s, ["config", "--global", "--add", key, "store --file=/tmp/x"]).status, 0)
        XCTAssertEqual(plainGit(s, ["config", "--global", "--add", key, "cache"]).status, 0)
        let setup = s.tv("setup", "git", "local", "--global")
        XCTAssertEqual(setup.status, 0, setup.stderr)
        XCTAssertTrue(
            setup.stderr.contains("replaces \(key) 'store --file=/tmp/x', 'cache' (kept aside; --undo puts it back)"),
            setup.stderr)
        XCTAssertEqual(
            plainGit(s, ["config", "--global", "--get-all", key]).stdout, "\n!'\(Self.realBinary)' git-credential\n")
        XCTAssertTrue(s.tv("setup", "git", "local", "--global").stderr.contains("already set up"))
        let undo = s.tv("setup", "git", "local", "--global", "--undo")
        XCTAssertEqual(undo.status, 0, undo.stderr)
        XCTAssertTrue(undo.stderr.contains("put back \(key) 'store --file=/tmp/x', 'cache'"), undo.stderr)
        XCTAssertEqual(plainGit(s, ["config", "--global", "--get-all", key]).stdout, "store --file=/tmp/x\ncache\n")
        XCTAssertEqual(
            plainGit(s, ["config", "--global", "--get-regexp", "^tokenvault\\."]).status, 1, "nothing of ours is left")
    }

    func testGitAndKubectlNeverSeeThePassphrase() throws {
        let s = try sandbox()
        try provider.storeExpired(in: s)
        // git and kubectl that write down their environment, then run the real ones.
        let bin = s.home + "/spy"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let kubectl = runProcess("/bin/sh", ["-c", "command -v kubectl"], env: s.env).out
        for (name, real) in [("git", "/usr/bin/git"), ("kubectl", kubectl)] {
            let script = "#!/bin/sh\nenv >> \"$HOME/\(name).env\"\nexec '\(real)' \"$@\"\n"
            try script.write(toFile: bin + "/" + name, atomically: true, encoding: .utf8)
            chmod(bin + "/" + name, 0o755)
        }
        let env = ["PATH": bin + ":" + (s.env["PATH"] ?? ""), "KUBECONFIG": s.home + "/kubeconfig"]
        XCTAssertEqual(s.tv("setup", "git", "local", "--global", env: env).status, 0)
        XCTAssertEqual(s.tv("setup", "kubectl", "dev", "--service", "local", env: env).status, 0)
        for name in ["git", "kubectl"] {
            let seen = try String(contentsOfFile: s.home + "/\(name).env", encoding: .utf8)
            XCTAssertTrue(seen.contains("HOME="), "\(name) ran")
            XCTAssertFalse(seen.contains("TOKENVAULT_PASSPHRASE"), "\(name) saw the passphrase variable")
            XCTAssertFalse(seen.contains("correct horse"), name)
        }
    }
}
