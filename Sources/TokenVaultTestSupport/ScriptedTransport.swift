import Foundation
import TokenVaultKit

/// An HTTP transport that answers from a script: the test double behind
/// `HTTPTransport`. It records every request.
public final class ScriptedTransport: HTTPTransport, @unchecked Sendable {
    public var answers: [Result<HTTPResponse, TokenVaultError>]
    public private(set) var requests: [HTTPRequest] = []
    /// Runs while the request is "on the wire": what other processes do meanwhile.
    public var meanwhile: () throws -> Void = {}

    public init(_ answers: [Result<HTTPResponse, TokenVaultError>]) { self.answers = answers }

    public func send(_ request: HTTPRequest) throws -> HTTPResponse {
        requests.append(request)
        try meanwhile()
        // More requests than the script holds: an error of the test's, not a crash of the run.
        guard !answers.isEmpty else {
            throw TokenVaultError.internal("ScriptedTransport: no answer scripted for \(request.method) \(request.url)")
        }
        return try answers.removeFirst().get()
    }

    /// A JSON answer.
    public static func json(_ s: String, status: Int = 200) -> Result<HTTPResponse, TokenVaultError> {
        .success(HTTPResponse(status: status, contentType: "application/json", body: Data(s.utf8)))
    }
}
