import Dispatch
import FoundationEssentials
import Glibc
import TokenVaultKit

extension AgentServer {
    // MARK: Renewal ahead of need

    /// Renews each credential a client asked for within `agent_keep` a little
    /// before it expires (`AheadOfNeed`: the lead is min_valid + 60 s + a few
    /// seconds, never more than half its lifetime), so that `get` does not
    /// wait for the provider: under the one renewal lock every process and
    /// every fleet host takes, so it is one renewal however many agents and
    /// commands want it. After each renewal the loop looks again, so the next
    /// one is scheduled from the new expiry. A refused renewal is recorded as
    /// by any command, and such a credential is not tried again; a temporary
    /// failure is tried again a minute later (sooner for a short token), and
    /// no credential is tried twice within `AheadOfNeed.floor` seconds.
    func renewAhead() {
        while true {
            let pause = renewDue()
            _ = wake.wait(timeout: .now() + pause)
        }
    }

    /// Starts the renewals that are due, each on a thread of its own (a
    /// provider that hangs holds up only its own credential); the seconds
    /// until the next one is due.
    private func renewDue() -> Double {
        let (kept, leaving) = state.withLock { ($0.kept, $0.leaving) }
        if kept.isEmpty || leaving { return 300 }
        let own = self.own
        do {
            let context = Context(settings: own, agent: request)
            defer { context.flushWarnings() }
            let now = context.clock.now
            guard let config = try? context.config, let vault = try? context.vault() else { return 60 }
            let policy = AheadOfNeed(minValid: config.minValidSeconds)
            var next = now + 300
            for (id, k) in kept {
                if now - k.askedAt > config.agentKeepSeconds {
                    state.withLock { $0.kept[id] = nil }
                    continue
                }
                guard let c = try? vault.load(id) else { continue }
                let decision = policy.decision(for: c, status: context.status(of: c), now: now)
                let start = state.withLock { s -> Bool in
                    guard var k = s.kept[id] else { return false }
                    defer { s.kept[id] = k }
                    switch decision {
                    case .never(let why):
                        (k.nextRenewal, k.never) = (nil, why)
                        return false
                    case .wait(let until):
                        (k.nextRenewal, k.never) = (until, nil)
                        next = min(next, until)
                        return false
                    case .renew:
                        k.never = nil
                        // One renewal per credential at a time; it wakes this loop when it ends.
                        if k.renewing { return false }
                        if let last = k.attempt {
                            let earliest = policy.earliest(after: last.at, failed: last.failed, for: c)
                            if now < earliest {
                                k.nextRenewal = earliest
                                next = min(next, earliest)
                                return false
                            }
                        }
                        (k.renewing, k.nextRenewal, k.attempt) = (true, now, (now, false))
                        // In flight from here: the agent does not leave before it is stored.
                        s.inFlight += 1
                        return true
                    }
                }
                guard start else { continue }
                // The secret commands and the proxies of the client that asked last.
                var settings = own.withProxies(of: k.child.environment ?? [:])
                settings.child = k.child
                renewals.run { [settings] in self.renew(c, policy: policy, settings: settings) }
            }
            return Double(max(next - now, 1))
        }
    }

    /// One renewal ahead of need, on its own thread; the loop looks again when it ends.
    private func renew(_ c: Credential, policy: AheadOfNeed, settings: Settings) {
        do {
            let context = Context(settings: settings, agent: request)
            defer { context.flushWarnings() }
            let now = context.clock.now
            let outcome: (asked: Bool, text: String, failed: Bool)
            do {
                let (_, asked) = try policy.renew(c, with: try context.refresher())
                outcome = (asked, asked ? "renewed" : "renewed by another process", false)
            } catch let error as TokenVaultError {
                if case .loginRequired = error {
                    outcome = (false, "refused: \(error.errorText)", false)
                } else {
                    outcome = (false, "failed: \(error.errorText)", true)
                }
            } catch {
                outcome = (false, "failed: \(error.errorText)", true)
            }
            state.withLock { s in
                s.inFlight -= 1
                // A renewal counts as activity (the idle stop waits from its end).
                s.lastRequest = max(s.lastRequest, Int64(Date().timeIntervalSince1970))
                if outcome.asked { s.renewals += 1 }
                guard var k = s.kept[c.id] else { return }
                k.renewing = false
                k.attempt = (now, outcome.failed)
                k.last = (now, outcome.text)
                s.kept[c.id] = k
            }
        }
        wake.signal()
    }
}
