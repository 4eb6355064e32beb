import FoundationEssentials
import Glibc

/// The environment variables tokenvault reads or sets (docs/reference.md,
/// "Environment"). Their names are spelled here and nowhere else.
public enum EnvironmentVariable: String, CaseIterable, Sendable {
    case backend = "TOKENVAULT_BACKEND"
    case config = "TOKENVAULT_CONFIG"
    case vault = "TOKENVAULT_VAULT"
    case passphraseFile = "TOKENVAULT_PASSPHRASE_FILE"
    case passphraseCommand = "TOKENVAULT_PASSPHRASE_COMMAND"
    case passphraseCredential = "TOKENVAULT_PASSPHRASE_CREDENTIAL"
    case passphrase = "TOKENVAULT_PASSPHRASE"
    case tpmTCTI = "TOKENVAULT_TPM_TCTI"
    /// Set by systemd in a unit that loads credentials.
    case credentialsDirectory = "CREDENTIALS_DIRECTORY"
    case keyTTL = "TOKENVAULT_KEY_TTL"
    case kdfProfile = "TOKENVAULT_KDF_PROFILE"
    case dbusTimeout = "TOKENVAULT_DBUS_TIMEOUT"
    case unlockTimeout = "TOKENVAULT_UNLOCK_TIMEOUT"
    case account = "TOKENVAULT_ACCOUNT"
    case etcdEndpoints = "TOKENVAULT_ETCD_ENDPOINTS"
    case etcdPrefix = "TOKENVAULT_ETCD_PREFIX"
    case agent = "TOKENVAULT_AGENT"
    /// Set by systemd for a socket-activated agent.
    case listenPID = "LISTEN_PID"
    case listenFDs = "LISTEN_FDS"
    /// Set for a hook's command.
    case service = "TOKENVAULT_SERVICE"
    case reason = "TOKENVAULT_REASON"
    case event = "TOKENVAULT_EVENT"
    /// Set by `exec` for the command it runs.
    case accessToken = "TOKENVAULT_ACCESS_TOKEN"
    case tokenSecret = "TOKENVAULT_TOKEN_SECRET"
    case home = "HOME"
    case path = "PATH"
    case xdgConfigHome = "XDG_CONFIG_HOME"
    case xdgDataHome = "XDG_DATA_HOME"
    case xdgDataDirs = "XDG_DATA_DIRS"
    case xdgCacheHome = "XDG_CACHE_HOME"
    case xdgRuntimeDir = "XDG_RUNTIME_DIR"
    case dbusSessionBusAddress = "DBUS_SESSION_BUS_ADDRESS"
    case display = "DISPLAY"
    case waylandDisplay = "WAYLAND_DISPLAY"
    case sshConnection = "SSH_CONNECTION"
    case browser = "BROWSER"
    case noColor = "NO_COLOR"
    case ci = "CI"
    case term = "TERM"
    case columns = "COLUMNS"
    case kubernetesExecInfo = "KUBERNETES_EXEC_INFO"
    /// The proxies libcurl's own variables name (docs/config.md, "Behind a proxy").
    case httpProxy = "http_proxy"
    case httpsProxy = "https_proxy"
    case httpsProxyUpper = "HTTPS_PROXY"
    case allProxy = "all_proxy"
    case allProxyUpper = "ALL_PROXY"
    case noProxy = "no_proxy"
    case noProxyUpper = "NO_PROXY"
    // Other tools' own, read by `import` where it finds their logins.
    case ghConfigDir = "GH_CONFIG_DIR"
    case mcpRemoteConfigDir = "MCP_REMOTE_CONFIG_DIR"
    case fastmcpHome = "FASTMCP_HOME"
    case fastmcpOAuthEncryptionKey = "FASTMCP_OAUTH_ENCRYPTION_KEY"

    public var name: String { rawValue }

