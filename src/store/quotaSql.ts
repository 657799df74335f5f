/** Quota over the SQL store (SQLite or PostgreSQL): durable, the same rules through `eligibility`. */
import { Effect, Layer } from "effect"
import { eligibility } from "../services/quota/eligibility.js"
import { Quota } from "../services/quota/Quota.js"
import { Store } from "./Store.js"

export const layer = Layer.effect(
  Quota,
  Effect.map(Store, (store) =>
    Quota.of({
      check: (p) => Effect.flatMap(store.figures(p), (figures) => eligibility(p, figures)),
      settle: store.settle,
      snapshot: store.snapshot,
      track: store.track
    }))
)
