// FoundationEssentials is named here, though the command line imports it
// already: this executable links the Swift runtime and FoundationEssentials
// statically (Package.swift), and their own libraries are linked only when a
// file of the executable itself is compiled against them.
import FoundationEssentials
import TokenVaultCLI

TokenVaultMain.run()
