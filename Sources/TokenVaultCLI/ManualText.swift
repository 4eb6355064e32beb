import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

/// What `tokenvault --help` and the man page say beyond each command's own
/// help. The man page is generated (`Sources/tokenvault-manual`) from the
/// parser's description of every command plus these sections, so the two
/// never drift. Text conventions, as in every command's discussion:
/// paragraphs are separated by a blank line, and a paragraph whose lines
/// are indented by two spaces is a literal block (commands, config).
public enum ManualText {
    /// The date on the man page: set when the page's content changes, so a
    /// rebuild reproduces the committed page byte for byte.
    public static let date = (year: 2026, month: 11, day: 23)

    /// The man page's DESCRIPTION, and the first part of `tokenvault --help`.
    public static let description = """
        Credentials are kept per service, keyed by the API host (api.twitter.com), in the \
        freedesktop Secret Service through libsecret, or in a file encrypted with libsodium \
        where no Secret Service answers.

        A SERVICE argument may be a host (api.weibo.com), a URL (https://api.twitter.com/1.1/ \
        stands for api.twitter.com) or a provider name (weibo stands for the host that \
        provider stores under). The key is the lower-cased host, plus :port when the port is \
        not the scheme's default. A protected resource logged in to by its URL (tokenvault \
        login https://mcp.example.com/a/mcp) is keyed by host and path: mcp.example.com/a/mcp \
        (the path as sent, case kept, no trailing slash, no empty, . or .. segment), so two \
        resources on one host keep two credentials; a URL names the stored resource whose path \
        is its path or its longest parent, else its host. --account (default: default) keeps \
        several logins per service.

        Only the requested value goes to stdout. Notices and warnings go to stderr, and every \
        failure is one line starting with "tokenvault: error:", followed by a "hint:" line \
        when there is something to do, and a documented exit status.
        """

