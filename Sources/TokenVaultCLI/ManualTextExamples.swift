import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension ManualText {
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
}
