/**
 * A door's program: what it answered, or why it refused, each with the door's record of the
 * request (who called, the model, the admitted turn's facts) once it knows them. Its route hands
 * the record to the edge (`edgeDoor`, ./edge.ts), which sets the turn's rate-limit headers on
 * whatever answer it gets and, once the request is over, logs what the record came to (`factsOf`).
 */
import { Data, Effect, type Scope } from "effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import type { TurnFacts, TurnFailed } from "../../core/turnFacts.js"
import type { RouteRefused } from "../../domain/envelope.js"
import type { Platform } from "../../domain/config.js"
import type { GatewayError } from "../../domain/errors.js"
import type { Principal } from "../../domain/model.js"
import type { RequestFacts } from "../../observability/requestFacts.js"

export type DoorName = RequestFacts["door"]

/** What a door knows of its request: set as it learns it (values, never written back). */
export interface DoorRecord {
  readonly door: DoorName
  readonly keyId: string
  readonly group: string
  /** The group's platform: the provider its upstream accounts are on. */
  readonly platform?: Platform | undefined
  readonly model?: string | undefined
  /** The turn's facts (or, for a call outside a turn, its attempts): what it came to, read once over. */
  readonly turn?: TurnFacts | undefined
}

/** The record of a door that authenticated `principal`. */
export const recordFor = (door: DoorName, principal: Principal): DoorRecord => ({
  door,
  keyId: principal.key.id,
  group: principal.group.name,
  platform: principal.group.platform
})

export interface Served {
  readonly response: HttpServerResponse.HttpServerResponse
  readonly record: DoorRecord
}

/** A door's refusal: the error its client is answered with, and its record (none before the key was known). */
export class Refused extends Data.TaggedError("Refused")<{
  readonly error: GatewayError | RouteRefused
  readonly record: DoorRecord | undefined
}> {}

export type DoorProgram = Effect.Effect<Served, Refused, HttpServerRequest.HttpServerRequest | Scope.Scope>

/** A turn the core failed, as the door's refusal: its record with what the turn came to. */
export const turnRefused = (record: DoorRecord) => (failed: TurnFailed): Refused =>
  new Refused({ error: failed.error, record: { ...record, turn: failed.facts } })

/** Fails `effect` as the door's refusal with `record`. */
export const refusedWith = (record: DoorRecord | undefined) => <A, R>(effect: Effect.Effect<A, GatewayError | RouteRefused, R>) =>
  Effect.mapError(effect, (error) => new Refused({ error, record }))

/** The headers every answer to the request carries: its turn's `x-ratelimit-*`. */
export const recordHeaders = (record: DoorRecord | undefined): Readonly<Record<string, string>> | undefined => {
  const headers = record?.turn?.headers
  if (headers === undefined) return undefined
  for (const _ in headers) return headers
  return undefined
}

/** The door as a plain route (for the router mounted on its own): its answer, or its error. */
export const asRoute = (program: DoorProgram) =>
  Effect.matchEffect(program, {
    onFailure: (refused) => Effect.fail(refused.error),
    onSuccess: ({ record, response }) => {
      const headers = recordHeaders(record)
      return Effect.succeed(headers === undefined ? response : HttpServerResponse.setHeaders(response, headers))
    }
  })

/** What the record came to, once the request is over (its settlement done). */
export const factsOf = (record: DoorRecord): Effect.Effect<RequestFacts> => {
  const { door, group, keyId, model, platform, turn } = record
  if (turn === undefined) return Effect.succeed({ door, keyId, group, platform, model })
  return Effect.map(turn.outcome, ({ answered, attempts, settled }): RequestFacts => {
    const last = attempts.at(-1)
    return {
      door,
      keyId,
      group,
      platform,
      model,
      account: last?.account,
      upstreamStatus: last?.status,
      attempts: attempts.length === 0 ? undefined : attempts.length,
      upstreamLatencyMs: last?.latencyMs,
      inputTokens: settled?.inputTokens,
      outputTokens: settled?.outputTokens,
      cacheReadTokens: settled?.cacheReadTokens,
      cacheCreationTokens: settled?.cacheCreationTokens,
      costMicros: settled?.costMicros,
      answer: answered
    }
  })
}
