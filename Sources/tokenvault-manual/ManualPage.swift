import ArgumentParser
import TokenVaultCLI
import TokenVaultKit

/// The whole page, in the conventional mdoc section order.
struct ManualPage {
    var root: CommandInfo

    func render() -> String {
        var m = MDoc()
        head(into: &m)
        commands(into: &m)
        for section in ManualText.sections {
            m.macro("Sh", MDoc.word(section.title))
            m.discussion(section.text)
        }
        reference(into: &m)
        tail(into: &m)
        return m.rendered
    }

    /// The date line, NAME, SYNOPSIS and DESCRIPTION.
    private func head(into m: inout MDoc) {
        let name = root.commandName
        let d = ManualText.date
        let months = [
            "January", "February", "March", "April", "May", "June", "July",
            "August", "September", "October", "November", "December",
        ]
        m.macro("Dd", months[d.month - 1], "\(d.day),", "\(d.year)")
        m.macro("Dt", MDoc.word(name.uppercased()), "1")
        m.macro("Os", MDoc.word(name), MDoc.word(TokenVault.configuration.version))

        m.macro("Sh", "NAME")
        m.macro("Nm", MDoc.word(name))
        m.macro("Nd", MDoc.word(sentence(root.abstract ?? "")))

        m.macro("Sh", "SYNOPSIS")
        for command in root.visibleSubcommands {
            m.macro("Nm")
            synopsis(of: command, into: &m)
        }
        m.macro("Nm")
        m.macro("Op", "Fl", "\\-version")
        m.macro("Op", "Fl", "h", "|", "Fl", "\\-help")

        m.macro("Sh", "DESCRIPTION")
        m.discussion(ManualText.description)
        m.macro("Pp")
        m.text("Every command takes -h and --help; the command itself also:")
        argumentList(root.arguments ?? [], standard: true, into: &m)
    }

    /// COMMANDS: each with its options.
    private func commands(into m: inout MDoc) {
        m.macro("Sh", "COMMANDS")
        m.macro("Bl", "-tag", "-width", "Ds")
        for command in root.visibleSubcommands {
            commandItem(command, into: &m)
        }
        m.macro("El")
    }

    /// ENVIRONMENT, FILES and EXIT STATUS: the tables.
    private func reference(into m: inout MDoc) {
        m.macro("Sh", "ENVIRONMENT")
        m.macro("Bl", "-tag", "-width", "Ds")
        for (variables, meaning) in ManualText.environment {
            let names = variables.split(separator: ",").map { "Ev " + MDoc.word($0.trimmingSpaces()) }
            m.macro("It", names.joined(separator: " , "))
            m.text(meaning)
        }
        m.macro("El")

        m.macro("Sh", "FILES")
        m.macro("Bl", "-tag", "-width", "Ds")
        for (path, meaning) in ManualText.files {
            m.macro("It", "Pa", MDoc.word(path))
            m.text(meaning)
        }
        m.macro("El")

        m.macro("Sh", "EXIT STATUS")
        m.macro("Bl", "-tag", "-width", "Ds", "-compact")
        for (code, meaning) in TokenVaultError.exitCodes {
            m.macro("It", String(code))
            m.text(meaning)
        }
        m.macro("El")
        m.macro("Pp")
        m.discussion(ManualText.exitStatusNote)
    }

    /// EXAMPLES, SEE ALSO and AUTHORS.
    private func tail(into m: inout MDoc) {
        m.macro("Sh", "EXAMPLES")
        for (index, example) in ManualText.examples.enumerated() {
            if index > 0 { m.macro("Pp") }
            m.text(example.title)
            m.literal(example.code.split(separator: "\n", omittingEmptySubsequences: false))
        }

        m.macro("Sh", "SEE ALSO")
        let seeAlso = ManualText.seeAlso.sorted { ($0.section, $0.page) < ($1.section, $1.page) }
        for (index, page) in seeAlso.enumerated() {
            let last = index == seeAlso.count - 1
            m.macro("Xr", MDoc.word(page.page), String(page.section) + (last ? "" : " ,"))
        }

        m.macro("Sh", "AUTHORS")
        m.macro("An", "The", "tokenvault", "developers")
    }

