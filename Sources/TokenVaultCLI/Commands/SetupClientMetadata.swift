import ArgumentParser
import FoundationEssentials
import TokenVaultKit

extension TokenVault.Setup {
    /// The client metadata document to host (docs/providers.md, "Login by URL").
    struct ClientMetadata: SessionCommand {
        static let configuration = CommandConfiguration(
            commandName: "client-metadata",
            abstract: "Print the client metadata document to host at URL, for servers that take clients by it.",
            discussion: """
                An authorization server that advertises client_id_metadata_document_supported \
                (as MCP servers of 2026-07-28 do) takes the URL of this document as tokenvault's \
                client id and fetches it: host what this prints at exactly that URL (https, with \
                a path), then set client_metadata_url to it in config.toml. Its redirect URIs \
                are loopback ones whose port may vary (RFC 8252).

                  tokenvault setup client-metadata https://example.com/tokenvault/client.json
                """)

        @Argument(help: ArgumentHelp("The https URL the document will be hosted at.", valueName: "url"))
        var url: String

        func run(in context: Session) throws {
            try ClientMetadataDocument.check(url, setting: "the URL")
            context.output.value(ClientMetadataDocument.document(for: url).text)
        }
    }
}
