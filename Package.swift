// swift-tools-version:6.0
import PackageDescription

/// Debian's multiarch directory of this machine, where GLib keeps glibconfig.h.
#if arch(arm64)
    let multiarch = "aarch64-linux-gnu"
#else
    let multiarch = "x86_64-linux-gnu"
#endif

let package = Package(
    name: "tokenvault",
    products: [
        .executable(name: "tokenvault", targets: ["tokenvault"]),
        .library(name: "TokenVaultKit", targets: ["TokenVaultKit"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        .systemLibrary(
            name: "CKeyutils",
            providers: [.apt(["libkeyutils-dev"])]
        ),
        // The C glue over libsecret and libcurl (opened with dlopen on first use by
        // one shared loader); Swift sees only the tv_* functions of its headers.
        // Their headers only, and none of their libraries: libsecret's
        // (libsecret-1-dev) are named here rather than through pkg-config, whose
        // flags for them carry a -pthread SwiftPM refuses with a warning;
        // libcurl's (libcurl4-openssl-dev) are in the compiler's own multiarch
        // include directory. A system library target for libcurl would add its
        // -lcurl to every link, and every run would load libcurl and its ~30
        // libraries before main.
        .target(
            name: "CTokenVault",
            cSettings: [
                .unsafeFlags([
                    "-I/usr/include/libsecret-1", "-I/usr/include/glib-2.0",
                    "-I/usr/lib/\(multiarch)/glib-2.0/include",
                ])
            ]),
        .target(
            name: "TokenVaultKit",
            dependencies: [
                "CSodium", "CKeyutils", "CTokenVault",
                .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            // Only what a file imports is visible: no member of the whole of Foundation
            // slips in through TOMLKit's `import struct Foundation.Data`.
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        .target(
            name: "TokenVaultCLI",
            dependencies: [
                "TokenVaultKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        // The Swift runtime and FoundationEssentials linked in, as the release
        // links them (make release): the tests start this binary some 3,000
        // times, and a start that loads them shared took 11 ms of CPU, linked in
        // 5 ms.
        .executableTarget(
            name: "tokenvault", dependencies: ["TokenVaultCLI"],
            swiftSettings: [.unsafeFlags(["-static-stdlib"])], linkerSettings: [.unsafeFlags(["-static-stdlib"])]),
        // Writes man/tokenvault.1 from the parser's description of the commands (make docs).
        .executableTarget(
            name: "tokenvault-manual",
            dependencies: [
                "TokenVaultCLI", "TokenVaultKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Test doubles (the in-memory store): for the tests, not shipped in the library.
        .target(name: "TokenVaultTestSupport", dependencies: ["TokenVaultKit"]),
        .testTarget(
            name: "TokenVaultKitTests",
            dependencies: ["TokenVaultKit", "TokenVaultTestSupport"]),
        .testTarget(
            name: "TokenVaultCLITests",
            // Not the tokenvault executable, though its tests run it: a test target
            // links the executable targets it depends on, and with them their
            // static Swift runtime. `swift build --build-tests` builds it.
            dependencies: ["tokenvault-manual", "TokenVaultCLI", "TokenVaultTestSupport"]
        ),
    ]
)
