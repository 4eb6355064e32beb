import TokenVaultCLI

TokenVaultMain.run()