    /// Sections of the man page between the commands and ENVIRONMENT.
    public static let sections: [(title: String, text: String)] = [
        (
            "BACKENDS",
            """
            backend = auto | secret-service | file | etcd, in the config file or TOKENVAULT_BACKEND.

            secret-service: items of the schema io.tokenvault.Credential with the attributes \
            service, account and type (oauth2, oauth1, token), labelled "tokenvault: SERVICE \
            (ACCOUNT)"; the secret is the JSON record. No secret goes into an attribute or a \
            label, so secret-tool search service api.weibo.com finds them safely. A D-Bus that \
            does not answer within TOKENVAULT_DBUS_TIMEOUT seconds is reported, never waited on.

            file: a vault file (mode 0600 in a 0700 directory) encrypted with libsodium: the \
            key is derived from the passphrase with Argon2id and cached in the kernel user \
            keyring for TOKENVAULT_KEY_TTL seconds (lock forgets it), and the records are \
            sealed with XChaCha20-Poly1305, header included. A changed byte is detected (exit \
            74); a vault with group or world permissions, a symlink or another owner is \
            refused (exit 77). Writes are atomic: a crash leaves the old or the new vault. \
            The passphrase comes from the first of TOKENVAULT_PASSPHRASE_FILE, \
            TOKENVAULT_PASSPHRASE_COMMAND, TOKENVAULT_PASSPHRASE and a no-echo prompt on the \
            terminal; with none of them and no terminal the command exits 77.

            auto (the default): new credentials go to the Secret Service when it answers, \
            else to the file; lookups check both, and the newest copy wins. When a lookup \
            could not check one backend, the message says so.

            etcd: the fleet backend, for hosts that share one grant whose refresh token \
            rotates. Credentials live in an etcd v3 cluster (3.4 or later, through its HTTP/JSON \
            gateway) under the [etcd] prefix, sealed on the client with XChaCha20-Poly1305 under \
            a key derived from the passphrase (the same sources as the file vault; Argon2id \
            salt and parameters under PREFIXkdf): etcd sees no token, service or account name, \
            and a value moved to another key, put back later or restored after a delete is \
            refused (exit 74). One process in the whole fleet refreshes a credential: it holds \
            an etcd lock bound to a lease it keeps alive, re-reads, and writes with a \
            transaction that holds only if the record is the one it read and its lock key still \
            exists; every other process, on any host, waits and uses the result. A holder that \
            dies releases the fleet within lease_ttl. A renewed record that cannot be written is \
            kept in the local spool and written by the next run. Each call fails over between \
            the endpoints and is bounded by etcd.timeout; a cluster that does not answer exits \
            75, or 69 when no endpoint has ever answered or TLS is refused.
            """
        ),
        (
            "LOGIN LIFECYCLE",
            """
            One login per service and account runs at a time: a second one waits for it on a \
            terminal and uses its result, and without a terminal exits 75. Where no browser can \
            open (an SSH session without a display, or neither BROWSER nor DISPLAY/WAYLAND_DISPLAY) \
            login uses the device flow when the provider has one, else paste mode; --browser opens \
            one anyway. login --device draws the URL as a QR code when stderr is a terminal \
            (--no-qr: not). When the refresh token dies is kept as refresh_expires_at \
            (refresh_token_expires_in from the provider, else estimated from the provider's \
            refresh_token_lifetime and refresh_token_idle); status and list show it, and get warns \
            once a day when fewer than warn_before seconds (default 7 days) are left. A locked \
            Secret Service collection is unlocked through the keyring's prompt on a desktop \
            session, else waited for up to TOKENVAULT_UNLOCK_TIMEOUT seconds, then 77; auto never \
            stores in the file because the keyring is locked.
            """
        ),
        (
            "WHEN SOMETHING IS NOT RIGHT",
            """
            Every error names the next step: nothing stored for a service a provider owns \
            suggests tokenvault login NAME; another account than the stored ones lists them; a \
            misspelt command, provider, stored service or account, config key or option value \
            gets the closest valid one and the whole list. Values in hints are shell words, safe \
            to paste. A [providers.NAME] or [etcd] table with a mistake breaks only what uses it: \
            every other command works and warns once, naming file:line; a file TOML cannot read \
            names line and column and shows the line. A login or set --provider that would \
            replace a credential another provider stored under the same service and account \
            refuses (64): keep both with --account NAME, or replace it with --force. tokenvault \
            doctor checks the whole setup and says what to fix. On a terminal, a wait longer \
            than a second says what it waits for (the Secret Service, a lock and the process \
            holding it, the browser, device-flow approval) on one line that counts down and is \
            cleared; a browser that fails to start is said at once. States are coloured in \
            list, status and doctor (--color, NO_COLOR), tables fit the terminal, and JSON is \
            indented on it.
            """
        ),
        (
            "REFRESH ON READ",
            """
            get, header and exec refresh an OAuth 2.0 access token that has fewer than \
            min_valid seconds left (default 60; never more than half the lifetime the provider \
            gave the token) when a refresh token or client credentials exist. Across processes exactly one refreshes: the others wait for it and use its \
            result. A rotated refresh token is stored before anything is printed, and the old \
            one is kept when the answer carries none. When the provider cannot be reached but \
            the old token is still valid, it is printed with a warning. An expired token that \
            cannot be refreshed exits 4 with the login command as hint.
            """
        ),
        (
            "ADAPTERS",
            """
            git: tokenvault git-credential is a git credential helper. A provider's git_hosts \
            (the github preset: github.com; gitlab: gitlab.com) says which remotes use its token; \
            get refreshes first and answers username, password and password_expiry_utc; erase \
            (git saw the token rejected) makes the next get renew it and deletes nothing; store \
            keeps nothing. An unknown host, nothing stored, or a login required answer nothing, \
            so git asks its next helper.

              git config --global credential.https://github.com.helper ''
              git config --global --add credential.https://github.com.helper '!tokenvault git-credential'

            (The empty value first keeps a global cache or store helper from keeping the token.)

            kubectl: get --format kubectl prints an ExecCredential (client.authentication.k8s.io/v1beta1, \
            or v1 when kubectl asks for it in KUBERNETES_EXEC_INFO), with expirationTimestamp, for a \
            kubeconfig exec user (command: tokenvault, args: [get, SERVICE, --format, kubectl]). \
            With interactiveMode Never, tokenvault never prompts.

            mcp: tokenvault mcp URL is a stdio MCP server for MCP clients (editors, desktop \
            assistants, agents) that forwards every JSON-RPC message to the remote MCP server at URL \
            over Streamable HTTP with the vault's token, renewed before it expires (one refresh for \
            every bridge), and once more after a 401. A 403 insufficient_scope runs a login with \
            more scopes where a browser can open; otherwise, and when a login is needed, the \
            client gets a JSON-RPC error (-32001 authorization, -32002 server, -32003 scope) and \
            stderr one line, at once. The client configuration is what tokenvault mcp URL \
            --print-config prints: {"command": "tokenvault", "args": ["mcp", "URL"]}.

            mail: msmtp passwordeval, isync PassCmd and neomutt imap_oauth_refresh_command take the \
            bare token (tokenvault get SERVICE --account EMAIL); get --format sasl --user EMAIL prints \
            the base64 XOAUTH2 initial response (--sasl oauthbearer: RFC 7628) for clients that send \
            it as it is. Gmail: the google preset with scopes ["https://mail.google.com/"]; \
            Microsoft 365: the microsoft preset with scopes ["offline_access", \
            "https://outlook.office.com/IMAP.AccessAsUser.All", "https://outlook.office.com/SMTP.Send"].
            """
        ),
        (
            "CONFIGURATION",
            """
            The config file is TOML. Built-in providers: weibo, google, github, gitlab, \
            microsoft, foursquare (OAuth 2.0), twitter, flickr (OAuth 1.0a). A [providers.NAME] table extends the \
            built-in provider of that name (most need only client_id) or defines a new one. \
            http:// endpoints are refused unless they are on the loopback interface.

              backend = "auto"        # auto | secret-service | file
              min_valid = 60          # seconds of validity get demands before refreshing
              timeout = 30            # seconds for any one HTTP exchange
              warn_before = 604800    # warn this long before a refresh token dies (0: never)

              [etcd]                  # backend = "etcd"
              endpoints = ["https://10.0.0.5:2379", "https://10.0.0.6:2379"]
              prefix = "tokenvault/"  # every key lives under it
              username = "tokenvault" # optional etcd auth, with password_file or password_command
              password_file = "/etc/tokenvault/etcd-password"
              ca_file = "/etc/tokenvault/etcd-ca.pem"   # cert_file, key_file: client certificate
              lease_ttl = 30          # seconds a dead refresher can hold the fleet lock
              timeout = 5             # seconds for one etcd call, failover included

              [providers.weibo]
              client_id = "123456"
              client_secret_file = "~/.config/tokenvault/weibo.secret"

              [providers.local]
              type = "oauth2"                   # oauth2 | oauth1
              service = "127.0.0.1:9000"        # default: the host of token_url
              authorize_url = "http://127.0.0.1:9000/authorize"
              token_url = "http://127.0.0.1:9000/token"
              revoke_url = "http://127.0.0.1:9000/revoke"            # optional
              device_authorization_url = "http://127.0.0.1:9000/device"  # optional
              userinfo_url = "http://127.0.0.1:9000/me"              # optional
              grant = "authorization_code"      # or "client_credentials", "jwt_bearer", "token_exchange", "id_jag"
              scopes = ["read"]
              client_id = "tv"
              client_secret_command = "pass show oauth/local"  # or client_secret, client_secret_file
              client_auth = "body"              # body | basic | private_key_jwt | client_secret_jwt
              redirect_uri = "http://127.0.0.1:8085/callback"  # default: an ephemeral port
              pkce = true
              auth_params = { access_type = "offline" }
              header = "Authorization: Bearer {token}"
              git_hosts = ["git.example.com", "http://127.0.0.1:9002"]  # git-credential
              git_username = "oauth2"           # what git-credential answers as username

              [providers.keycloak]
              issuer = "https://idp.example.com/realms/ops"   # endpoints from its discovery document
              client_id = "cli"

              [providers.robot]
              token_url = "https://idp.example.com/oauth2/token"
              grant = "jwt_bearer"              # RFC 7523: a signed assertion, no user
              client_id = "robot"
              private_key_file = "~/.config/tokenvault/robot.pem"   # RS256 or ES256; or credentials_file (Google JSON)
              audience = "https://idp.example.com/oauth2/token"     # default: token_url
              subject = "robot"

              [providers.cluster]
              token_url = "https://idp.example.com/oauth2/token"
              grant = "jwt_bearer"              # a workload's own JWT, sent as it is
              assertion_file = "/var/run/secrets/tokens/idp-token"   # or assertion_command = "…"

              [providers.sts]
              token_url = "https://sts.example.com/oauth2/token"
              grant = "token_exchange"          # RFC 8693: a token another issuer made, traded
              subject_token_command = "printenv CI_ID_TOKEN"   # or subject_token_file, subject_provider = "NAME"
              subject_token_type = "jwt"        # access_token (default), id_token, refresh_token, jwt
              audience = "https://api.internal.example"

              [providers.corp-mcp]
              issuer = "https://auth.mcp.corp.example"   # an MCP server's authorization server
              grant = "id_jag"                  # one enterprise login: the IdP's, traded for each server
              idp = "corp"                      # the IdP's provider, logged in to once
              client_id = "tv"
              client_secret_file = "~/.config/tokenvault/corp-mcp.secret"
              resources = ["https://notes.mcp.corp.example/mcp"]

              [providers.corp]
              issuer = "https://login.corp.example"
              client_id = "tv"
              client_auth = "private_key_jwt"   # or client_secret_jwt
              private_key_file = "~/.config/tokenvault/tv-client.pem"

              [providers.microsoft]
              client_id = "00000000-0000-0000-0000-000000000000"
              tenant = "contoso.onmicrosoft.com"   # fills {tenant}; default: common
              refresh_token_idle = 7776000         # the preset's: refresh tokens die after 90 days unused
              refresh_token_lifetime = 31536000    # from issue, when the provider does not say

              [providers.localtw]
              type = "oauth1"
              service = "127.0.0.1:9001"
              request_token_url = "http://127.0.0.1:9001/request_token"
              authorize_url = "http://127.0.0.1:9001/authorize"
              access_token_url = "http://127.0.0.1:9001/access_token"
              consumer_key = "key"
              consumer_secret_file = "~/.config/tokenvault/localtw.secret"
            """
        ),
    ]

