/** When the admin listener starts, and when it refuses to: read from the environment. */
import { ConfigProvider, Effect, Exit, Option, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import { adminListenFromEnv } from "../../src/admin/listen.js"

const read = (env: Record<string, string>) =>
  Effect.runPromiseExit(adminListenFromEnv.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env))))

const failure = async (env: Record<string, string>) => {
  const exit = await read(env)
  if (Exit.isSuccess(exit)) throw new Error("expected a refusal")
  return String(exit.cause)
}

describe("the admin listener's settings", () => {
  it("is off without ADMIN_PORT, whatever else is set", async () => {
    expect(await read({ ADMIN_TOKEN: "a-long-enough-admin-token" })).toEqual(Exit.succeed(Option.none()))
  })

  it("listens on 127.0.0.1 by default, with the token kept redacted", async () => {
    const exit = await read({ ADMIN_PORT: "9100", ADMIN_TOKEN: "a-long-enough-admin-token" })
    if (!Exit.isSuccess(exit) || Option.isNone(exit.value)) throw new Error("expected settings")
    expect(exit.value.value.port).toBe(9100)
    expect(exit.value.value.host).toBe("127.0.0.1")
    expect(String(exit.value.value.token)).not.toContain("a-long-enough")
    expect(Redacted.value(exit.value.value.token)).toBe("a-long-enough-admin-token")
  })

  it("refuses to start without a token, or with a short one", async () => {
    expect(await failure({ ADMIN_PORT: "9100" })).toContain("ADMIN_TOKEN is not")
    expect(await failure({ ADMIN_PORT: "9100", ADMIN_TOKEN: "  " })).toContain("ADMIN_TOKEN is not")
    expect(await failure({ ADMIN_PORT: "9100", ADMIN_TOKEN: "short" })).toContain("at least 16")
    expect(await failure({ ADMIN_PORT: "not-a-port", ADMIN_TOKEN: "a-long-enough-admin-token" })).toContain("ADMIN_PORT")
  })
})
