// swift-tools-version:6.0
import PackageDescription

// Courier: a PostgreSQL-backed job queue for outbound network work.
// Module graph (each arrow is a dependency):
//   CLibPQ <- Postgres <- CourierStore <- CourierWorker <- jobworker
//   CCurl  <- CourierHTTP ----------------^  ^  ^
//   CourierHTTPServer (HTTP/1.1 server, router, Prometheus text) -+  |
//   CourierCLI (argument parsing) -----------------------------------+ (JobworkerCommand)
//   CourierCLI, CourierStore <- CourierControl <- jobctl
//   CourierStore, CourierHTTPServer, CourierCLI <- CourierDashboard (web dashboard) <- CourierControl
//   (CourierStore is the only door to PostgreSQL: nothing above it imports Postgres. Only
//    the store, the test support and the tools courier-bench and courier-breaker-sim list
//    Postgres; ModuleBoundaryTests fail when another module's source imports it)
//   CCrypto (libcrypto) <- CourierSigning (Standard Webhooks signatures) <- CourierWorker
//   CourierCore (pure domain, no I/O: the one duration and timestamp grammar, queue-name
//     rule, idempotent methods, breaker machine) <- every module above Postgres
let package = Package(
    name: "Courier",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "jobworker", targets: ["jobworker"]),
        .executable(name: "jobctl", targets: ["jobctl"]),
        .library(name: "CourierWorker", targets: ["CourierWorker"]),
        .library(name: "CourierStore", targets: ["CourierStore"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(name: "Postgres", dependencies: ["CLibPQ"]),
        .target(name: "CourierCore"),
        .target(name: "CourierHTTP", dependencies: ["CCurl", "CourierCore"]),
        .target(name: "CourierSigning", dependencies: ["CCrypto", "CourierCore"]),
        .target(
            name: "CourierStore",
            dependencies: ["Postgres", "CourierCore"],
            // sql/schema/ (today's schema for reading, scripts/schema.sh) is not carried in the binary.
            exclude: ["Migrations/schema"],
            resources: [.embedInCode("Migrations")]
        ),
        .target(name: "CourierHTTPServer", dependencies: ["CourierCore"]),
        .target(name: "CourierWorker", dependencies: ["CourierStore", "CourierHTTP", "CourierHTTPServer", "CourierCore", "CourierCLI", "CourierSigning"]),
        .target(name: "CourierCLI", dependencies: ["CourierCore"]),
        .target(name: "CourierDashboard", dependencies: ["CourierStore", "CourierHTTPServer", "CourierCore", "CourierCLI"]),
        .target(name: "CourierControl", dependencies: ["CourierCLI", "CourierStore", "CourierCore", "CourierDashboard", "CourierHTTPServer"]),
        .executableTarget(name: "jobctl", dependencies: ["CourierControl"]),
        .executableTarget(name: "jobworker", dependencies: ["CourierWorker", "CourierStore", "CourierCLI"]),
        .executableTarget(name: "courier-bench", dependencies: ["CourierStore", "CourierWorker", "CourierHTTP", "CourierTestSupport", "Postgres"]),
        .executableTarget(name: "courier-breaker-sim", dependencies: ["CourierStore", "CourierWorker", "CourierCore", "CourierTestSupport", "Postgres"]),
        .target(name: "CourierTestSupport", dependencies: ["Postgres", "CourierCore", "CourierStore"]),

        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "CourierTestSupport"]),
        .testTarget(name: "CourierCoreTests", dependencies: ["CourierCore"]),
        .testTarget(name: "CourierSigningTests", dependencies: ["CourierSigning"]),
        .testTarget(name: "CourierHTTPTests", dependencies: ["CourierHTTP", "CourierTestSupport"]),
        .testTarget(name: "CourierStoreTests", dependencies: ["CourierStore", "CourierTestSupport"]),
        .testTarget(name: "CourierCLITests", dependencies: ["CourierCLI", "CourierCore"]),
        .testTarget(name: "CourierHTTPServerTests", dependencies: ["CourierHTTPServer", "CourierCore", "CourierTestSupport"]),
        .testTarget(name: "CourierWorkerTests", dependencies: ["CourierWorker", "CourierHTTPServer", "CourierCLI", "CourierTestSupport"], exclude: ["Golden", "Receivers"]),
        .testTarget(name: "CourierDashboardTests", dependencies: ["CourierDashboard", "CourierHTTPServer", "CourierStore", "CourierTestSupport", "Postgres"],
                    exclude: ["Browser"]),
        .testTarget(name: "CourierControlTests", dependencies: ["CourierControl", "CourierTestSupport"], exclude: ["Golden"]),
    ]
)