    /// ENVIRONMENT: every variable tokenvault reads or sets.
    public static let environment: [(name: String, meaning: String)] = EnvironmentVariable.allCases.map {
        ($0.name, $0.meaning)
    }

    /// After the EXIT STATUS table.
    public static let exitStatusNote = """
        exec exits with the status of the command it runs, or 127 when that command cannot \
        be run. status SERVICE exits 0 when the credential is usable (state valid, expiring or \
        refreshable), 4 when a login is required (expired and not renewable, or the provider \
        refused the last renewal) and 3 when nothing is stored.
        """

    /// FILES.
    public static let files: [(path: String, meaning: String)] = [
        (
            "$XDG_CONFIG_HOME/tokenvault/config.toml",
            "The config file: backend, min_valid, timeout, [etcd] and providers (see CONFIGURATION)."
        ),
        (
            "$XDG_DATA_HOME/tokenvault/vault",
            "The file vault; its format is documented in docs/FORMAT.md of the source."
        ),
        ("$XDG_DATA_HOME/tokenvault/vault.tpm", "The vault key sealed by the TPM (tokenvault init --key tpm)."),
        ("$XDG_DATA_HOME/tokenvault/vault.lock", "Serialises writers of the file vault."),
        (
            "$XDG_CONFIG_HOME/tokenvault/providers.toml",
            "Providers added by login --issuer (issuer and client id); config.toml's tables overlay them."
        ),
        (
            "$XDG_CACHE_HOME/tokenvault/discovery/",
            "Discovery documents of issuers, kept a day; get of a valid token never reads them."
        ),
        (
            "$XDG_RUNTIME_DIR/tokenvault/",
            "Per credential a refresh lock (one process refreshes while the others wait) and a record lock (every write checks the record it read), a login lock (one login at a time) and a mark of the last refresh-token warning; spool/ keeps, 0600, a renewed record the backend could not take (a full disk, an etcd cluster without quorum), written by the next run; etcd-*.reached marks a cluster once answered."
        ),
    ]

