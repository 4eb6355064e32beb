// The floor of a direct Secret Service `get` in this design (docs/benchmarks.md,
// "Where the Secret Service milliseconds go, and the floor"): a Swift program,
// statically linked as the release is, that asks libsecret for the item
// tokenvault stored and decodes the record with JSONDecoder. `make bench`
// builds and times it beside `secret-tool lookup` and `tokenvault get`.
import CFloor
import FoundationEssentials

struct Record: Decodable { let access_token: String }

guard CommandLine.arguments.count == 2, let secret = floor_lookup(CommandLine.arguments[1]) else { exit(3) }
let record = try JSONDecoder().decode(Record.self, from: Data(String(cString: secret).utf8))
print(record.access_token)
