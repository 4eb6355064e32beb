import Foundation
import XCTest

/// `backend`, `doctor` and the stores read the same resolved settings, so
/// they report what is in fact used.
final class SettingsReportTests: XCTestCase {
    func testAnEmptyBackendVariableIsReportedAsUnset() throws {
        let s = Sandbox(backend: "file")
        try s.writeConfig("backend = \"file\"\n")
        let r = s.shell(#"TOKENVAULT_BACKEND= "$TV" backend --json"#)
        XCTAssertEqual(r.status, 0, r.stderr)
        let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(o["chosen_by"] as? String, "config")
        XCTAssertEqual(o["choice"] as? String, "file")
        let doctor = s.shell(#"TOKENVAULT_BACKEND= "$TV" doctor"#)
        XCTAssertTrue(doctor.stdout.contains("✓ backend: file (set by config)"), doctor.stdout)
        try s.writeConfig("")
        let byDefault = s.shell(#"TOKENVAULT_BACKEND= DBUS_SESSION_BUS_ADDRESS= "$TV" backend --json"#)
        let d = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(byDefault.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(d["chosen_by"] as? String, "the default")
    }

    func testAKeyTTLOutOfRangeIsRefusedNotQuietlyClamped() throws {
        let s = Sandbox(backend: "file")
        XCTAssertEqual(s.tv("set", "x.example", stdin: "t").status, 0)
        for bad in ["-5", "soon", "99999999"] {
            for command in [["backend", "--json"], ["get", "x.example"]] {
                let r = s.run(command, env: ["TOKENVAULT_KEY_TTL": bad])
                XCTAssertEqual(r.status, 78, "\(bad) \(command): \(r.stdout)\(r.stderr)")
                XCTAssertTrue(
                    r.stderr.contains(
                        "error: TOKENVAULT_KEY_TTL must be a whole number of seconds from 0 to 2592000, not '\(bad)'"),
                    r.stderr)
                XCTAssertTrue(r.stderr.contains("hint: fix or unset TOKENVAULT_KEY_TTL"), r.stderr)
            }
        }
        let fine = s.tv("backend", "--json", env: ["TOKENVAULT_KEY_TTL": "60"])
        let o = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(fine.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(o["key_ttl"] as? Int, 60)
        XCTAssertEqual(
            s.tv("get", "x.example", env: ["TOKENVAULT_KEY_TTL": "0"]).out, "t", "nothing stored was touched")
    }
}
