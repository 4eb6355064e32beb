import Foundation
import TokenVaultKit
import XCTest

/// A software TPM 2.0 (Debian's swtpm) on a Unix socket, as the swtpm TCTI
/// reaches it: started once per class, cleared or its PCRs extended with
/// tpm2-tools as an administrator would.
final class SoftwareTPM {
    let directory: String
    var socket: String { directory + "/tpm.sock" }
    var tcti: String { "swtpm:path=" + socket }

    init() throws {
        directory = NSTemporaryDirectory() + "tv-tpm-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory + "/state", withIntermediateDirectories: true)
        let r = runProcess(
            "/usr/bin/swtpm",
            [
                "socket", "--tpm2", "--tpmstate", "dir=\(directory)/state", "--server", "type=unixio,path=\(socket)",
                "--ctrl", "type=unixio,path=\(socket).ctrl", "--flags", "not-need-init,startup-clear", "--daemon",
                "--pid", "file=\(directory)/pid",
            ], env: ["PATH": "/usr/bin:/bin"], limit: 20)
        guard r.status == 0, FileManager.default.fileExists(atPath: socket) else {
            throw Spawned.Failure(description: "swtpm did not start: \(r.stderr)")
        }
    }

    /// `tpm2_clear`: new seeds, as after a cleared TPM or on a replaced board.
    func clear() {
        let r = tool("tpm2_clear")
        XCTAssertEqual(r.status, 0, r.stderr)
    }

    /// Extends PCR `n` of the SHA-256 bank, as a changed boot chain would.
    func extend(pcr n: Int) {
        let r = tool("tpm2_pcrextend", "\(n):sha256=" + String(repeating: "ab", count: 32))
        XCTAssertEqual(r.status, 0, r.stderr)
    }

    private func tool(_ name: String, _ args: String...) -> Run {
        runProcess(
            "/usr/bin/" + name, ["-T", tcti] + args, env: ["PATH": "/usr/bin:/bin", "TSS2_LOG": "all+NONE"],
            limit: 30)
    }

