// Writes man/tokenvault.1 (mdoc) to stdout: every command, argument and
// option from swift-argument-parser's description of the command tree
// (the same `--experimental-dump-help` document its generate-manual plugin
// reads), plus the sections in TokenVaultCLI's ManualText: EXIT STATUS from
// TokenVaultError.exitCodes, ENVIRONMENT, FILES, EXAMPLES. `make docs`
// runs it; a test fails when the committed page differs from its output.
import ArgumentParser
import Foundation
import TokenVaultCLI
import TokenVaultKit

let info: ToolInfo
do {
    info = try JSONDecoder().decode(ToolInfo.self, from: Data(TokenVault._dumpHelp().utf8))
} catch {
    FileHandle.standardError.write(Data("tokenvault-manual: cannot read the parser's description: \(error)\n".utf8))
    exit(1)
}
guard info.serializationVersion == 0 else {
    FileHandle.standardError.write(
        Data("tokenvault-manual: unknown dump-help version \(info.serializationVersion)\n".utf8))
    exit(1)
}
FileHandle.standardOutput.write(Data(ManualPage(root: info.command).render().utf8))
