/**
 * KeyRepo resolves a presented key (by its SHA-256) to the key with its user and group.
 * Policy (disabled -> 401, expired -> 403) lives in `src/http/auth.ts`, not here.
 */
import { Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import type { GatewayData } from "../config/resolve.js"
import type { StoreError } from "../domain/errors.js"
import type { Principal } from "../domain/model.js"
import { Store } from "../store/Store.js"

export interface KeyRepoShape {
  readonly findByHash: (sha256: string) => Effect.Effect<Option.Option<Principal>, StoreError>
}

const fromData = (data: GatewayData): KeyRepoShape => {
  const byHash = new Map<string, Principal>()
  for (const key of data.keys) {
    const user = data.users.get(key.userName)
    const group = data.groups.get(key.groupName)
    if (user && group) byHash.set(key.sha256, { key, user, group })
  }
  return { findByHash: (sha256) => Effect.succeed(Option.fromNullable(byHash.get(sha256))) }
}

export class KeyRepo extends Context.Tag("modelgate/KeyRepo")<KeyRepo, KeyRepoShape>() {
  /** In-memory, from the loaded configuration. */
  static readonly layer = Layer.effect(KeyRepo, Effect.map(AppConfig, (c) => fromData(c.data)))
  /** In-memory, from explicit data (tests). */
  static readonly layerTest = (data: GatewayData) => Layer.succeed(KeyRepo, fromData(data))
  /** From the SQL store: hashed keys in the database, looked up through a short in-process cache. */
  static readonly layerSql = Layer.effect(KeyRepo, Effect.map(Store, (store) => ({ findByHash: store.findPrincipal })))
}