    /// What it does, for the man page and docs/reference.md.
    public var meaning: String {
        switch self {
        case .backend: "auto, secret-service, file, etcd or none; overrides backend in the config file."
        case .config: "The config file (default: $XDG_CONFIG_HOME/tokenvault/config.toml)."
        case .vault: "The file vault (default: $XDG_DATA_HOME/tokenvault/vault)."
        case .passphraseFile: "A file holding the vault passphrase; the first passphrase source asked."
        case .passphraseCommand: "A shell command printing the vault passphrase; asked second."
        case .passphraseCredential:
            "The name of a systemd credential holding the vault passphrase, read from $CREDENTIALS_DIRECTORY; asked third (default: tokenvault-passphrase, where the unit passes one)."
        case .passphrase: "The vault passphrase itself; asked fourth, before the terminal."
        case .tpmTCTI:
            "Where the TPM is reached for a sealed vault key (device:/dev/tpmrm0, swtpm:port=2321), instead of the place recorded when it was sealed."
        case .credentialsDirectory:
            "Set by systemd in a unit with LoadCredential= or LoadCredentialEncrypted=: where the passphrase credential is read."
        case .keyTTL:
            "Seconds the vault key stays cached in the kernel user keyring, 0 to 2592000; overrides key_ttl in the config (default: 900; 0: never cached, so each command opens the vault itself)."
        case .kdfProfile: "interactive, moderate (default) or sensitive: the Argon2id cost of a new vault."
        case .dbusTimeout: "Seconds to wait for the Secret Service, 0.1 to 60 (default: 3)."
        case .unlockTimeout:
            "Seconds to wait for a locked Secret Service collection to be unlocked, 0 to 3600 (default: 60 with DISPLAY or WAYLAND_DISPLAY, else 0); then 77."
        case .account:
            "The account when --account is not given (per shell, or per directory with direnv); default: default."
        case .etcdEndpoints: "Comma-separated etcd endpoints; override endpoints of [etcd]."
        case .etcdPrefix: "The etcd key prefix; overrides prefix of [etcd]."
        case .agent:
            "off: never ask the agent, go to the backend directly; manual: ask one that runs, never start one (docs/agent.md)."
        case .listenPID, .listenFDs:
            "Set by systemd's socket activation (tokenvault-agent.socket): the agent takes the socket it passes."
        case .service: "Set for a hook's command (docs/agent.md): the service of the credential the event is about."
        case .reason: "Set for a hook's command: why the event happened, in words (never a secret)."
        case .event: "Set for a hook's command: login_required, refresh_token_expiring or refresh_failed."
        case .accessToken: "Set by exec for the command it runs: the access token (OAuth 1.0a: the token)."
        case .tokenSecret: "Set by exec for the command it runs: the OAuth 1.0a token secret."
        case .home: "The home directory the XDG defaults and ~/ in the config's *_file settings start from."
        case .path: "Where setup finds git and kubectl."
        case .xdgConfigHome: "Holds tokenvault/config.toml and providers.toml (default: ~/.config)."
        case .xdgDataHome: "Holds the file vault, tokenvault/vault (default: ~/.local/share)."
        case .xdgDataDirs: "Where doctor looks for installed shell completions (default: /usr/local/share:/usr/share)."
        case .xdgCacheHome:
            "Holds the discovery cache, and without XDG_RUNTIME_DIR the locks and the spool in tokenvault/run (default: ~/.cache), never a shared directory."
        case .xdgRuntimeDir: "Holds the per-credential locks and the spool in tokenvault/, created 0700."
        case .dbusSessionBusAddress:
            "The session bus the Secret Service is looked for on; without one, auto uses the file vault."
        case .display, .waylandDisplay: "A desktop session: a browser and the keyring's unlock prompt can be shown."
        case .sshConnection:
            "With no DISPLAY or WAYLAND_DISPLAY: login picks the device flow or paste mode, as no browser can open."
        case .browser: "The browser login opens, with the URL as last argument (default: xdg-open)."
        case .noColor: "Set and not empty: no colour, whatever --color auto would choose."
        case .ci:
            "true, as CI systems set it: a job leaves nothing behind: no agent is started on use, and no prompt is shown."
        case .term: "dumb: no colour."
        case .columns: "The width tables fit when the terminal does not say."
        case .kubernetesExecInfo:
            "Set by kubectl for get --format kubectl: the ExecCredential apiVersion it wants, and whether anyone can answer a prompt."
        case .httpProxy: "The proxy for http:// providers, as libcurl reads it (only this lower-case spelling)."
        case .httpsProxy, .httpsProxyUpper: "The proxy for https:// providers (CONNECT)."
        case .allProxy, .allProxyUpper: "The proxy for either scheme when the one of its scheme is not set."
        case .noProxy, .noProxyUpper:
            "Hosts reached directly: comma-separated names (a domain's subdomains too), addresses, or *."
        case .ghConfigDir: "Where import gh finds gh's hosts.yml (default: $XDG_CONFIG_HOME/gh)."
        case .mcpRemoteConfigDir: "Where import mcp-remote finds mcp-remote's cache (default: ~/.mcp-auth)."
        case .fastmcpHome:
            "FastMCP's data directory, where import fastmcp finds its CLI's logins (default: $XDG_DATA_HOME/fastmcp)."
        case .fastmcpOAuthEncryptionKey:
            "The Fernet key FastMCP's CLI encrypts its logins with: import fastmcp reads them with it."
        }
    }

    /// The passphrase sources, in the order they are asked: never passed on to a child.
    public static let passphraseSources: [EnvironmentVariable] = [
        .passphraseFile, .passphraseCommand, .passphraseCredential, .passphrase,
    ]

    /// The passphrase sources and what they read from: a process's own,
    /// never sent to the agent nor passed on.
    public static let passphraseVariables: [EnvironmentVariable] = passphraseSources + [.credentialsDirectory]
}
