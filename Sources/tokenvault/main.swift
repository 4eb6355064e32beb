// Foundation is named here, though the command line imports it already: this
// executable links the Swift runtime and Foundation statically (Package.swift),
// and the static Foundation's own libraries are linked only when a file of the
// executable itself is compiled against it.
import Foundation
import TokenVaultCLI

TokenVaultMain.run()
