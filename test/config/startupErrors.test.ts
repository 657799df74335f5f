/**
 * Start-up failures a person can act on: `npm start` with a config of several mistakes, a busy
 * port, a wrong PORT / LOG_LEVEL / LOG_FORMAT prints one block on stderr naming every mistake and
 * the setting to change, with no stack trace, and exits 1; the environment is refused before a
 * database is opened.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cleanEnv, freePort, run, START } from "../cli/processes.js"

/** A stack frame as Node prints one. */
const STACK = /^\s+at /m

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "modelgate-startup-"))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const start = (env: Record<string, string>, ...args: Array<string>) => run([START, ...args], { cwd: dir, env: cleanEnv(env) })

describe("npm start refuses a bad start in words", () => {
  it("a config with several mistakes: all of them in one block, misspelt names with a suggestion, no stack", async () => {
    writeFileSync(
      join(dir, "several.yaml"),
      `groups:
  - name: team
    platform: openai
    modls: [gpt-5.4]
users:
  - name: alice
    balanse_usd: 5
keys:
  - key: sk-team-alice-0000000001
    user: bob
    group: team
accounts:
  - name: up
    platform: openai
    kind: simulator
    prority: 3
    groups: [team, ghost]
`
    )
    const ran = await start({ PORT: String(await freePort()) }, "--config", "several.yaml")
    expect(ran.code).toBe(1)
    expect(ran.stderr.trim()).toBe(
      [
        "modelgate did not start: invalid configuration in several.yaml (5 problems):",
        "  - groups[0].modls: unknown field 'modls'; did you mean 'models'?",
        "  - users[0].balanse_usd: unknown field 'balanse_usd'; did you mean 'balance_usd'?",
        "  - accounts[0].prority: unknown field 'prority'; did you mean 'priority'?",
        "  - keys[0].user: unknown user 'bob'",
        "  - accounts[0].groups[1]: unknown group 'ghost'"
      ].join("\n")
    )
    expect(ran.stdout).not.toMatch(STACK)
    expect(existsSync(join(dir, "data"))).toBe(false)
  }, 60_000)

  it("a value off by a letter from the allowed ones is named", async () => {
    writeFileSync(join(dir, "literal.yaml"), "groups:\n  - name: team\n    platform: opneai\nusers: []\nkeys: []\naccounts: []\n")
    const ran = await start({ PORT: String(await freePort()) }, "--config", "literal.yaml")
    expect(ran.code).toBe(1)
    expect(ran.stderr).toContain(`groups[0].platform: Expected "openai" | "anthropic" | "antigravity", got "opneai"; did you mean 'openai'?`)
    expect(ran.stderr).not.toMatch(STACK)
  }, 60_000)

  it("PORT=abc, LOG_LEVEL and LOG_FORMAT wrong: one block listing each with its valid values, before any database is opened", async () => {
    const ran = await start({ PORT: "abc", LOG_LEVEL: "Verbose", LOG_FORMAT: "xml" })
    expect(ran.code).toBe(1)
    expect(ran.stderr.trim()).toBe(
      [
        "modelgate did not start: the environment has problems:",
        "  - LOG_LEVEL=Verbose: not a log level; use one of Trace, Debug, Info, Warn, Error, Fatal, None, All",
        "  - LOG_FORMAT=xml: use json (the default) or pretty",
        "  - PORT=abc: not a port; use a whole number from 1 to 65535 (default 8080)"
      ].join("\n")
    )
    expect(ran.stdout).toBe("")
    expect(existsSync(join(dir, "data"))).toBe(false)
  }, 60_000)

  it("a MODELGATE_SECRET_KEY that is not 32 bytes as hex or base64: said without repeating it, before any database is opened", async () => {
    const ran = await start({ PORT: String(await freePort()), MODELGATE_SECRET_KEY: "correct horse battery staple" })
    expect(ran.code).toBe(1)
    expect(ran.stderr.trim()).toBe(
      "modelgate did not start: the environment has problems: MODELGATE_SECRET_KEY must be 32 random bytes as 64 hex characters " +
        "or base64, e.g. `openssl rand -hex 32` (the value set has 28 characters)"
    )
    expect(ran.stdout).toBe("")
    expect(existsSync(join(dir, "data"))).toBe(false)
  }, 60_000)

  it("LOG_LEVEL in the wrong case: the level it was meant to be", async () => {
    const ran = await start({ PORT: String(await freePort()), LOG_LEVEL: "info" })
    expect(ran.code).toBe(1)
    expect(ran.stderr.trim()).toBe(
      "modelgate did not start: the environment has problems: LOG_LEVEL=info: not a log level; use one of Trace, Debug, Info, Warn, Error, Fatal, None, All (did you mean 'Info'?)"
    )
  }, 60_000)

  describe("a busy port", () => {
    let busy: Server
    let port: number
    beforeAll(async () => {
      port = await freePort()
      busy = createServer()
      await new Promise<void>((resolve) => busy.listen(port, "127.0.0.1", resolve))
    })
    afterAll(() => new Promise<void>((resolve) => busy.close(() => resolve())))

    it("says which port is in use and which setting to change, with no stack", async () => {
      const ran = await start({ PORT: String(port), LOG_LEVEL: "Warn" })
      expect(ran.code).toBe(1)
      expect(ran.stderr.trim()).toBe(`modelgate did not start: port ${port} is in use; set PORT to a free port (or stop what listens there)`)
      expect(ran.stdout).not.toMatch(STACK)
    }, 60_000)

    it("the admin listener's port names ADMIN_PORT", async () => {
      const ran = await start({ PORT: String(await freePort()), ADMIN_PORT: String(port), ADMIN_TOKEN: "a-token-of-enough-length", LOG_LEVEL: "Warn" })
      expect(ran.code).toBe(1)
      expect(ran.stderr).toContain(`port ${port} is in use; set ADMIN_PORT`)
    }, 60_000)
  })
})
