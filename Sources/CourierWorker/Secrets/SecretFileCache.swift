import CourierCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The secrets directory's files as last read, so an attempt does not read a file (a
/// blocking call on the cooperative pool) for every secret it sends. A file is looked at
/// again (`stat`) at most once per `recheckAfter`, and read again only when its inode,
/// size or modification time changed: a rotated secret (a Kubernetes Secret's mount swaps
/// a symlink) is sent within `recheckAfter` of the change. A missing file is remembered
/// as missing for the same time. The one rule for when a secret file is read is here.
public final class SecretFileCache: @unchecked Sendable {
    /// How long a file's last look stands. Default 1 s.
    public let recheckAfter: Duration
    private let now: @Sendable () -> ContinuousClock.Instant
    private let entries = Locked<[String: Entry]>([:])
    /// Files read so far (for tests: a hit reads nothing).
    public private(set) var reads = 0

    private struct Entry {
        var signature: Signature?
        var text: String?
        var checkedAt: ContinuousClock.Instant
    }

    /// What tells a file's versions apart without reading it.
    struct Signature: Equatable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modifiedSeconds: Int
        var modifiedNanoseconds: Int
    }

    public init(recheckAfter: Duration = .seconds(1),
                now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.recheckAfter = recheckAfter
        self.now = now
    }

    /// The file's text, from memory while its last look stands or it is unchanged; nil when there is no such file.
    public func text(atPath path: String) -> String? {
        let instant = now()
        let cached = entries.withLock { $0[path] }
        if let cached, instant - cached.checkedAt < recheckAfter { return cached.text }
        let signature = Self.signature(of: path)
        if let cached, let signature, cached.signature == signature {
            entries.withLock { $0[path]?.checkedAt = instant }
            return cached.text
        }
        let text = signature == nil ? nil : FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
        entries.withLock { entries in
            if signature != nil { reads += 1 }
            entries[path] = Entry(signature: text == nil ? nil : signature, text: text, checkedAt: instant)
        }
        return text
    }

    static func signature(of path: String) -> Signature? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Signature(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                         modifiedSeconds: Int(info.st_mtim.tv_sec), modifiedNanoseconds: Int(info.st_mtim.tv_nsec))
    }
}