    func stop() {
        if let pid = try? String(contentsOfFile: directory + "/pid", encoding: .utf8),
            let p = Int32(pid.trimmingCharacters(in: .whitespacesAndNewlines))
        {
            kill(p, SIGTERM)
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// The file vault on a machine with no desktop (docs/headless.md): its key
/// sealed by the TPM, the passphrase kept for recovery; a systemd
/// credential as the passphrase's source.
final class SealedKeyTests: XCTestCase {
    nonisolated(unsafe) static var tpm: SoftwareTPM!

    override class func setUp() {
        super.setUp()
        do { tpm = try SoftwareTPM() } catch { fatalError("\(error)") }
    }

    override class func tearDown() {
        tpm?.stop()
        super.tearDown()
    }

    var tpm: SoftwareTPM { Self.tpm }

    /// A machine with no bus and no display whose passphrase is only in a
    /// file given to `init`: every other command has no passphrase source.
    func server() throws -> (Sandbox, passphrase: [String: String]) {
        let s = Sandbox()
        s.env["TOKENVAULT_BACKEND"] = nil
        s.env["TOKENVAULT_PASSPHRASE"] = nil
        s.env["TOKENVAULT_TPM_TCTI"] = tpm.tcti
        let file = s.home + "/recovery"
        try "correct horse battery\n".write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o600)
        return (s, ["TOKENVAULT_PASSPHRASE_FILE": file])
    }

    func testASealedKeyOpensTheVaultWithNoPassphraseADayLater() throws {
        let (s, recovery) = try server()
        s.expect(
            "init", "--key", "tpm", env: recovery,
            stderr: [
                "created the file vault", "recorded backend = \"file\"", "sealed by the TPM", "recovery passphrase",
            ])
        let config = try String(contentsOfFile: s.env["XDG_CONFIG_HOME"]! + "/tokenvault/config.toml", encoding: .utf8)
        XCTAssertTrue(config.contains("backend = \"file\""), config)
        let sealed = s.vault + ".tpm"
        XCTAssertEqual(
            (try FileManager.default.attributesOfItem(atPath: sealed)[.posixPermissions]) as? Int, 0o600)
        // The key in the clear is nowhere on disk: the passphrase derives it, and the sealed file is not it.
        let key = runProcess(
            "/usr/bin/python3",
            [Paths.fixtures.appendingPathComponent("decrypt_vault.py").path, "--print-key", s.vault],
            env: ["PATH": "/usr/bin:/bin", "TOKENVAULT_PASSPHRASE": "correct horse battery"])
        XCTAssertEqual(key.status, 0, key.stderr)
        let hex = Array(key.out.utf8)
        XCTAssertEqual(hex.count, 64)
        let keyBytes = Data(
            stride(from: 0, to: hex.count - 1, by: 2).compactMap {
                UInt8(String(decoding: hex[$0...$0 + 1], as: UTF8.self), radix: 16)
            })
        XCTAssertEqual(keyBytes.count, 32)
        let onDisk = try Data(contentsOf: URL(fileURLWithPath: sealed))
        XCTAssertNil(onDisk.range(of: keyBytes))

        let now = Int64(Date().timeIntervalSince1970)
        let token = #"{"access_token":"sealed-tok","expires_at":\#(now + 3 * 86400)}"#
        s.expect("set", "api.example.com", stdin: token)
        // A cron job a day later: no terminal, no passphrase source, no cached key.
        XCTAssertEqual(s.tv("get", "api.example.com", at: FixedClock(now + 86400)).out, "sealed-tok")
        let cron = s.shell(#""$TV" get api.example.com </dev/null"#)
        XCTAssertEqual(cron.status, 0, cron.stderr)
        XCTAssertEqual(cron.out, "sealed-tok")
        XCTAssertEqual(cron.stderr, "")
    }

    /// The agent opens the vault with the TPM as a command does: no
    /// passphrase anywhere, and the key unsealed by the agent serves its clients.
    func testTheAgentOpensASealedVault() throws {
        let (s, recovery) = try server()
        s.inProcess = false
        s.expect("init", "--key", "tpm", env: recovery)
        s.expect("set", "api.example.com", stdin: "agent-tok\n")
        s.expect("agent")
        defer { s.expect("agent", "stop") }
        let before = try agentRequests(s)
        let r = s.tv("get", "api.example.com")
        XCTAssertEqual(r.out, "agent-tok", r.stderr)
        XCTAssertGreaterThan(try agentRequests(s), before, "the agent answered it")
    }

    func testAClearedTPMIs77AndTheRecoveryPassphraseSealsAgain() throws {
        let (s, recovery) = try server()
        s.expect("init", "--key", "tpm", env: recovery)
        s.expect("set", "api.example.com", stdin: "tok-1\n")
        tpm.clear()
        let r = s.shell(#""$TV" get api.example.com </dev/null"#)
        XCTAssertEqual(r.status, 77, r.stderr)
        XCTAssertTrue(r.stderr.contains("sealed by another TPM, or this one was cleared"), r.stderr)
        XCTAssertTrue(r.stderr.contains("tokenvault init --key tpm"), r.stderr)
        XCTAssertFalse(r.stderr.contains("no credential stored"), r.stderr)
        XCTAssertFalse(r.stderr.contains("ERROR:"), "the TSS's own log stays quiet: \(r.stderr)")
        // The recovery passphrase opens it, and says the seal is to be renewed.
        let opened = s.expect("get", "api.example.com", env: recovery, stdout: ["tok-1"])
        XCTAssertTrue(opened.stderr.contains("TOKENVAULT_PASSPHRASE_FILE opened the vault"), opened.stderr)
        s.expect("init", "--key", "tpm", env: recovery, stderr: ["the file vault is", "sealed by the TPM"])
        let again = s.shell(#""$TV" get api.example.com </dev/null"#)
        XCTAssertEqual(again.out, "tok-1", again.stderr)
    }

    func testKeyBoundToPCRsNeedsRecoveryOnceTheyChange() throws {
        let (s, recovery) = try server()
        s.expect("init", "--key", "tpm", "--pcrs", "16", env: recovery, stderr: ["bound to PCR 16"])
        s.expect("set", "api.example.com", stdin: "tok-pcr\n")
        XCTAssertEqual(s.tv("get", "api.example.com").out, "tok-pcr")
        tpm.extend(pcr: 16)
        let r = s.tv("get", "api.example.com")
        XCTAssertEqual(r.status, 77, r.stderr)
        XCTAssertTrue(r.stderr.contains("PCR values the key is bound to have changed"), r.stderr)
        s.expect("get", "api.example.com", env: recovery, stdout: ["tok-pcr"])
    }

    func testNoTPMAnsweringIs77AndInitChangesNothing() throws {
        let (s, recovery) = try server()
        s.expect("init", "--key", "tpm", env: recovery)
        s.expect("set", "api.example.com", stdin: "tok-2\n")
        let gone = ["TOKENVAULT_TPM_TCTI": "swtpm:path=" + s.home + "/no-tpm.sock"]
        let r = s.tv("get", "api.example.com", env: gone)
        XCTAssertEqual(r.status, 77, r.stderr)
        XCTAssertTrue(r.stderr.contains("no TPM answers"), r.stderr)
        XCTAssertTrue(r.stderr.contains("check that the TPM answers"), r.stderr)
        XCTAssertEqual(r.stderr.split(separator: "\n").count, 2, "one error line and one hint: \(r.stderr)")

        // A second vault on a machine with no TPM: init says so, the vault stays, unsealed.
        let (t, recovery2) = try server()
        t.env["TOKENVAULT_TPM_TCTI"] = gone["TOKENVAULT_TPM_TCTI"]
        let failed = t.tv("init", "--key", "tpm", env: recovery2)
        XCTAssertEqual(failed.status, 69, failed.stderr)
        XCTAssertTrue(failed.stderr.contains("the TPM did not seal the vault key"), failed.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: t.vault + ".tpm"))
        t.expect("set", "api.example.com", stdin: "tok-3\n", env: recovery2)
        t.expect("get", "api.example.com", env: recovery2, stdout: ["tok-3"])
    }

    func testInitKeyPassphraseForgetsTheSealAndBadInputChangesNothing() throws {
        let (s, recovery) = try server()
        s.expect("init", "--key", "tpm", env: recovery)
        s.expect("init", "--pcrs", "7", status: 64, stderr: ["(--pcrs) binds a TPM-sealed key"])
        s.expect("init", "--key", "tpm", "--pcrs", "7,99", status: 64, stderr: ["from 0 to 23"])
        XCTAssertTrue(FileManager.default.fileExists(atPath: s.vault + ".tpm"))
        s.expect("init", "--key", "passphrase", env: recovery, stderr: ["forgot the TPM-sealed key"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.vault + ".tpm"))
        s.expect("set", "api.example.com", status: 77, stdin: "tok-4\n", stderr: ["no passphrase source"])
        // A damaged seal is its own error, and the recovery passphrase still opens the vault.
        s.expect("init", "--key", "tpm", env: recovery)
        try Data("TVTPMKEY garbage".utf8).write(to: URL(fileURLWithPath: s.vault + ".tpm"))
        s.expect("get", "api.example.com", status: 74, stderr: ["sealed vault key", "damaged"])
    }

    /// A unit's `LoadCredentialEncrypted=tokenvault-passphrase:…`: the
    /// passphrase encrypted with `systemd-creds`, decrypted into a directory
    /// as systemd lays it out for the unit, `CREDENTIALS_DIRECTORY` set.
    func testASystemdCredentialIsThePassphrase() throws {
        let s = Sandbox()
        s.env["TOKENVAULT_PASSPHRASE"] = nil
        let plain = s.home + "/plain"
        try "credential passphrase\n".write(toFile: plain, atomically: true, encoding: .utf8)
        let encrypted = s.home + "/tokenvault-passphrase.cred"
        let env = ["PATH": "/usr/bin:/bin", "SYSTEMD_LOG_LEVEL": "err"]
        var r = runProcess(
            "/usr/bin/systemd-creds",
            ["encrypt", "--with-key=host", "--name=tokenvault-passphrase", plain, encrypted], env: env)
        XCTAssertEqual(r.status, 0, r.stderr)
        unlink(plain)
        let directory = s.home + "/credentials/tokenvault-agent.service"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        r = runProcess(
            "/usr/bin/systemd-creds",
            ["decrypt", "--name=tokenvault-passphrase", encrypted, directory + "/tokenvault-passphrase"], env: env)
        XCTAssertEqual(r.status, 0, r.stderr)
        chmod(directory + "/tokenvault-passphrase", 0o400)
        chmod(directory, 0o500)
        defer { chmod(directory, 0o700) }
        let unit = ["CREDENTIALS_DIRECTORY": directory]
        s.expect("set", "api.example.com", stdin: "tok-cred\n", env: unit)
        s.expect("get", "api.example.com", env: unit, stdout: ["tok-cred"])
        // The credential is the vault's passphrase, not something beside it.
        s.expect(
            "get", "api.example.com", env: ["TOKENVAULT_PASSPHRASE": "credential passphrase"], stdout: ["tok-cred"])
        // Named explicitly, outside its unit, or as a path: a clear 77 each.
        s.expect(
            "get", "api.example.com", status: 77, env: ["TOKENVAULT_PASSPHRASE_CREDENTIAL": "tokenvault-passphrase"],
            stderr: ["CREDENTIALS_DIRECTORY is not set", "LoadCredentialEncrypted="])
        s.expect(
            "get", "api.example.com", status: 77,
            env: unit.merging(["TOKENVAULT_PASSPHRASE_CREDENTIAL": "../x"]) { $1 }, stderr: ["not a path"])
        s.expect(
            "get", "api.example.com", status: 77,
            env: unit.merging(["TOKENVAULT_PASSPHRASE_CREDENTIAL": "other"]) { $1 },
            stderr: ["cannot read the passphrase (TOKENVAULT_PASSPHRASE_CREDENTIAL)"])
    }
}