    /// EXAMPLES: shell-script use.
    public static let examples: [(title: String, code: String)] = [
        (
            "Store what a token endpoint returned, or one bare token line, from stdin:",
            """
            curl -s -d @params https://example.com/oauth/token | tokenvault set api.example.com
            tokenvault set api.weibo.com < token.json
            """
        ),
        (
            "Use a token in a script; a failure stops the script with tokenvault's exit status:",
            """
            TOKEN=$(tokenvault get api.weibo.com) || exit
            curl -H "Authorization: Bearer $TOKEN" https://api.weibo.com/2/users/show.json
            """
        ),
        (
            "Pass the header on stdin, so the token never appears in a process listing:",
            """
            tokenvault header api.github.com | curl -H @- https://api.github.com/user
            """
        ),
        (
            "Sign an OAuth 1.0a request for its method and URL:",
            """
            URL=https://api.twitter.com/1.1/account/verify_credentials.json
            tokenvault header api.twitter.com --url "$URL" | curl -H @- "$URL"
            """
        ),
        (
            "Run a program with the token in its environment:",
            """
            tokenvault exec api.weibo.com -- ./upload.sh
            """
        ),
        (
            "Log in only when needed:",
            """
            tokenvault status api.weibo.com >/dev/null || tokenvault login weibo
            """
        ),
        (
            "Tell the failures apart:",
            """
            token=$(tokenvault get api.weibo.com)
            case $? in
              0) ;;
              3|4) tokenvault login weibo ;;       # nothing stored, or login required
              75) sleep 60 ;;                      # provider unreachable; nothing lost
              *) exit 1 ;;
            esac
            """
        ),
        (
            "Let git push to GitHub with the vault's token, renewed before it expires:",
            """
            git config --global credential.https://github.com.helper ''
            git config --global --add credential.https://github.com.helper '!tokenvault git-credential'
            """
        ),
        (
            "Log in to a remote MCP server knowing only its URL, and let an MCP client use it:",
            """
            tokenvault login https://mcp.example.com/mcp
            tokenvault mcp https://mcp.example.com/mcp --print-config
            """
        ),
        (
            "Read the vault passphrase from a password manager, and keep the key cached for an hour:",
            """
            export TOKENVAULT_PASSPHRASE_COMMAND='pass show tokenvault'
            export TOKENVAULT_KEY_TTL=3600
            """
        ),
    ]

    /// The man page's SEE ALSO.
    public static let seeAlso: [(page: String, section: Int)] = [
        ("secret-tool", 1), ("gnome-keyring-daemon", 1), ("keyctl", 1), ("curl", 1),
    ]
}
