import FoundationEssentials
import Glibc

/// Whether the process at the other end of the agent's socket lives in the
/// agent's world: the same mount namespace (the same files, libraries and
/// programs) and the same user namespace (docs/security.md, "Clients less
/// trusted than the agent"). A client in a sandbox or a container that shares
/// the runtime directory is not, and the agent acts for it only with what it
/// already holds (`Confinement`).
public enum PeerWorld {
    /// Nil when `pid` (SO_PEERCRED's, in the agent's pid namespace) shares
    /// both namespaces with this process; else why not, in words. A process
    /// that cannot be looked at counts as outside (a pid of 0: a client in a
    /// pid namespace the agent cannot see into).
    public static func outside(pid: pid_t?) -> String? {
        guard let pid, pid > 0 else { return "a process the agent cannot see" }
        if pid == getpid() { return nil }
        let namespaces: [(ns: String, words: String, shownToAnyone: (pid_t) -> Bool?)] = [
            ("mnt", "another mount namespace", sameMountNamespace),
            ("user", "another user namespace", sameUserNamespace),
        ]
        for (ns, words, shownToAnyone) in namespaces {
            // Exact where the agent may look (a process that is dumpable; root). Else (tokenvault's
            // own commands are not dumpable, and /proc/PID/ns is then closed to the same user)
            // what /proc shows anyone decides.
            let same =
                Posix.readLink("/proc/self/ns/\(ns)").flatMap { mine in
                    Posix.readLink("/proc/\(pid)/ns/\(ns)").map { $0 == mine }
                } ?? shownToAnyone(pid)
            guard let same else { return "a process the agent cannot see" }
            if !same { return words }
        }
        return nil
    }

    /// Whether `pid` is in this process's mount namespace, from
    /// /proc/PID/mountinfo (readable by anyone): a mount belongs to one
    /// namespace, and its id is unique on the system, so two namespaces share
    /// no mount id. Nil when it cannot be read.
    public static func sameMountNamespace(_ pid: pid_t) -> Bool? {
        guard let theirs = mountIDs("/proc/\(pid)/mountinfo"), let mine = mountIDs("/proc/self/mountinfo") else {
            return nil
        }
        return !theirs.isDisjoint(with: mine)
    }

    static func mountIDs(_ path: String) -> Set<Substring>? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8), !text.isEmpty else { return nil }
        return Set(text.split(separator: "\n").compactMap { $0.split(separator: " ", maxSplits: 1).first })
    }

    /// Whether `pid` is in this process's user namespace, from its uid and
    /// gid maps (readable by anyone; shown as this process sees them): a
    /// namespace made below this one maps other ids. Nil when they cannot be read.
    public static func sameUserNamespace(_ pid: pid_t) -> Bool? {
        var same = true
        for map in ["uid_map", "gid_map"] {
            guard let theirs = try? String(contentsOfFile: "/proc/\(pid)/\(map)", encoding: .utf8),
                let mine = try? String(contentsOfFile: "/proc/self/\(map)", encoding: .utf8)
            else { return nil }
            same = same && normalized(theirs) == normalized(mine)
        }
        return same
    }

    private static func normalized(_ map: String) -> [[Substring]] {
        map.split(separator: "\n").map { $0.split(separator: " ") }
    }
}
