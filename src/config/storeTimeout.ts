/**
 * STORE_TIMEOUT_MS: how long the store (PostgreSQL) may take to hand out a connection, and then to
 * answer one statement, before the request that waits on it fails with 503 `store_unavailable`;
 * an admin call as a whole is bounded by it too. A database that accepts connections but never
 * answers would otherwise hold every request for as long as its client waits. On either database,
 * a settlement the store has not confirmed within it goes to the settlement journal
 * (store/quotaSqlJournaled.ts). 0 (or less) turns the bounds off.
 */
import { Config } from "effect"

export const DEFAULT_STORE_TIMEOUT_MS = 3000

export const storeTimeoutConfig = Config.Int("STORE_TIMEOUT_MS").pipe(Config.withDefault(DEFAULT_STORE_TIMEOUT_MS))
