import XCTest

@testable import TokenVaultKit

/// Every setting from the environment, resolved in one place: unset, empty,
/// valid, invalid and out of range, each variable the same way.
final class SettingsTests: XCTestCase {
    func settings(_ variable: EnvironmentVariable, _ value: String?) -> Settings {
        Settings(environment: value.map { [variable.name: $0, "HOME": "/home/u"] } ?? ["HOME": "/home/u"])
    }

    /// (variable, default, a valid value and what it gives, an invalid one, one out of range)
    func testEveryNumberHasOneDefaultAndOneCheck() throws {
        let table: [(EnvironmentVariable, (Settings) throws -> Double, Double, String, Double, String, String)] = [
            (.keyTTL, { Double(try $0.keyTTL) }, 900, "3600", 3600, "soon", "-5"),
            (.dbusTimeout, { try $0.dbusTimeout }, 3, "0.5", 0.5, "3s", "600"),
            (.unlockTimeout, { try $0.unlockTimeout }, 0, "30", 30, "never", "7200"),
        ]
        for (variable, read, byDefault, valid, value, invalid, outOfRange) in table {
            XCTAssertEqual(try read(settings(variable, nil)), byDefault, "\(variable.name) unset")
            XCTAssertEqual(try read(settings(variable, "")), byDefault, "\(variable.name) empty is unset")
            XCTAssertEqual(try read(settings(variable, valid)), value, "\(variable.name)=\(valid)")
            for bad in [invalid, outOfRange] {
                XCTAssertThrowsError(try read(settings(variable, bad)), "\(variable.name)=\(bad)") { error in
                    XCTAssertEqual((error as? TokenVaultError)?.exitCode, 78)
                    XCTAssertTrue(error.errorText.hasPrefix("\(variable.name) must be "), error.errorText)
                    XCTAssertTrue(error.errorText.hasSuffix("not '\(bad)'"), error.errorText)
                }
            }
        }
        // The unlock wait's default depends on a desktop session.
        XCTAssertEqual(try Settings(environment: ["DISPLAY": ":0"]).unlockTimeout, 60)
    }

    func testTheBackendSaysWhoChoseIt() throws {
        let config = { () throws -> Config in
            var c = Config()
            c.backend = "file"
            return c
        }
        XCTAssertNil(try settings(.backend, "").backendOverride, "an empty TOKENVAULT_BACKEND is unset")
        XCTAssertEqual(try settings(.backend, "").backend(config: config).chosenBy, .config)
        XCTAssertEqual(try settings(.backend, nil).backend { Config() }.chosenBy, .defaultValue)
        XCTAssertEqual(try settings(.backend, nil).backend { Config() }.choice, .auto)
        let forced = try settings(.backend, "etcd").backend(config: config)
        XCTAssertEqual(forced.choice, .etcd)
        XCTAssertEqual(forced.chosenBy, .environment)
        XCTAssertThrowsError(try settings(.backend, "files").backendOverride) { error in
            XCTAssertEqual((error as? TokenVaultError)?.exitCode, 78)
            XCTAssertTrue(
                error.errorText.hasPrefix("TOKENVAULT_BACKEND must be auto, secret-service, file, etcd or none"),
                error.errorText)
        }
        XCTAssertEqual(try settings(.kdfProfile, "Sensitive").kdfProfile, .sensitive)
        XCTAssertEqual(try settings(.kdfProfile, "").kdfProfile, .moderate)
        XCTAssertThrowsError(try settings(.kdfProfile, "fast").kdfProfile)
    }

    func testPathsFollowTheXDGVariablesAndIgnoreRelativeOnes() {
        let s = Settings(environment: ["HOME": "/home/u", "XDG_CONFIG_HOME": "relative", "XDG_DATA_HOME": "/data"])
        XCTAssertEqual(s.configPath, "/home/u/.config/tokenvault/config.toml")
        XCTAssertEqual(s.discoveredProvidersPath, "/home/u/.config/tokenvault/providers.toml")
        XCTAssertEqual(s.vaultPath, "/data/tokenvault/vault")
        XCTAssertEqual(s.cacheDirectory, "/home/u/.cache/tokenvault")
        XCTAssertEqual(s.runtimeDirectory, "/home/u/.cache/tokenvault/run", "no XDG_RUNTIME_DIR: never /tmp")
        XCTAssertEqual(s.with(.vault, "/v").vaultPath, "/v")
        XCTAssertEqual(s.with(.config, "").configPath, "/home/u/.config/tokenvault/config.toml", "empty is unset")
        XCTAssertEqual(
            Settings(environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/bus,guid=abc;tcp:host=x"])
                .sessionBusShown,
            "unix:path=/run/bus")
        XCTAssertEqual(
            Settings(environment: ["TOKENVAULT_ETCD_ENDPOINTS": " http://a:1 ,,http://b:2"]).etcdEndpoints,
            ["http://a:1", "http://b:2"])
    }

    /// The names are spelled in EnvironmentVariable.swift alone: everything else reads the resolved values.
    func testEnvironmentVariableNamesAreSpelledInOneFile() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let sources = root.appendingPathComponent("Sources")
        // tokenvault's own anywhere in code; the general ones (HOME, TERM) as a whole literal.
        let names = EnvironmentVariable.allCases.map { $0.name.hasPrefix("TOKENVAULT_") ? $0.name : "\"\($0.name)\"" }
        var found: [String] = []
        let files =
            FileManager.default.enumerator(atPath: sources.path)?.compactMap { $0 as? String }.filter {
                $0.hasSuffix(".swift")
            } ?? []
        XCTAssertGreaterThan(files.count, 40)
        for file in files
        where !file.hasSuffix("Configuration/EnvironmentVariable.swift") && !file.hasSuffix("ManualText.swift") {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.components(separatedBy: "//").first ?? ""
                if let name = names.first(where: { code.contains($0) }) { found.append("\(file):\(n + 1): \(name)") }
            }
        }
        XCTAssertEqual(found, [])
    }

    /// docs/reference.md's environment table names every variable there is.
    func testTheReferenceListsEveryVariable() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let reference = try String(contentsOf: root.appendingPathComponent("docs/reference.md"), encoding: .utf8)
        let table = try XCTUnwrap(reference.components(separatedBy: "## Environment").last)
        for variable in EnvironmentVariable.allCases {
            XCTAssertTrue(table.contains("`\(variable.name)`"), "docs/reference.md does not list \(variable.name)")
        }
    }
}
