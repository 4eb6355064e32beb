/// The part of swift-argument-parser's `--experimental-dump-help` document
/// (ArgumentParserToolInfo, serialization version 0) that the manual uses.
/// That module is not a product of the package, so it is decoded here.
struct ToolInfo: Decodable {
    var serializationVersion: Int
    var command: CommandInfo
}

struct CommandInfo: Decodable {
    var commandName: String
    var aliases: [String]?
    var abstract: String?
    var discussion: String?
    var shouldDisplay: Bool?
    var subcommands: [CommandInfo]?
    var arguments: [ArgumentInfo]?

    var visibleSubcommands: [CommandInfo] { (subcommands ?? []).filter { $0.shouldDisplay ?? true } }
}

struct ArgumentInfo: Decodable {
    enum Kind: String, Decodable { case positional, option, flag }

    struct Name: Decodable {
        var kind: String
        var name: String
        /// As typed: `-h`, `--help`, `-long`.
        var typed: String { kind == "long" ? "--" + name : "-" + name }
    }

    var kind: Kind
    var shouldDisplay: Bool
    var isOptional: Bool
    var isRepeating: Bool
    var parsingStrategy: String
    var names: [Name]?
    var preferredName: Name?
    var valueName: String?
    var defaultValue: String?
    var allValues: [String]?
    var abstract: String?
    var discussion: String?

    /// `--help` and `--version`, which every command repeats.
    var isStandard: Bool { kind == .flag && ["help", "version"].contains(preferredName?.name ?? "") }
}
