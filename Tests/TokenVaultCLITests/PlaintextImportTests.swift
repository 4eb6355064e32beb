import Foundation
import XCTest

/// Moving in from the plaintext files other tools keep (docs/reference.md,
/// "Moving in"): git's credential store as Debian's git writes it, and a
/// .netrc; each token then used through tokenvault (get, git's helper), and
/// `--remove-source` leaving no secret behind.
final class PlaintextImportTests: XCTestCase {
    /// `git credential-store --file FILE store`, as git runs it after a push.
    func gitStore(_ file: String, _ fields: [String: String]) {
        let input = fields.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "\n") + "\n\n"
        let r = runProcess(
            "/usr/bin/git", ["credential-store", "--file", file, "store"], stdin: input, env: ["PATH": "/usr/bin:/bin"])
        XCTAssertEqual(r.status, 0, r.stderr)
    }

    func testGitsCredentialStoreMovesInAndLeavesNothingBehind() throws {
        let s = Sandbox()
        let file = s.home + "/.git-credentials"
        gitStore(file, ["protocol": "https", "host": "github.com", "username": "alice", "password": "gho_alice"])
        // git puts the newest first: carol's is the host's default login, bob's is kept apart.
        gitStore(file, ["protocol": "https", "host": "git.example.com", "username": "bob", "password": "p@ss:word"])
        gitStore(file, ["protocol": "https", "host": "git.example.com", "username": "carol", "password": "c-secret"])
        s.expect(
            "import", "git-credentials", "--dry-run",
            stderr: ["would import api.github.com (default)", "still holds 3 secrets in plaintext"])
        XCTAssertEqual(s.tv("list").stdout, "")
        s.expect(
            "import", "git-credentials",
            stderr: [
                "imported api.github.com (default)", "imported git.example.com (default)",
                "imported git.example.com (bob)",
            ])
        // The host github.com is the github preset's: its service, and git's helper answers with it.
        XCTAssertEqual(s.tv("get", "api.github.com").out, "gho_alice")
        XCTAssertEqual(s.tv("get", "git.example.com").out, "c-secret")
        XCTAssertEqual(s.tv("get", "git.example.com", "--account", "bob").out, "p@ss:word")
        let fill = s.shell(
            #"printf 'protocol=https\nhost=github.com\n\n' | git -c credential.helper= -c credential.helper='!"$TV" git-credential' credential fill"#
        )
        XCTAssertEqual(fill.status, 0, fill.stderr)
        XCTAssertTrue(fill.stdout.contains("password=gho_alice"), fill.stdout)
        // The secrets leave the file once stored; a second import finds them stored.
        s.expect("import", "git-credentials", "--remove-source", stderr: ["already stored", "removed 3 secrets from"])
        let left = try String(contentsOfFile: file, encoding: .utf8)
        for secret in ["gho_alice", "p%40ss", "c-secret"] { XCTAssertFalse(left.contains(secret), left) }
        XCTAssertEqual(left.trimmingCharacters(in: .whitespacesAndNewlines), "")
    }

    func testANetrcMovesInAndOnlyItsImportedEntriesLeave() throws {
        let s = Sandbox()
        let netrc = s.home + "/.netrc"
        try """
        machine api.example.com
          login ci-bot
          password "tok-en-1"
        default login anonymous password guest@example.com
        machine files.example.com login u password tok-2
        """.write(toFile: netrc, atomically: true, encoding: .utf8)
        chmod(netrc, 0o600)
        s.expect("set", "files.example.com", stdin: "newer-token")
        s.expect(
            "import", "netrc", "--remove-source",
            stderr: ["imported api.example.com (default)", "kept files.example.com (default): ", "removed 1 secret"])
        XCTAssertEqual(s.tv("get", "api.example.com").out, "tok-en-1")
        XCTAssertEqual(s.tv("get", "files.example.com").out, "newer-token", "nothing replaced without --force")
        let left = try String(contentsOfFile: netrc, encoding: .utf8)
        XCTAssertFalse(left.contains("tok-en-1"), left)
        XCTAssertTrue(left.contains("machine files.example.com login u password tok-2"), left)
        XCTAssertTrue(left.contains("default login anonymous"), left)
    }

    /// gh's hosts.yml where gh keeps its tokens in the file (gh auth login
    /// --insecure-storage), in gh 2.40's multi-account layout beside the
    /// older one: the active account is the default login, others are kept
    /// under their names, a host whose token is in the keyring has none here;
    /// --remove-source blanks the tokens and leaves gh's file otherwise as it was.
    func testGhsHostsFileMovesIn() throws {
        let s = Sandbox()
        let dir = s.env["XDG_CONFIG_HOME"]! + "/gh"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let hosts = dir + "/hosts.yml"
        try """
        github.com:
            users:
                alice:
                    oauth_token: gho_alice
                bob:
                    oauth_token: gho_bob
            git_protocol: https
            user: alice
            oauth_token: gho_alice
        ghe.example.com:
            user: carol
            oauth_token: "ghp_carol"
            git_protocol: ssh
        keyring.example.com:
            users:
                dave:
            git_protocol: https
            user: dave

        """.write(toFile: hosts, atomically: true, encoding: .utf8)
        s.expect(
            "import", "gh", "--remove-source",
            stderr: [
                "imported api.github.com (default)", "imported api.github.com (bob)",
                "imported ghe.example.com (default)",
                "removed 3 secrets",
            ])
        XCTAssertEqual(s.tv("get", "api.github.com").out, "gho_alice")
        XCTAssertEqual(s.tv("get", "api.github.com", "--account", "bob").out, "gho_bob")
        XCTAssertEqual(s.tv("get", "ghe.example.com").out, "ghp_carol")
        XCTAssertNotEqual(s.tv("get", "keyring.example.com").status, 0)
        let left = try String(contentsOfFile: hosts, encoding: .utf8)
        XCTAssertFalse(left.contains("gho_") || left.contains("ghp_"), left)
        for kept in ["github.com:", "user: alice", "bob:", "git_protocol: ssh", "keyring.example.com:"] {
            XCTAssertTrue(left.contains(kept), "\(kept): \(left)")
        }
    }

    /// A half-written or foreign file: one line naming where, nothing stored, the file untouched.
    func testBadSourcesChangeNothing() throws {
        let s = Sandbox()
        let file = s.home + "/creds"
        let text = "https://alice:tok@github.com\nnot a url\n"
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        s.expect(
            "import", "git-credentials", "--from", file, "--remove-source", status: 65,
            stderr: ["\(file):2: not a credential URL"])
        XCTAssertEqual(try String(contentsOfFile: file, encoding: .utf8), text)
        XCTAssertEqual(s.tv("list").stdout, "")
        try "machine h.example.com login u\n".write(toFile: file, atomically: true, encoding: .utf8)
        s.expect(
            "import", "netrc", "--from", file, status: 65, stderr: ["\(file):1: machine h.example.com has no password"])
        try "machine h.example.com frobnicate x\n".write(toFile: file, atomically: true, encoding: .utf8)
        s.expect("import", "netrc", "--from", file, status: 65, stderr: ["not a netrc keyword"])
        // A password no token can be (white space): nothing of the file is stored, not even the good lines.
        try "https://a:good@one.example.com\nhttps://b:two%20words@two.example.com\n".write(
            toFile: file, atomically: true, encoding: .utf8)
        s.expect(
            "import", "git-credentials", "--from", file, status: 65,
            stderr: ["\(file):2: the secret for b@two.example.com cannot be kept as a token"])
        XCTAssertEqual(s.tv("get", "one.example.com").status, 3)
        s.expect("import", "netrc", "--from", s.home + "/none", status: 64, stderr: ["cannot read"])
        s.expect("import", "netrc", "--passphrase-file", file, status: 64)
        XCTAssertEqual(s.tv("list").stdout, "")
    }
}
