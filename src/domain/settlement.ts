/**
 * A settlement: what one request used, recorded once per request id. One definition, taken by the
 * Quota (services/quota/Quota.ts `settle`) and by the journal that keeps it while the store is
 * away (services/journal/SettlementJournal.ts).
 */
import type { Principal } from "./model.js"
import type { TokenUsage } from "./usage.js"

export interface Settlement {
  readonly requestId: string
  readonly principal: Principal
  /** The model the client asked for: what usage is reported under. */
  readonly model: string
  readonly usage: TokenUsage
  /**
   * The usage was counted by the gateway (a stream cut before its upstream reported usage), not
   * reported by the upstream. Stored with the usage event; absent means reported.
   */
  readonly estimated?: boolean
  /** The upstream account that answered: its prompt-cache figures are kept per account. */
  readonly account?: string
  readonly at: Date
}