    /// `Cm get Ar service Op Fl \-account Ar account …`, one line per part.
    private func synopsis(of command: CommandInfo, into m: inout MDoc) {
        m.macro("Cm", MDoc.word(command.commandName))
        for argument in (command.arguments ?? []) where argument.shouldDisplay && !argument.isStandard {
            let words = synopsisWords(argument)
            m.macro(words[0], words.dropFirst().joined(separator: " "))
        }
    }

    /// An argument as the synopsis shows it: `Op Fl \-scope Ar scope ...`.
    private func synopsisWords(_ argument: ArgumentInfo) -> [String] {
        var words = usage(of: argument)
        if argument.isRepeating { words.append("...") }
        return argument.isOptional ? ["Op"] + words : words
    }

    /// `Fl \-field Ar name`, `Ar service`, `Fl \- Ar cmd`: macro words.
    private func usage(of argument: ArgumentInfo) -> [String] {
        let value = MDoc.word(argument.valueName ?? "value")
        switch argument.kind {
        case .positional:
            return argument.parsingStrategy == "postTerminator" ? ["Fl", "\\-", "Ar", value] : ["Ar", value]
        case .option:
            return ["Fl", flagWord(argument.preferredName), "Ar", value]
        case .flag:
            return ["Fl", flagWord(argument.preferredName)]
        }
    }

    /// The name after `Fl`, which adds one dash itself.
    private func flagWord(_ name: ArgumentInfo.Name?) -> String {
        guard let name else { return "" }
        return MDoc.word(String(name.typed.dropFirst()))
    }

    /// One command: its abstract, discussion and options; a command with
    /// subcommands (setup, agent) lists each of them beneath it, the same way.
    private func commandItem(_ command: CommandInfo, parents: [String] = [], into m: inout MDoc) {
        var head = ["Cm", (parents + [command.commandName]).map(MDoc.word).joined(separator: " ")]
        for argument in (command.arguments ?? []) where argument.kind == .positional && argument.shouldDisplay {
            head += synopsisWords(argument)
        }
        m.macro("It", head.joined(separator: " "))
        var abstract = command.abstract ?? ""
        if let aliases = command.aliases, !aliases.isEmpty {
            abstract += " Also called " + aliases.joined(separator: ", ") + "."
        }
        m.text(abstract)
        if let discussion = command.discussion, !discussion.isEmpty {
            if !MDoc.blocks(discussion)[0].allSatisfy({ $0.hasPrefix("  ") }) { m.macro("Pp") }
            m.discussion(discussion)
        }
        argumentList(command.arguments ?? [], standard: false, into: &m)
        let subcommands = command.visibleSubcommands.filter { $0.commandName != "help" }
        guard !subcommands.isEmpty else { return }
        m.macro("Bl", "-tag", "-width", "Ds")
        for sub in subcommands { commandItem(sub, parents: parents + [command.commandName], into: &m) }
        m.macro("El")
    }

    /// A tag list of arguments: only `--help`/`--version` with `standard`,
    /// every other displayed argument without.
    private func argumentList(_ arguments: [ArgumentInfo], standard: Bool, into m: inout MDoc) {
        let shown = arguments.filter { $0.shouldDisplay && $0.isStandard == standard && $0.abstract?.isEmpty == false }
        guard !shown.isEmpty else { return }
        m.macro("Bl", "-tag", "-width", "Ds")
        for argument in shown {
            var head: [String] = []
            if argument.kind == .positional {
                head = usage(of: argument)
            } else {
                for (index, name) in (argument.names ?? []).enumerated() {
                    if index > 0 { head.append(",") }
                    head += ["Fl", flagWord(name)]
                }
                if argument.kind == .option { head += ["Ar", MDoc.word(argument.valueName ?? "value")] }
            }
            if argument.isRepeating { head.append("...") }
            m.macro("It", head.joined(separator: " "))
            var text = argument.abstract ?? ""
            if let values = argument.allValues, !values.allSatisfy(text.contains) {
                text += " One of: " + values.joined(separator: ", ") + "."
            }
            if argument.kind == .option, let value = argument.defaultValue, !value.isEmpty, !text.contains("default") {
                text += " Default: " + value + "."
            }
            m.text(text)
            if let discussion = argument.discussion, !discussion.isEmpty {
                m.macro("Pp")
                m.discussion(discussion)
            }
        }
        m.macro("El")
    }

    /// An abstract as a name description: no final period.
    private func sentence(_ s: String) -> String {
        s.hasSuffix(".") ? String(s.dropLast()) : s
    }
}
