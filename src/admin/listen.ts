/**
 * Whether and where the admin API listens, from ADMIN_PORT / ADMIN_HOST / ADMIN_TOKEN. Apart from
 * the server (AdminServer.ts) so that reading it does not load the API: `npm start` imports the
 * server only when ADMIN_PORT is set.
 */
import { Config, Effect, Option, Redacted } from "effect"

export interface AdminListen {
  readonly port: number
  readonly host: string
  readonly token: Redacted.Redacted<string>
}

/** Shorter tokens are refused: the admin token guards every user's keys and balances. */
export const MIN_TOKEN_LENGTH = 16

/**
 * None when ADMIN_PORT is unset; a failure saying what is wrong when it is set without a usable
 * ADMIN_TOKEN (the listener never starts unprotected).
 */
export const adminListenFromEnv: Effect.Effect<Option.Option<AdminListen>, Config.ConfigError | Error> = Effect.gen(
  function*() {
    const port = yield* Config.option(Config.Port("ADMIN_PORT"))
    if (Option.isNone(port)) return Option.none()
    const host = yield* Config.String("ADMIN_HOST").pipe(Config.withDefault("127.0.0.1"))
    const token = yield* Config.option(Config.Redacted("ADMIN_TOKEN"))
    if (Option.isNone(token) || Redacted.value(token.value).trim() === "") {
      return yield* Effect.fail(new Error("ADMIN_PORT is set but ADMIN_TOKEN is not: the admin API does not start without a token"))
    }
    if (Redacted.value(token.value).length < MIN_TOKEN_LENGTH) {
      return yield* Effect.fail(new Error(`ADMIN_TOKEN must be at least ${MIN_TOKEN_LENGTH} characters`))
    }
    return Option.some({ port: port.value, host, token: token.value })
  }
)
