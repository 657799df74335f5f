/**
 * Account selection as a pure function over the store's view: which accounts may serve, and in
 * which order to try them. The order: the session's sticky account first (when it may serve), then
 * the lowest priority number, then the lowest load ((in use + waiting) / concurrency), then the
 * least recently used; config order breaks what remains, so the result is deterministic.
 *
 * An account that cools down only because the provider said 529 (overloaded) is still tried when
 * no other may serve, the one back soonest first: that cooldown steers traffic to the group's other
 * accounts, and with none left it would fail requests without asking an upstream whose overload
 * is often over in a moment.
 */
import type { Account } from "../../domain/model.js"
import type { AccountView, View } from "./store.js"
import type { CooldownReason } from "./verdict.js"

export interface Candidate {
  readonly account: Account
  readonly view: AccountView
}

export interface Selection {
  /** Accounts that may serve now, best first. */
  readonly ordered: ReadonlyArray<Candidate>
  /** The sticky account, when it is among `ordered` (its binding stands). */
  readonly sticky: string | undefined
  /** Milliseconds until the first cooling account is back, when some only cool down. */
  readonly backInMillis: number | undefined
}

/** verdict.ts's reason for a 529's cooldown. */
const OVERLOADED: CooldownReason = "overloaded"

const load = (c: Candidate) => (c.view.inUse + c.view.waiting) / c.account.concurrency

const compare = (a: Candidate, b: Candidate): number =>
  a.account.priority - b.account.priority || load(a) - load(b) || a.view.lastUsed - b.view.lastUsed

/**
 * `accounts` are the group's accounts that serve the model and were not tried yet; `fingerprint`
 * names the credentials an account has now (a take-out recorded for older credentials is void).
 */
export const select = (
  accounts: ReadonlyArray<Account>,
  view: View,
  fingerprint: (account: Account) => string
): Selection => {
  let usable: Array<Candidate> = []
  const overloaded: Array<Candidate> = []
  let backAt: number | undefined
  accounts.forEach((account, i) => {
    const v = view.accounts[i]
    if (v === undefined) return
    if (v.disabled !== undefined && v.disabled === fingerprint(account)) return
    if (v.coolUntil > view.now) {
      backAt = backAt === undefined ? v.coolUntil : Math.min(backAt, v.coolUntil)
      if (v.coolReason === OVERLOADED) overloaded.push({ account, view: v })
      return
    }
    usable.push({ account, view: v })
  })
  // Array.prototype.sort is stable: equal candidates keep config order.
  if (usable.length > 0) usable.sort(compare)
  else usable = overloaded.sort((a, b) => a.view.coolUntil - b.view.coolUntil || compare(a, b))
  const stickyAt = view.sticky === undefined ? -1 : usable.findIndex((c) => c.account.name === view.sticky)
  if (stickyAt > 0) usable.unshift(...usable.splice(stickyAt, 1))
  return {
    ordered: usable,
    sticky: stickyAt >= 0 ? view.sticky : undefined,
    backInMillis: usable.length === 0 && backAt !== undefined ? backAt - view.now : undefined
  }
}
