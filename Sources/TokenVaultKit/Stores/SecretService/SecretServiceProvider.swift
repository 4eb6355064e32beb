internal import CTokenVault
import FoundationEssentials
import Glibc

/// Who answers org.freedesktop.secrets (docs/config.md, "Backends"): the
/// program that owns the name on the session bus, and what its user does to
/// unlock it or to answer its access request. Asked only where a message
/// needs it (`doctor`, a locked or held call), never on the way to a token.
public enum SecretServiceProvider: Sendable, Equatable {
    case gnomeKeyring, keepassxc, kwallet
    case other(String)

    /// From the owner's program name (its argv[0], without the directory).
    init(program: String) {
        switch program {
        case "gnome-keyring-daemon": self = .gnomeKeyring
        case "keepassxc": self = .keepassxc
        case let name where name.hasPrefix("kwalletd"): self = .kwallet
        default: self = .other(program)
        }
    }

    /// The provider that owns the name now, or nil when none does (or the bus did not say within `timeout`).
    static func answering(timeout: Double) -> SecretServiceProvider? {
        let pid = tv_secrets_owner_pid(Int32(timeout * 1000))
        guard pid > 0, let cmdline = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"),
            let argv0 = cmdline.split(separator: 0).first,
            let program = String(decoding: argv0, as: UTF8.self).split(separator: "/").last
        else { return nil }
        return SecretServiceProvider(program: String(program))
    }

    /// The providers installed here (their programs in /usr/bin or
    /// /usr/local/bin): what "start it" can name when none runs.
    static var installed: [SecretServiceProvider] {
        [
            (SecretServiceProvider.keepassxc, "keepassxc"), (.kwallet, "kwalletd5"),
            (.gnomeKeyring, "gnome-keyring-daemon"),
        ]
        .filter { _, program in ["/usr/bin/", "/usr/local/bin/"].contains { access($0 + program, X_OK) == 0 } }
        .map(\.0)
    }

    /// Its name as its users know it.
    public var displayName: String {
        switch self {
        case .gnomeKeyring: "gnome-keyring"
        case .keepassxc: "KeePassXC"
        case .kwallet: "KWallet"
        case .other(let name): name
        }
    }

    /// The program's name, as `doctor` shows it.
    public var program: String {
        switch self {
        case .gnomeKeyring: "gnome-keyring-daemon"
        case .keepassxc: "keepassxc"
        case .kwallet: "kwalletd5"
        case .other(let name): name
        }
    }

    /// How its user unlocks its default collection; `desktop`: whether a
    /// graphical session is there to show a prompt.
    public func unlockHint(desktop: Bool) -> String {
        switch self {
        case .gnomeKeyring:
            desktop
                ? "unlock the keyring (its prompt, or seahorse)"
                : "unlock the keyring from this session: gnome-keyring-daemon --unlock, then type its password and Ctrl-D"
        case .keepassxc: "unlock the database in KeePassXC (its window shows the unlock dialog)"
        case .kwallet: "open the wallet in KWallet (the dialog kwalletd5 shows, or kwalletmanager5)"
        case .other(let name): "unlock it in \(name)"
        }
    }

    /// How its user gives it a default collection (where a write goes).
    public var defaultCollectionHint: String {
        switch self {
        case .gnomeKeyring: "make a keyring the default one in seahorse"
        case .keepassxc: "expose a group of the open database (Database Settings: Secret Service Integration)"
        case .kwallet:
            "start kwalletd5 again (it names its wallet the default one when it starts with it; the next login does too)"
        case .other(let name): "make a collection the default one in \(name)"
        }
    }

    /// How its user lets tokenvault read an item it asks about.
    public var accessHint: String {
        switch self {
        case .keepassxc:
            "allow tokenvault in KeePassXC's access request (or turn off its confirmation in the Secret Service Integration settings)"
        case .kwallet: "allow tokenvault in KWallet's access request"
        default: "answer its access request"
        }
    }
}
