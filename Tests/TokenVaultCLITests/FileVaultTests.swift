import Foundation
import TokenVaultKit
import XCTest

/// The encrypted file backend end to end: permissions, concurrency, crashes,
/// passphrase sources, the key cache, and decryption by another binding.
final class FileVaultTests: XCTestCase {
    func mode(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? Int) ?? -1
    }

    func testPermissionsUnderUmask000() {
        let s = Sandbox()
        let r = s.shell(#"umask 000; echo tok | "$TV" set api.x.com"#)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(mode(s.vault), 0o600)
        XCTAssertEqual(mode((s.vault as NSString).deletingLastPathComponent), 0o700)
        XCTAssertEqual(s.shell(#"umask 000; echo tok2 | "$TV" set api.y.com"#).status, 0)
        XCTAssertEqual(mode(s.vault), 0o600)
    }

    func testUnsafePermissionsSymlinksAreRefused() {
        let s = Sandbox()
        s.expect("set", "api.x.com", stdin: "tok\n")
        let dir = (s.vault as NSString).deletingLastPathComponent
        chmod(s.vault, 0o644)
        var r = s.tv("get", "api.x.com")
        XCTAssertEqual(r.status, 77, r.stderr)
        XCTAssertTrue(r.stderr.contains("chmod 600"), r.stderr)
        chmod(s.vault, 0o600)
        chmod(dir, 0o755)
        XCTAssertEqual(s.tv("get", "api.x.com").status, 77)
        XCTAssertEqual(s.tv("set", "api.y.com", stdin: "t\n").status, 77)
        chmod(dir, 0o700)
        try! FileManager.default.moveItem(atPath: s.vault, toPath: dir + "/real")
        symlink(dir + "/real", s.vault)
        r = s.tv("get", "api.x.com")
        XCTAssertEqual(r.status, 77)
        XCTAssertTrue(r.stderr.contains("symbolic link"), r.stderr)
        XCTAssertEqual(s.tv("set", "api.y.com", stdin: "t\n").status, 77)
    }

    func testAnotherOwnersVaultOrDirectoryIsRefused() throws {
        let s = Sandbox()
        s.expect("set", "api.x.com", stdin: "tok\n")
        let dir = (s.vault as NSString).deletingLastPathComponent
        let me = getuid(), nobody: uid_t = 65534
        guard me != nobody else { return XCTFail("the tests need to run as someone other than nobody") }
        // Changing the owner needs root (CI and this machine run as root); as another user it is not allowed.
        guard chown(s.vault, nobody, gid_t(nobody)) == 0 else {
            return XCTFail("cannot chown in this environment: \(String(cString: strerror(errno)))")
        }
        var r = s.tv("get", "api.x.com")
        XCTAssertEqual(r.status, 77, r.stderr)
        XCTAssertTrue(r.stderr.contains("another user"), r.stderr)
        XCTAssertEqual(chown(s.vault, me, getgid()), 0)
        XCTAssertEqual(chown(dir, nobody, gid_t(nobody)), 0)
        r = s.tv("get", "api.x.com")
        XCTAssertEqual(r.status, 77, r.stderr)
        XCTAssertEqual(chown(dir, me, getgid()), 0)
        XCTAssertEqual(s.tv("get", "api.x.com").out, "tok")
    }

    func testNoHostOrTokenVisibleInTheFile() {
        let s = Sandbox()
        s.expect("set", "api.secret-host.example", stdin: #"{"access_token":"VISIBLETOKEN","uid":"USERID"}"#)
        let bytes = FileManager.default.contents(atPath: s.vault)!
        let text = String(decoding: bytes, as: UTF8.self)
        for needle in ["secret-host", "VISIBLETOKEN", "USERID", "access_token"] {
            XCTAssertFalse(text.contains(needle), needle)
        }
        // A fresh nonce per write: the same content never encrypts the same way twice.
        s.expect("set", "api.secret-host.example", stdin: #"{"access_token":"VISIBLETOKEN","uid":"USERID"}"#)
        let again = FileManager.default.contents(atPath: s.vault)!
        XCTAssertEqual(bytes.count, again.count)
        XCTAssertNotEqual(bytes.subdata(in: 40..<64), again.subdata(in: 40..<64))
    }

    /// `key_ttl` in the config, the variable over it, and one meaning and
    /// one wording for 0: never cached.
    func testKeyTTLInTheConfigAndZeroMeansNeverCached() throws {
        let s = Sandbox()
        s.env["TOKENVAULT_KEY_TTL"] = nil
        try s.writeConfig("key_ttl = 0\n")
        s.expect("set", "api.x.com", stdin: "tok\n")
        let r = s.expect("unlock", stderr: ["key_ttl is 0: the key is never cached"])
        XCTAssertFalse(r.stderr.contains("cached for"), r.stderr)
        XCTAssertFalse(r.stderr.contains("warning"), r.stderr)
        s.expect("doctor", status: 0, stdout: ["key never cached (key_ttl 0)"])
        try s.writeConfig("key_ttl = 600\n")
        s.expect(
            "unlock", env: ["TOKENVAULT_KEY_TTL": "0"], stderr: ["TOKENVAULT_KEY_TTL is 0: the key is never cached"])
        try s.writeConfig("key_ttl = -1\n")
        s.expect("get", "api.x.com", status: 78, stderr: ["key_ttl must be a whole number of seconds from 0"])
        try s.writeConfig("key_ttl = \"900\"\n")
        s.expect("get", "api.x.com", status: 78, stderr: ["key_ttl must be"])
    }

    func testWrongPassphraseAndNoSource() {
        let s = Sandbox()
        s.expect("set", "api.x.com", stdin: "tok\n")
        let wrong = s.tv("get", "api.x.com", env: ["TOKENVAULT_PASSPHRASE": "wrong"])
        XCTAssertEqual(wrong.status, 77)
        XCTAssertTrue(wrong.stderr.contains("wrong passphrase"), wrong.stderr)
        XCTAssertEqual(wrong.stdout, "")
        let none = s.tv("get", "api.x.com", env: ["TOKENVAULT_PASSPHRASE": ""])
        XCTAssertEqual(none.status, 77)
        XCTAssertTrue(none.stderr.contains("hint: run tokenvault unlock on a terminal"), none.stderr)
        XCTAssertTrue(none.stderr.contains("or set TOKENVAULT_PASSPHRASE_FILE"), none.stderr)
        XCTAssertEqual(s.tv("set", "api.y.com", stdin: "t\n", env: ["TOKENVAULT_PASSPHRASE": ""]).status, 77)
        XCTAssertEqual(s.tv("get", "api.x.com").out, "tok")
    }

    func testPassphraseSourcesInOrder() throws {
        let s = Sandbox()
        s.expect("set", "api.x.com", stdin: "tok\n")
        let file = s.home + "/pass"
        try "correct horse\n".write(toFile: file, atomically: true, encoding: .utf8)
        XCTAssertEqual(chmod(file, 0o600), 0, "a passphrase file others can read is refused")
        // The file wins over a wrong variable; the command wins over a wrong variable.
        XCTAssertEqual(
            s.tv("get", "api.x.com", env: ["TOKENVAULT_PASSPHRASE_FILE": file, "TOKENVAULT_PASSPHRASE": "bad"]).out,
            "tok")
        XCTAssertEqual(
            s.tv(
                "get", "api.x.com",
                env: ["TOKENVAULT_PASSPHRASE_COMMAND": "echo 'correct horse'", "TOKENVAULT_PASSPHRASE": "bad"]
            ).out, "tok")
        XCTAssertEqual(
            s.tv(
                "get", "api.x.com",
                env: ["TOKENVAULT_PASSPHRASE_FILE": file, "TOKENVAULT_PASSPHRASE_COMMAND": "echo bad"]
            ).out, "tok")
        XCTAssertEqual(s.tv("get", "api.x.com", env: ["TOKENVAULT_PASSPHRASE_COMMAND": "exit 3"]).status, 77)
        XCTAssertEqual(s.tv("get", "api.x.com", env: ["TOKENVAULT_PASSPHRASE_FILE": s.home + "/missing"]).status, 77)
    }

    func testDefaultKDFIsAtLeastModerate() {
        let s = Sandbox()
        s.expect("set", "api.x.com", stdin: "tok\n", env: ["TOKENVAULT_KDF_PROFILE": ""])
        let b = [UInt8](FileManager.default.contents(atPath: s.vault)!)
        let ops = b[12..<16].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let mem = b[16..<24].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        XCTAssertGreaterThanOrEqual(ops, 3)
        XCTAssertGreaterThanOrEqual(mem, 256 << 20)
        XCTAssertEqual(s.tv("set", "api.y.com", stdin: "t\n", env: ["TOKENVAULT_KDF_PROFILE": "bogus"]).status, 78)
    }

    func testEveryByteFlipAndTruncationIsRefusedWith74() throws {
        let s = Sandbox()
        s.expect("set", "api.x.com", stdin: "tok\n")
        let good = [UInt8](FileManager.default.contents(atPath: s.vault)!)
        // Every header byte, and a sample through the ciphertext (the unit tests flip every byte).
        var positions = Array(0..<96) + Array(stride(from: 96, to: good.count, by: 37)) + [good.count - 1]
        positions = Array(Set(positions)).sorted()
        for i in positions {
            var bad = good
            bad[i] ^= 0x01
            try Data(bad).write(to: URL(fileURLWithPath: s.vault))
            let r = s.tv("get", "api.x.com")
            XCTAssertEqual(r.status, 74, "byte \(i): \(r.stderr)")
            XCTAssertEqual(r.stdout, "", "byte \(i)")
        }
        for length in [0, 1, 8, 63, 95, 96, 111, good.count / 2, good.count - 1] {
            try Data(good[0..<length]).write(to: URL(fileURLWithPath: s.vault))
            let r = s.tv("get", "api.x.com")
            XCTAssertEqual(r.status, 74, "length \(length): \(r.stderr)")
            XCTAssertEqual(r.stdout, "")
        }
        try Data(good).write(to: URL(fileURLWithPath: s.vault))
        XCTAssertEqual(s.tv("get", "api.x.com").out, "tok")
    }

    func testConcurrentWritersLoseNothing() {
        let s = Sandbox()
        s.expect("set", "seed.example.com", stdin: "seed\n")
        let results = Locked<[Int32]>([])
        DispatchQueue.concurrentPerform(iterations: 20) { i in
            let r = s.tv("set", "api\(i).example.com", stdin: "token-\(i)\n")
            results.mutate { $0.append(r.status) }
        }
        XCTAssertEqual(results.value, [Int32](repeating: 0, count: 20))
        let list = s.tv("list", "--json")
        let rows = (try? JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]]) ?? []
        XCTAssertEqual(rows.count, 21, list.stdout)
        for i in 0..<20 { XCTAssertEqual(s.tv("get", "api\(i).example.com").out, "token-\(i)") }
    }

    func testSIGKILLDuringWritesNeverLeavesAnUnreadableVault() throws {
        let s = Sandbox()
        s.expect("set", "keep.example.com", stdin: "keep\n")
        for round in 0..<12 {
            // A writer loop killed at an arbitrary moment.
            let script =
                #"i=0; while :; do echo "t$i" | "$TV" set "w$((i % 5)).example.com" || exit 1; i=$((i+1)); done"#
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/bin/sh")
            p.arguments = ["-c", script]
            var env = s.env
            env["TV"] = Paths.binary
            p.environment = env
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.runNoted()
            usleep(useconds_t(150_000 + (round * 97_000) % 700_000))
            // Kill the loop and whatever tokenvault it is running, mid-write or not.
            _ = runProcess("/usr/bin/pkill", ["-KILL", "-P", String(p.processIdentifier)], env: [:])
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            let r = s.tv("get", "keep.example.com")
            XCTAssertEqual(r.status, 0, "round \(round): \(r.stderr)")
            XCTAssertEqual(r.out, "keep")
        }
        // The next write clears leftovers of killed writers.
        s.expect("set", "last.example.com", stdin: "x\n")
        let dir = (s.vault as NSString).deletingLastPathComponent
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.contains(".tmp.") }
        XCTAssertEqual(leftovers, [])
    }

    func testKeyCacheSkipsTheKDFAndLockForgetsIt() {
        let s = Sandbox()
        let vault = s.home + "/cached/vault"
        let env = ["TOKENVAULT_VAULT": vault, "TOKENVAULT_KEY_TTL": "60"]
        XCTAssertEqual(s.tv("set", "api.x.com", stdin: "tok\n", env: env).status, 0)
        // With the key cached, no passphrase source is needed at all.
        let cached = s.tv("get", "api.x.com", env: env.merging(["TOKENVAULT_PASSPHRASE": ""]) { $1 })
        XCTAssertEqual(cached.out, "tok", cached.stderr)
        // lock forgets this vault's key only; --all forgets every one.
        let other = ["TOKENVAULT_VAULT": s.home + "/other/vault", "TOKENVAULT_KEY_TTL": "60"]
        XCTAssertEqual(s.tv("set", "api.o.com", stdin: "o\n", env: other).status, 0)
        XCTAssertEqual(s.tv("lock", env: env).status, 0)
        XCTAssertEqual(s.tv("get", "api.o.com", env: other.merging(["TOKENVAULT_PASSPHRASE": ""]) { $1 }).out, "o")
        XCTAssertEqual(s.tv("lock", "--all", env: env).status, 0)
        XCTAssertEqual(s.tv("get", "api.o.com", env: other.merging(["TOKENVAULT_PASSPHRASE": ""]) { $1 }).status, 77)
        let locked = s.tv("get", "api.x.com", env: env.merging(["TOKENVAULT_PASSPHRASE": ""]) { $1 })
        XCTAssertEqual(locked.status, 77, locked.stderr)
        // TTL 0 caches nothing.
        s.expect("get", "api.x.com", env: ["TOKENVAULT_VAULT": vault, "TOKENVAULT_KEY_TTL": "0"])
        XCTAssertEqual(
            s.tv(
                "get", "api.x.com",
                env: ["TOKENVAULT_VAULT": vault, "TOKENVAULT_KEY_TTL": "0", "TOKENVAULT_PASSPHRASE": ""]
            ).status, 77)
    }

    func testTerminalPromptsWithoutEcho() {
        let s = Sandbox()
        let script = Paths.fixtures.appendingPathComponent("prompt_session.py").path
        // Debian's python3-pexpect (scripts/deps.sh installs it).
        let r = runProcess("/usr/bin/python3", [script, Paths.binary, s.home], env: ["PATH": "/usr/bin:/bin"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 12, r.stdout + r.stderr)
        guard lines.count == 12 else { return }
        XCTAssertTrue(
            lines[0].hasPrefix("create|0|tokenvault: stored api.x.com (default) in file|echoed=False"), lines[0])
        XCTAssertEqual(lines[1], "get|0|tok-from-tty|echoed=False")
        XCTAssertEqual(lines[2], "retry|0|tok-from-tty|echoed=False", "a wrong passphrase may be typed again")
        XCTAssertTrue(lines[3].hasPrefix("wrong|77|hint: it is the passphrase the vault was created with"), lines[3])
        XCTAssertTrue(
            lines[4].hasPrefix("mismatch|0|tokenvault: stored api.y.com (default) in file"),
            "a mismatch asks again: \(lines[4])")
        XCTAssertEqual(lines[5], "mismatch-vault-exists|True")
        XCTAssertTrue(
            lines[6].hasPrefix(
                "mismatch3|77|tokenvault: error: the passphrases did not match three times; nothing was stored"),
            lines[6])
        XCTAssertEqual(lines[7], "mismatch3-vault-exists|False")
        XCTAssertEqual(lines[8], "ctrl-c|130|tokenvault: interrupted; nothing was stored|echoed=False")
        XCTAssertEqual(lines[9], "ctrl-c-token|130|tokenvault: interrupted; nothing was stored|echoed=False")
        // libpwquality judges a passphrase typed at the prompt: a weak one is kept only when confirmed.
        XCTAssertTrue(lines[10].hasPrefix("weak-declined|0|tokenvault: stored api.w.com (default) in file"), lines[10])
        XCTAssertTrue(lines[11].hasPrefix("weak-kept|0|tokenvault: stored api.w.com (default) in file"), lines[11])
        // No library's own complaint (cracklib's missing dictionary) reaches the prompt.
        XCTAssertTrue(
            lines[10].hasSuffix("|quiet=True") && lines[11].hasSuffix("|quiet=True"), "\(lines[10]) \(lines[11])")
        // One from the environment is never judged.
        let quiet = Sandbox()
        let set = quiet.tv("set", "api.q.com", stdin: "t", env: ["TOKENVAULT_PASSPHRASE": "abc"])
        XCTAssertEqual(set.status, 0, set.stderr)
        XCTAssertFalse(set.stderr.contains("weak"), set.stderr)
    }

    func testAnotherLibsodiumBindingDecryptsTheVault() throws {
        let s = Sandbox()
        s.expect("set", "api.weibo.com", stdin: #"{"access_token":"abc","uid":"42"}"#)
        s.expect("set", "127.0.0.1:9000", "--account", "bot", stdin: "tok\n")
        let script = Paths.fixtures.appendingPathComponent("decrypt_vault.py").path
        let r = runProcess(
            "/usr/bin/python3", [script, s.vault],
            env: ["TOKENVAULT_PASSPHRASE": "correct horse", "PATH": "/usr/bin:/bin"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let entries = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]] ?? []
        XCTAssertEqual(entries.count, 2, r.stdout)
        let weibo = entries.first { $0["service"] as? String == "api.weibo.com" }
        XCTAssertEqual((weibo?["record"] as? [String: Any])?["access_token"] as? String, "abc")
        XCTAssertEqual(entries.first { $0["account"] as? String == "bot" }?["service"] as? String, "127.0.0.1:9000")
    }
}
