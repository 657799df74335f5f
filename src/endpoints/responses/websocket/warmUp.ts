/**
 * What a warm-up (`generate: false`) must pass before it is answered: it calls no model and costs
 * nothing, but it is a request like any other for the key's limits, or a client could send
 * warm-ups (each kept as a chainable transcript) as fast as it likes. So the key is checked again
 * (one disabled mid-connection is refused) and one request is charged against rpm_limit; tokens are
 * charged when a turn sends the input upstream.
 */
import { Effect } from "effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import { type Envelope, envelopeOf } from "../../../domain/envelope.js"
import { KeyRepo } from "../../../services/keyRepo/KeyRepo.js"
import { RateLimits } from "../../../services/rateLimits/RateLimits.js"
import { authenticate } from "../../kit/auth.js"
import { refusalHeaders } from "./turn.js"

/** Admits one warm-up of a connection: undefined when it may be answered, else the envelope refusing it. */
export type WarmUpAdmission = Effect.Effect<Envelope | undefined>

/** The warm-up admission of the connection `handshake` opened, with its services resolved once. */
export const makeWarmUpAdmission = Effect.gen(function*() {
  const keys = yield* KeyRepo
  const rateLimits = yield* RateLimits
  return (handshake: HttpServerRequest.HttpServerRequest): WarmUpAdmission =>
    Effect.gen(function*() {
      const principal = yield* authenticate(keys, handshake, { allowExpired: false })
      const admission = yield* rateLimits.admit(principal, () => 0)
      yield* admission.settle(0)
      return undefined
    }).pipe(Effect.catch((error) => {
      const envelope = envelopeOf(error)
      const headers = refusalHeaders(envelope, undefined)
      return Effect.succeed<Envelope>(headers === undefined ? envelope : { ...envelope, headers })
    }))
})
