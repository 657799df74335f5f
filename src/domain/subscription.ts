/**
 * Subscriptions and their spending windows, as pure functions over instants. Windows are UTC
 * calendar periods (the day, the ISO week from Monday 00:00, the calendar month), like usage days,
 * so "retry after" is always the next boundary and two instances agree without coordination.
 */
import type { SubscriptionStatus } from "./config.js"
import type { Micros } from "./model.js"

export type { SubscriptionStatus }

export const windows = ["daily", "weekly", "monthly"] as const
export type Window = typeof windows[number]

/** Per-window limits of a group; undefined (or 0) means no limit in that window. */
export type WindowLimits = Readonly<Record<Window, Micros | undefined>>

export const noLimits: WindowLimits = { daily: undefined, weekly: undefined, monthly: undefined }

export interface Subscription {
  readonly userName: string
  readonly groupName: string
  readonly status: SubscriptionStatus
  readonly startsAt: Date | undefined
  readonly expiresAt: Date | undefined
}

/** What was spent in a window, and which window that was (its start, epoch ms). */
export interface WindowSpend {
  readonly start: number
  readonly usedMicros: Micros
}

export type WindowSpends = Readonly<Record<Window, WindowSpend>>

export const emptySpends: WindowSpends = {
  daily: { start: 0, usedMicros: 0 },
  weekly: { start: 0, usedMicros: 0 },
  monthly: { start: 0, usedMicros: 0 }
}

/** Everything the eligibility check and /v1/usage need about one subscription. */
export interface SubscriptionFigures {
  readonly subscription: Subscription
  readonly limits: WindowLimits
  readonly spends: WindowSpends
}

const DAY = 86_400_000

export const windowStart = (w: Window, at: number): number => {
  const d = new Date(at)
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate())
  if (w === "daily") return day
  if (w === "weekly") return day - ((d.getUTCDay() + 6) % 7) * DAY // Monday = 0
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
}

export const windowEnd = (w: Window, at: number): number => {
  const start = windowStart(w, at)
  if (w === "daily") return start + DAY
  if (w === "weekly") return start + 7 * DAY
  const d = new Date(start)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
}

/** Spend in the window containing `now`: a spend recorded for an earlier window counts as zero. */
export const usedIn = (w: Window, spends: WindowSpends, now: number): Micros =>
  spends[w].start === windowStart(w, now) ? spends[w].usedMicros : 0

/** Adds a cost made at `at`; a cost for an older window than the recorded one is not counted. */
export const addSpend = (spends: WindowSpends, cost: Micros, at: number): WindowSpends => {
  const next = (w: Window): WindowSpend => {
    const start = windowStart(w, at)
    const cur = spends[w]
    if (cur.start === start) return { start, usedMicros: cur.usedMicros + cost }
    return cur.start < start ? { start, usedMicros: cost } : cur
  }
  return { daily: next("daily"), weekly: next("weekly"), monthly: next("monthly") }
}

export const hasLimit = (limit: Micros | undefined): limit is Micros => limit !== undefined && limit > 0
