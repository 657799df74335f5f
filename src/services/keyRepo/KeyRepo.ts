/**
 * KeyRepo resolves a presented key (by its SHA-256) to the key with its user and group: the
 * contract. Implementations: memory.ts (from the configuration), store/keyRepoSql.ts (SQL).
 * Policy (disabled -> 401, expired -> 403) lives in `src/endpoints/kit/auth.ts`, not here.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { GatewayData } from "../../config/resolve.js"
import type { StoreError } from "../../domain/errors.js"
import type { Principal } from "../../domain/model.js"

export interface KeyRepoShape {
  readonly findByHash: (sha256: string) => Effect.Effect<Option.Option<Principal>, StoreError>
}

/** The principals of a configuration, by key hash. */
export const principalsOf = (data: GatewayData): ReadonlyMap<string, Principal> => {
  const byHash = new Map<string, Principal>()
  for (const key of data.keys) {
    const user = data.users.get(key.userName)
    const group = data.groups.get(key.groupName)
    if (user && group) byHash.set(key.sha256, { key, user, group })
  }
  return byHash
}

/** A KeyRepo over a fixed table. */
export const fromPrincipals = (byHash: ReadonlyMap<string, Principal>): KeyRepoShape => ({
  findByHash: (sha256) => Effect.succeed(Option.fromUndefinedOr(byHash.get(sha256)))
})

export class KeyRepo extends Context.Service<KeyRepo, KeyRepoShape>()("modelgate/KeyRepo") {
  /** The keys of explicit data (tests). */
  static readonly layerTest = (data: GatewayData) => Layer.succeed(KeyRepo, fromPrincipals(principalsOf(data)))
}
