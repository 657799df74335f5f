/**
 * STORE_TIMEOUT_MS: how long the store (PostgreSQL) may take to hand out a connection, and then to
 * answer one statement, before the request that waits on it fails with 503 `store_unavailable`.
 * A database that accepts connections but never answers would otherwise hold every request for
 * as long as its client waits. 0 (or less) turns the bound off.
 */
import { Config } from "effect"

export const DEFAULT_STORE_TIMEOUT_MS = 3000

export const storeTimeoutConfig = Config.Int("STORE_TIMEOUT_MS").pipe(Config.withDefault(DEFAULT_STORE_TIMEOUT_MS))
