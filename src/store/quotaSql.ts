/** Quota over the SQL store (SQLite or PostgreSQL): durable, the same rules through `eligibility`. */
import { Clock, Effect, Layer } from "effect"
import { remaining, spendLimit } from "../services/quota/eligibility.js"
import { Quota } from "../services/quota/Quota.js"
import { Store } from "./Store.js"

export const layer = Layer.effect(
  Quota,
  Effect.map(Store, (store) =>
    Quota.of({
      // The time is the Clock's: subscription expiry and windows follow TestClock.
      check: (p, model) =>
        Effect.flatMap(store.figures(p), (figures) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Effect.map(
              remaining(p, figures, now),
              (left) => spendLimit(left, (usage) => store.costOf(model, usage, p.group.rateMultiplier))
            ))),
      settle: store.settle,
      snapshot: store.snapshot,
      track: store.track
    }))
)
