/**
 * Quota over the SQL store with the settlement journal in front (services/quota/journaled.ts): what
 * the store cannot take while it is away, or has not confirmed within the store timeout
 * (STORE_TIMEOUT_MS, on either database), is journaled and replayed into it, and a replayed
 * request's open marker is dropped as its live settle would have dropped it.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { storeTimeoutConfig } from "../config/storeTimeout.js"
import { StoreError } from "../domain/errors.js"
import type { SettlementJournal } from "../services/journal/SettlementJournal.js"
import * as QuotaJournaled from "../services/quota/journaled.js"
import type { Quota } from "../services/quota/Quota.js"
import { closeOpenMarkers } from "./openMarkers.js"
import * as QuotaSql from "./quotaSql.js"
import type { Store } from "./Store.js"

export const layer = (
  options: Omit<QuotaJournaled.JournaledOptions, "onReplayed"> = {}
): Layer.Layer<Quota, StoreError, Store | SqlClient.SqlClient | SettlementJournal> =>
  Layer.unwrap(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const settleTimeoutMillis = options.settleTimeoutMillis ??
        (yield* Effect.mapError(storeTimeoutConfig, (cause) => new StoreError({ message: "cannot read STORE_TIMEOUT_MS", cause })))
      return QuotaJournaled.layer({
        ...options,
        settleTimeoutMillis,
        onReplayed: (ids) => Effect.provideService(closeOpenMarkers(ids), SqlClient.SqlClient, sql)
      })
    })
  ).pipe(Layer.provide(QuotaSql.layer))
