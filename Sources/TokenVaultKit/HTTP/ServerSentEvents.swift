/// One event of a `text/event-stream` body.
public struct ServerSentEvent: Equatable, Sendable {
    /// The `event` field; "message" when the server named none.
    public var event: String
    /// The `data` lines, joined with line feeds.
    public var data: String
    /// The last event id the stream set, as of this event (for `Last-Event-ID`).
    public var id: String?

    public init(event: String = "message", data: String, id: String? = nil) {
        self.event = event
        self.data = data
        self.id = id
    }
}

/// Reads a `text/event-stream` body piece by piece, as the WHATWG HTML
/// standard says (lines end in CR LF, LF or CR; a blank line ends an event; a
/// line starting with ':' is a comment; an event without data is none). An
/// event larger than `maxEventBytes` is refused, so a server cannot make the
/// reader hold an endless one.
public struct ServerSentEventParser: Sendable {
    public struct TooLarge: Error, Equatable, Sendable {
        public var limit: Int
    }

    public let maxEventBytes: Int
    /// The id of the last event that set one: where a resumed stream starts.
    public private(set) var lastEventID: String?
    /// The server's reconnection delay in milliseconds, when it sent one.
    public private(set) var retry: Int?

    private var line: [UInt8] = []
    private var afterCR = false
    private var atStart = true
    private var eventType = ""
    private var data: [UInt8] = []
    private var hasData = false
    private var pending = 0

    public init(maxEventBytes: Int = 4 << 20) { self.maxEventBytes = maxEventBytes }

    /// The events that `bytes` completes.
    public mutating func feed(_ bytes: some Sequence<UInt8>) throws(TooLarge) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for b in bytes {
            if afterCR {
                afterCR = false
                if b == 0x0A { continue }  // the LF of a CR LF
            }
            switch b {
            case 0x0D, 0x0A:
                afterCR = b == 0x0D
                if let event = endLine() { events.append(event) }
            default:
                pending += 1
                guard pending <= maxEventBytes else { throw TooLarge(limit: maxEventBytes) }
                line.append(b)
            }
        }
        return events
    }

    /// Ends one line: a field, a comment, or (blank) the end of an event.
    private mutating func endLine() -> ServerSentEvent? {
        defer { line.removeAll(keepingCapacity: true) }
        if atStart, line.starts(with: [0xEF, 0xBB, 0xBF]) { line.removeFirst(3) }
        atStart = false
        guard !line.isEmpty else { return dispatch() }
        if line.first == UInt8(ascii: ":") { return nil }
        let colon = line.firstIndex(of: UInt8(ascii: ":"))
        let field = String(decoding: line[..<(colon ?? line.endIndex)], as: UTF8.self)
        var value = colon.map { line[line.index(after: $0)...] } ?? []
        if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        switch field {
        case "event": eventType = String(decoding: value, as: UTF8.self)
        case "data":
            if hasData { data.append(0x0A) }
            data.append(contentsOf: value)
            hasData = true
        case "id" where !value.contains(0): lastEventID = String(decoding: value, as: UTF8.self)
        case "retry":
            if !value.isEmpty, value.allSatisfy({ (0x30...0x39).contains($0) }) {
                retry = Int(String(decoding: value, as: UTF8.self))
            }
        default: break  // unknown fields are ignored
        }
        return nil
    }

    /// A blank line: the event so far, if it has data; the buffers start again.
    private mutating func dispatch() -> ServerSentEvent? {
        defer {
            (eventType, hasData, pending) = ("", false, 0)
            data.removeAll(keepingCapacity: true)
        }
        guard hasData else { return nil }
        return ServerSentEvent(
            event: eventType.isEmpty ? "message" : eventType, data: String(decoding: data, as: UTF8.self),
            id: lastEventID)
    }
}
