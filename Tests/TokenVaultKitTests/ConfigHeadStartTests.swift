import Foundation
import XCTest

@testable import TokenVaultKit

/// The config read on another thread for the `get` hot path (the run's
/// plan starts it): the command's first load takes exactly what a load
/// would have given, errors included, and only once.
final class ConfigHeadStartTests: XCTestCase {
    var dir = ""
    var env: [String: String] {
        ["TOKENVAULT_CONFIG": dir + "/config.toml", "HOME": dir, "TOKENVAULT_BACKEND": "file", "XDG_RUNTIME_DIR": dir]
    }

    /// A plan of `env` with its read ahead started.
    func aheadPlan(_ env: [String: String]) -> Plan {
        let plan = Plan(settings: Settings(environment: env))
        plan.startHeadStart()
        return plan
    }

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "tv-ahead-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        chmod(dir, 0o700)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func write(_ toml: String) throws {
        try toml.write(toFile: dir + "/config.toml", atomically: false, encoding: .utf8)
        chmod(dir + "/config.toml", 0o600)
    }

    func testTheFirstLoadTakesTheReadAndALaterOneReadsAgain() throws {
        try write("min_valid = 120\n")
        let plan = aheadPlan(env)
        XCTAssertEqual(try plan.loadConfig().minValid, 120)
        try write("min_valid = 30\n")
        XCTAssertEqual(try plan.loadConfig().minValid, 30, "a second load reads the file again")
    }

    func testAnErrorReadAheadIsTheErrorTheLoadReports() throws {
        try write("min_valid = -1\n")
        XCTAssertThrowsError(try aheadPlan(env).loadConfig()) { error in
            XCTAssertEqual((error as? TokenVaultError)?.exitCode, 78)
            XCTAssertTrue(
                error.errorText.contains("config.toml:1: min_valid must be a whole number of seconds, 0 or more"),
                error.errorText)
        }
    }

    func testWhatWasReadAheadAndNotTakenIsForgotten() throws {
        try write("min_valid = 120\n")
        let plan = aheadPlan(env)
        plan.dropHeadStart()
        try write("min_valid = 30\n")
        XCTAssertEqual(try plan.loadConfig().minValid, 30, "forgotten: the load reads the file as it is")
    }

    func testTheBackendSettingAloneIsReadWithoutDecodingTheRest() throws {
        try write("backend = \"file\"\n[providers.x]\nclient_id = \"a\"\n")
        XCTAssertEqual(try Config.backendSetting(Settings(environment: env)), "file")
        try write("min_valid = 60\n")
        XCTAssertNil(try Config.backendSetting(Settings(environment: env)))
        try FileManager.default.removeItem(atPath: dir + "/config.toml")
        XCTAssertNil(try Config.backendSetting(Settings(environment: env)), "no file: not set")
        try write("backend = \n")
        XCTAssertThrowsError(try Config.backendSetting(Settings(environment: env)), "not TOML")
    }

    /// A file that cannot spell `backend` is not parsed for it; one that can
    /// -- also in a quoted key, in any spelling TOML allows -- is.
    func testOnlyAFileThatCanSpellTheBackendKeyIsParsedForIt() throws {
        try write("min_valid = 60\nbroken = \n")
        XCTAssertNil(try Config.backendSetting(Settings(environment: env)), "no backend in the text: not parsed")
        for spelling in [
            "\"backend\" = \"file\"", "'backend' = \"file\"", "\"\\u0062ackend\" = \"file\"",
            "\"\\U00000062ackend\" = \"file\"", "  backend=\"file\"",
        ] {
            try write("# x\n" + spelling + "\n")
            XCTAssertEqual(try Config.backendSetting(Settings(environment: env)), "file", spelling)
        }
        try write("[etcd]\nbackend = \"x\"\nbroken = \n")
        XCTAssertThrowsError(try Config.backendSetting(Settings(environment: env)), "spelt: parsed, and not TOML")
        XCTAssertFalse(Config.mayName("backend", "backen d = 1\nb\\ackend"))
        XCTAssertTrue(Config.mayName("backend", "xbackend"))
    }

    /// The read-ahead's thread starts on another CPU, then may run on all of
    /// them again: it is never left pinned.
    func testAThreadStartedBesideRunsFreeToUseEveryCPU() throws {
        @Sendable func allowed() -> String? {
            let status = (try? String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8)) ?? ""
            return status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") }.map(String.init)
        }
        let seen = Locked<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        Posix.spawnThread(beside: true) {
            seen.withLock { $0 = allowed() }
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertNotNil(seen.withLock { $0 })
        XCTAssertEqual(seen.withLock { $0 }, allowed())
    }
}
