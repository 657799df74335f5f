/**
 * How many Responses WebSocket connections a key and a user may hold open at once on this gateway
 * (WEBSOCKET_MAX_CONNECTIONS_PER_KEY, _PER_USER). Each connection holds memory (its transcript, its
 * messages being read) for as long as its client likes, so without a cap one key could hold any
 * amount. Counted in process: each gateway holds its own connections.
 */
import { Effect, type Scope } from "effect"
import { type Envelope, RouteRefused } from "../../../domain/envelope.js"
import type { Principal } from "../../../domain/model.js"

export interface ConnectionCaps {
  /** 0: no limit. */
  readonly perKey: number
  readonly perUser: number
}

const tooMany = (holder: "key" | "user", limit: number): Envelope => ({
  status: 429,
  type: "rate_limit_error",
  code: "too_many_websocket_connections",
  message: `This ${holder} already has ${limit} open Responses WebSocket connection${limit === 1 ? "" : "s"}, ` +
    `the most it may have; close one, or use HTTP POST`,
  param: null
})

/**
 * The counter for the connections of one gateway: `hold(principal)` takes a place for a connection
 * until the Scope closes, or refuses with the 429 envelope when the key or the user has none left.
 */
export const makeConnectionCounter = (caps: ConnectionCaps) => {
  const byKey = new Map<string, number>()
  const byUser = new Map<string, number>()
  const add = (counts: Map<string, number>, id: string, delta: number) => {
    const next = (counts.get(id) ?? 0) + delta
    if (next <= 0) counts.delete(id)
    else counts.set(id, next)
  }
  const full = (counts: Map<string, number>, id: string, limit: number) => limit > 0 && (counts.get(id) ?? 0) >= limit

  return (principal: Principal): Effect.Effect<void, RouteRefused, Scope.Scope> => {
    const key = principal.key.id
    const user = principal.user.name
    return Effect.acquireRelease(
      Effect.suspend(() => {
        if (full(byKey, key, caps.perKey)) return Effect.fail(new RouteRefused({ envelope: tooMany("key", caps.perKey) }))
        if (full(byUser, user, caps.perUser)) return Effect.fail(new RouteRefused({ envelope: tooMany("user", caps.perUser) }))
        add(byKey, key, 1)
        add(byUser, user, 1)
        return Effect.void
      }),
      () =>
        Effect.sync(() => {
          add(byKey, key, -1)
          add(byUser, user, -1)
        })
    )
  }
}
