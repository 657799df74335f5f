/**
 * Settlements accepted and not yet committed. A client has its answer before its settlement's batch
 * commits (the commit takes a few event-loop turns and would otherwise add them to every request's
 * latency), so the eligibility figures count these costs as spent already: a key's next request is
 * judged on everything it has used, however quickly it follows. Pure bookkeeping, no I/O.
 */
import type { Micros, Principal } from "../domain/model.js"
import { addSpend } from "../domain/subscription.js"
import type { EligibilityFigures } from "../services/quota/Quota.js"

interface Charge {
  readonly user: string | undefined
  readonly key: string
  readonly subscription: string | undefined
  readonly cost: Micros
  readonly at: number
}

const add = (m: Map<string, number>, k: string, n: number) => {
  const next = (m.get(k) ?? 0) + n
  if (next === 0) m.delete(k)
  else m.set(k, next)
}

export const subscriptionId = (user: string, group: string) => `${user}\u0000${group}`

export class InFlight<Item extends object> {
  private readonly charges = new Map<Item, Charge>()
  private readonly users = new Map<string, number>()
  private readonly keys = new Map<string, number>()
  private readonly subscriptions = new Map<string, Set<Charge>>()

  get size(): number {
    return this.charges.size
  }

  add(item: Item, principal: Principal, cost: Micros, at: number): void {
    const { group, key, user } = principal
    const subscription = group.billing === "subscription" ? subscriptionId(user.name, group.name) : undefined
    const charge: Charge = { user: subscription === undefined ? user.name : undefined, key: key.id, subscription, cost, at }
    this.charges.set(item, charge)
    add(this.keys, charge.key, cost)
    if (charge.user !== undefined) add(this.users, charge.user, cost)
    if (subscription !== undefined) {
      const set = this.subscriptions.get(subscription) ?? new Set()
      this.subscriptions.set(subscription, set.add(charge))
    }
  }

  /** Committed (or failed): no longer counted. Idempotent. */
  remove(item: Item): void {
    const charge = this.charges.get(item)
    if (charge === undefined) return
    this.charges.delete(item)
    add(this.keys, charge.key, -charge.cost)
    if (charge.user !== undefined) add(this.users, charge.user, -charge.cost)
    if (charge.subscription !== undefined) {
      const set = this.subscriptions.get(charge.subscription)
      set?.delete(charge)
      if (set?.size === 0) this.subscriptions.delete(charge.subscription)
    }
  }

  /** The committed figures with the costs in flight added. */
  apply(p: Principal, figures: EligibilityFigures): EligibilityFigures {
    if (this.charges.size === 0) return figures
    const subscription = figures.subscription === undefined
      ? undefined
      : this.subscriptions.get(subscriptionId(p.user.name, p.group.name))
    return {
      ...figures,
      quotaUsedMicros: figures.quotaUsedMicros + (this.keys.get(p.key.id) ?? 0),
      balanceMicros: figures.balanceMicros - (p.group.billing === "balance" ? this.users.get(p.user.name) ?? 0 : 0),
      subscription: figures.subscription === undefined || subscription === undefined
        ? figures.subscription
        : {
          ...figures.subscription,
          spends: [...subscription].reduce((spends, c) => addSpend(spends, c.cost, c.at), figures.subscription.spends)
        }
    }
  }
}
