import Foundation
import XCTest

/// D-Bus that is missing or silent must not hang anything.
final class UnreachableBusTests: XCTestCase {
    func testExplicitSecretServiceWithoutBusExits69() {
        let s = Sandbox(backend: "secret-service")
        for bus in ["", "unix:path=/nonexistent/bus"] {
            let r = s.tv("get", "api.x.com", env: ["DBUS_SESSION_BUS_ADDRESS": bus])
            XCTAssertEqual(r.status, 69, r.stderr)
            XCTAssertTrue(r.stderr.contains("Secret Service"), r.stderr)
        }
    }

    func testSilentBusDoesNotHang() throws {
        // A socket that accepts connections and never says a word.
        let dir = NSTemporaryDirectory() + "tv-silent-" + UUID().uuidString.prefix(6)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/bus"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { dst in
            path.utf8CString.withUnsafeBytes { dst.copyMemory(from: $0) }
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        XCTAssertEqual(bound, 0)
        XCTAssertEqual(listen(fd, 64), 0)
        let s = Sandbox(backend: "auto")
        let env = ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(path)", "TOKENVAULT_DBUS_TIMEOUT": "1"]
        XCTAssertEqual(s.tv("set", "api.x.com", stdin: "tok\n", env: env).status, 0)
        // The limit only catches a hang; the probe gives up after 1 s.
        let r = s.tv("get", "api.x.com", env: env, limit: 30)
        XCTAssertEqual(r.out, "tok", r.stderr)
        XCTAssertEqual(
            s.tv("get", "api.x.com", env: env.merging(["TOKENVAULT_BACKEND": "secret-service"]) { $1 }).status, 69)
    }
}
