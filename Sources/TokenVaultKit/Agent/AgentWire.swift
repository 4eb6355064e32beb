import FoundationEssentials

/// What travels between a client and the agent besides the request itself:
/// a credential, and a failure with exactly the words, hint and exit status
/// the command would have had on its own (docs/agent.md).
extension Credential {
    /// The record (its JSON as a string, decoded once on the other side) and
    /// the key it is stored under.
    public var wire: JSONValue {
        .object([
            "service": .string(service.description), "account": .string(account),
            "record": .string(String(decoding: recordJSON(), as: UTF8.self)),
        ])
    }

    public init?(wire: JSONValue) {
        guard let service = wire["service"]?.string, let key = try? ServiceKey(parsing: service),
            let account = wire["account"]?.string, let record = wire["record"]?.string,
            let c = try? Credential.fromRecord(Data(record.utf8), id: CredentialID(service: key, account: account))
        else { return nil }
        self = c
    }
}

extension TokenVaultError {
    /// The case and its words.
    public var wire: JSONValue {
        func o(_ kind: String, _ fields: [String: String?]) -> JSONValue {
            var out: [String: JSONValue] = ["kind": .string(kind)]
            for (k, v) in fields { if let v { out[k] = .string(v) } }
            return .object(out)
        }
        switch self {
        case .usage(let m, let h): return o("usage", ["message": m, "hint": h])
        case .notFound(let s, let a, let u, let h):
            return o("notFound", ["service": s, "account": a, "unchecked": u, "hint": h])
        case .loginRequired(let m, let h): return o("loginRequired", ["message": m, "hint": h])
        case .badInput(let m): return o("badInput", ["message": m])
        case .backendUnavailable(let m, let h): return o("backendUnavailable", ["message": m, "hint": h])
        case .vault(let m, let h): return o("vault", ["message": m, "hint": h])
        case .temporary(let m, let h): return o("temporary", ["message": m, "hint": h])
        case .providerRefused(let c, let d, let h):
            return o("providerRefused", ["code": c, "description": d, "hint": h])
        case .permission(let m, let h): return o("permission", ["message": m, "hint": h])
        case .config(let m, let h): return o("config", ["message": m, "hint": h])
        case .configDetail(let m, let lines, let h):
            // Lines hold no newline (Output prints each on one line): joined, they split back.
            return o("config", ["message": m, "hint": h, "excerpt": lines.joined(separator: "\n")])
        case .internal(let m): return o("internal", ["message": m])
        }
    }

    public init?(wire: JSONValue) {
        func s(_ key: String) -> String? { wire[key]?.string }
        let m = s("message") ?? ""
        switch s("kind") {
        case "usage": self = .usage(m, hint: s("hint"))
        case "notFound":
            guard let service = s("service"), let account = s("account") else { return nil }
            self = .notFound(service: service, account: account, unchecked: s("unchecked"), hint: s("hint"))
        case "loginRequired": self = .loginRequired(m, hint: s("hint"))
        case "badInput": self = .badInput(m)
        case "backendUnavailable": self = .backendUnavailable(m, hint: s("hint"))
        case "vault": self = .vault(m, hint: s("hint"))
        case "temporary": self = .temporary(m, hint: s("hint"))
        case "providerRefused":
            self = .providerRefused(code: s("code") ?? "", description: s("description"), hint: s("hint"))
        case "permission": self = .permission(m, hint: s("hint"))
        case "config":
            let lines = s("excerpt").map { $0.split(separator: "\n").map(String.init) } ?? []
            self = lines.isEmpty ? .config(m, hint: s("hint")) : .configDetail(m, excerpt: lines, hint: s("hint"))
        case "internal": self = .internal(m)
        default: return nil
        }
    }
}
