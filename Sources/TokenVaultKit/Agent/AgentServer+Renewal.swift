import Dispatch
import FoundationEssentials
import Glibc

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
    func renewAheadOfNeed() {
        while true {
            let pause = renewDue()
            _ = wake.wait(timeout: .now() + pause)
        }
    }

    /// Starts the renewals that are due, each on a thread of its own (a
    /// provider that hangs holds up only its own credential); the seconds
    /// until the next one is due.
    func renewDue() -> Double {
        let idle = state.withLock { $0.leaving || $0.schedule.entries.isEmpty }
        if idle { return 300 }
        let own = self.own
        let context = Session(settings: own, notices: notices, agent: request)
        defer { context.flushWarnings() }
        let now = context.clock.now
        guard let config = try? context.config, let vault = try? context.vault() else { return 60 }
        let policy = AheadOfNeed(minValid: config.minValidSeconds)
        let ids = state.withLock { $0.schedule.looked(at: now, keep: config.agentKeepSeconds) }
        if ids.isEmpty { return 300 }
        var next = now + 300
        for id in ids {
            // The record is read outside the lock: a client's request is never held up by the backend.
            guard let c = try? vault.load(id) else { continue }
            let status = context.status(of: c)
            // Nil: not now; else where its commands run (itself nil: the agent's own world).
            let start = state.withLock { s -> ChildContext?? in
                guard s.schedule.decide(id, record: c, status: status, at: now, policy: policy, next: &next) else {
                    return nil
                }
                // In flight from here: the agent does not leave before it is stored.
                s.inFlight += 1
                return .some(s.schedule.entries[id]?.child)
            }
            guard case .some(let child) = start else { continue }
            // The secret commands and the proxies of the client that brought it; else the agent's own.
            var settings = own
            if let child {
                settings = own.withProxies(of: child.environment ?? [:])
                settings.child = child
            }
            let gate = openGate()
            settings.child.gate = gate
            renewals.run { [settings] in
                defer { self.done(gate) }
                self.renew(c, at: now, policy: policy, settings: settings)
            }
        }
        return Double(max(next - now, 1))
    }

    /// One renewal ahead of need, on its own thread; the loop looks again when it ends.
    private func renew(_ c: Credential, at started: Int64, policy: AheadOfNeed, settings: Settings) {
        let context = Session(settings: settings, notices: notices, agent: request)
        let outcome: RenewalSchedule.Outcome
        do {
            let (_, asked) = try policy.renew(c, with: try context.refresher())
            outcome = .renewed(asked: asked)
        } catch let error as TokenVaultError {
            if case .loginRequired = error {
                outcome = .refused(error.errorText)
            } else {
                outcome = .failed(error.errorText)
            }
        } catch {
            outcome = .failed(error.errorText)
        }
        context.flushWarnings()
        renewalEnded(c.id, startedAt: started, outcome)
    }

    /// A renewal ahead of need ended with `outcome`: it is no longer in
    /// flight, counts as activity (the idle stop waits from its end), and the
    /// schedule books it; the loop looks again.
    func renewalEnded(_ id: CredentialID, startedAt started: Int64, _ outcome: RenewalSchedule.Outcome) {
        let now = clock.now
        state.withLock { s in
            s.inFlight -= 1
            s.lastRequest = max(s.lastRequest, now)
            s.schedule.finished(id, startedAt: started, outcome)
        }
        wake.signal()
    }
}
