import Foundation
import XCTest

/// `make deb` builds a package lintian finds nothing wrong with; apt
/// installs it with its dependencies, it works from /usr/bin with its man
/// page and completions where Debian looks, and `apt remove` leaves nothing.
/// Packaged from the release build, as users get it (optimized, and linked as
/// `make release` links it): two minutes of CPU when the release is not
/// built yet.
final class DebianPackageTests: XCTestCase {
    /// A home under the clone's .build, kept from run to run as .build is: the
    /// release build's SwiftPM caches are there, never in the user's home or /tmp.
    static let home = Paths.root.appendingPathComponent(".build/package-home").path
    let env = [
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin:" + (ProcessInfo.processInfo.environment["PATH"] ?? ""),
        "DEBIAN_FRONTEND": "noninteractive", "LANG": "C.UTF-8", "HOME": DebianPackageTests.home,
        // The class's own (scripts/run-tests.sh): the compiler's, SwiftPM's and lintian's files go with it.
        "TMPDIR": NSTemporaryDirectory(),
    ]

    func testTheDebianPackageInstallsWorksAndLeavesNothingWhenRemoved() throws {
        XCTAssertEqual(getuid(), 0, "apt installs as root (CI runs as root)")
        // Never over a tokenvault someone installed on this machine.
        let before = runProcess("/usr/bin/dpkg-query", ["-W", "-f=${Status}", "tokenvault"], env: env)
        XCTAssertFalse(before.stdout.contains("install ok installed"), "a tokenvault package is installed already")
        XCTAssertFalse(FileManager.default.fileExists(atPath: "/usr/bin/tokenvault"))

        try FileManager.default.createDirectory(atPath: Self.home, withIntermediateDirectories: true)
        // A scratch path of its own: the test run holds .build while it runs. The
        // release build (two minutes of CPU from a fresh clone) at the idle
        // scheduling class: it takes the CPU the other classes leave while they
        // wait on their servers, and never theirs.
        let make = runProcess(
            "/usr/bin/chrt",
            ["--idle", "0", "/usr/bin/make", "-C", Paths.root.path, "-s", "deb", "RELEASE_SCRATCH=.build/package"],
            env: env, limit: 1500)
        XCTAssertEqual(make.status, 0, make.stderr)
        let package = make.out.split(separator: "\n").last.map(String.init) ?? ""
        XCTAssertTrue(package.hasSuffix("_amd64.deb") || package.hasSuffix(".deb"), make.stdout)

        let lintian = runProcess("/usr/bin/lintian", ["--fail-on", "error,warning", package], env: env, limit: 300)
        XCTAssertEqual(lintian.status, 0, lintian.stdout + lintian.stderr)
        let control = runProcess("/usr/bin/dpkg-deb", ["-f", package, "Depends", "Recommends"], env: env).stdout
        XCTAssertTrue(control.contains("libsodium23") && control.contains("libcurl4"), control)
        XCTAssertTrue(control.contains("Recommends: libsecret-1-0"), control)
        // The libc6 bound is what the binary needs: its newest GLIBC_x.y, and 2.36 for DT_RELR.
        let versions = runProcess(
            "/usr/bin/readelf", ["-VW", Paths.root.path + "/.build/package/release/tokenvault"], env: env
        )
        .stdout
        var needed =
            versions.components(separatedBy: "Name: GLIBC_").dropFirst().compactMap {
                $0.prefix { $0.isNumber || $0 == "." }.split(separator: ".").compactMap { Int($0) }
            }.filter { !$0.isEmpty }.max { $0.lexicographicallyPrecedes($1) } ?? []
        if versions.contains("GLIBC_ABI_DT_RELR"), needed.lexicographicallyPrecedes([2, 36]) { needed = [2, 36] }
        XCTAssertFalse(needed.isEmpty, versions)
        let bound = try XCTUnwrap(control.components(separatedBy: "libc6 (>= ").dropFirst().first?.prefix { $0 != ")" })
        XCTAssertFalse(
            bound.split(separator: ".").compactMap { Int($0) }.lexicographicallyPrecedes(needed),
            "Depends: libc6 (>= \(bound)); the binary needs glibc \(needed.map(String.init).joined(separator: "."))")

        let install = runProcess("/usr/bin/apt-get", ["install", "-y", "-qq", package], env: env, limit: 300)
        XCTAssertEqual(install.status, 0, install.stdout + install.stderr)
        defer { _ = runProcess("/usr/bin/apt-get", ["remove", "-y", "-qq", "tokenvault"], env: env, limit: 300) }
        XCTAssertEqual(runProcess("/usr/bin/tokenvault", ["--version"], env: env).out, "0.1.0")
        for path in [
            "/usr/share/man/man1/tokenvault.1.gz", "/usr/share/bash-completion/completions/tokenvault",
            "/usr/share/zsh/vendor-completions/_tokenvault", "/usr/share/fish/vendor_completions.d/tokenvault.fish",
            "/usr/lib/systemd/user/tokenvault-agent.socket", "/usr/share/doc/tokenvault/copyright",
            // The guides --help points to.
            "/usr/share/doc/tokenvault/README.md.gz", "/usr/share/doc/tokenvault/providers.md.gz",
        ] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: path), path)
        }
        XCTAssertEqual(
            runProcess("/usr/bin/man", ["-w", "tokenvault"], env: env).out, "/usr/share/man/man1/tokenvault.1.gz")
        // Apache-2.0, as the repository's LICENSE says (Debian's machine-readable copyright format).
        let copyright = try String(contentsOfFile: "/usr/share/doc/tokenvault/copyright", encoding: .utf8)
        XCTAssertTrue(copyright.contains("License: Apache-2.0"), copyright)
        XCTAssertTrue(copyright.contains("/usr/share/common-licenses/Apache-2.0"), copyright)
        let license = try String(contentsOf: Paths.root.appendingPathComponent("LICENSE"), encoding: .utf8)
        XCTAssertTrue(license.contains("Apache License") && license.contains("Version 2.0, January 2004"))
        let service = try String(contentsOfFile: "/usr/lib/systemd/user/tokenvault-agent.service", encoding: .utf8)
        XCTAssertTrue(service.contains("ExecStart=\"/usr/bin/tokenvault\""), service)
        // Hardened as built: no RUNPATH (a copy in /tmp loads nothing planted beside it), bound at start.
        let dynamic = runProcess("/usr/bin/readelf", ["-d", "/usr/bin/tokenvault"], env: env).stdout
        XCTAssertFalse(dynamic.contains("RUNPATH") || dynamic.contains("RPATH"), dynamic)
        XCTAssertTrue(dynamic.contains("BIND_NOW") || dynamic.contains("Flags: NOW"), dynamic)
        let verify = runProcess("/usr/bin/dpkg", ["--verify", "tokenvault"], env: env)
        XCTAssertEqual(verify.status, 0, "md5sums shipped and matching: \(verify.stdout)")
        XCTAssertFalse(
            runProcess("/usr/bin/dpkg-deb", ["-I", package, "md5sums"], env: env).stdout.isEmpty, "md5sums shipped")
        // The installed binary does the main job, and its agent starts on first use.
        let s = Sandbox()
        s.env["TOKENVAULT_AGENT"] = "auto"
        XCTAssertEqual(
            runProcess("/usr/bin/tokenvault", ["set", "api.deb.example"], stdin: "deb-token", env: s.env).status, 0)
        XCTAssertEqual(runProcess("/usr/bin/tokenvault", ["get", "api.deb.example"], env: s.env).out, "deb-token")
        var agent: Int32 = 0
        XCTAssertTrue(
            eventually(10) {
                let status = runProcess("/usr/bin/tokenvault", ["agent", "status", "--json"], env: s.env).stdout
                let pid = (try? JSONSerialization.jsonObject(with: Data(status.utf8)) as? [String: Any])?["pid"]
                agent = Int32(pid as? Int ?? 0)
                return agent > 0
            }, "an agent of the package")

        let remove = runProcess("/usr/bin/apt-get", ["remove", "-y", "-qq", "tokenvault"], env: env, limit: 300)
        XCTAssertEqual(remove.status, 0, remove.stderr)
        XCTAssertTrue(
            remove.stdout.contains("stored credentials are kept"), "removal says what it keeps: \(remove.stdout)")
        XCTAssertTrue(eventually(10) { processGone(agent) }, "no agent of the removed binary serves on")
        for path in ["/usr/bin/tokenvault", "/usr/share/doc/tokenvault", "/usr/share/man/man1/tokenvault.1.gz"] {
            XCTAssertFalse(FileManager.default.fileExists(atPath: path), "\(path) is left")
        }
    }
}
