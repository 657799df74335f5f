/**
 * Start-up failures a person can act on: `npm start` with a config of several mistakes, a busy
 * port, a wrong PORT / LOG_LEVEL / LOG_FORMAT prints one block on stderr naming every mistake and
 * the setting to change, with no stack trace, and exits 1; the environment is refused before a
 * database is opened.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cleanEnv, freePort, run, START, startGateway } from "../cli/processes.js"
import { PG_URL, postgresReachable, requireServices } from "../store/harness.js"

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
    expect(ran.stderr).toContain(`groups[0].platform: Expected "openai" | "anthropic" | "antigravity" | "openai_chat", got "opneai"; did you mean 'openai'?`)
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

  it("LOG_LEVEL in any case, and the CLI's `warning`, is the level it names", async () => {
    const levels = join(dir, "levels")
    mkdirSync(levels)
    for (const [level, infoShown] of [["info", true], ["WARN", false], ["warning", false]] as const) {
      const gateway = await startGateway(levels, cleanEnv({ LOG_LEVEL: level }))
      await gateway.stop()
      expect(gateway.output(), level).not.toContain("environment has problems")
      expect(gateway.output().includes(`"message":"modelgate listening","logLevel":"INFO"`), level).toBe(infoShown)
    }
  }, 120_000)

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

/** A config the gateway starts on (not the demo, which ignores DATABASE_URL). */
const GATEWAY_YAML = "groups:\n  - name: team\n    platform: openai\nusers: []\nkeys: []\naccounts: []\n"

/** `npm start --config gateway.yaml` in a directory of its own, so a database file it makes is seen. */
const startWith = async (env: Record<string, string>) => {
  const cwd = mkdtempSync(join(dir, "store-"))
  writeFileSync(join(cwd, "gateway.yaml"), GATEWAY_YAML)
  const ran = await run([START, "--config", "gateway.yaml"], { cwd, env: cleanEnv({ PORT: String(await freePort()), ...env }) })
  return { ...ran, cwd }
}

/** PG_URL with its host, port, database or user changed (and no schema= of the test harness's). */
const pgUrl = (change: (url: URL) => void): { url: string; host: string; port: string; user: string } => {
  const url = new URL(PG_URL)
  url.searchParams.delete("schema")
  change(url)
  return { url: url.toString(), host: url.hostname, port: url.port || "5432", user: decodeURIComponent(url.username) }
}

const pgUp = await postgresReachable()
if (!pgUp && !requireServices) console.warn(`startupErrors.test: PostgreSQL at ${PG_URL} is unreachable: its cases are skipped`)

describe("npm start names the database it could not use, why, and what to change", () => {
  it.skipIf(!pgUp && !requireServices)("a database that does not exist: its name, the server's words and createdb", async () => {
    const at = pgUrl((u) => (u.pathname = "/modelgate_no_such_db"))
    const ran = await startWith({ DATABASE_URL: at.url })
    expect(ran.code).toBe(1)
    expect(ran.stderr.trim()).toBe(
      `modelgate did not start: cannot connect to PostgreSQL at ${at.host}:${at.port} (database "modelgate_no_such_db", user "${at.user}"): ` +
        `database "modelgate_no_such_db" does not exist. Fix the database name in DATABASE_URL, or create the database ` +
        `(createdb -h ${at.host} -p ${at.port} -U ${at.user} modelgate_no_such_db).`
    )
    expect(ran.stdout).not.toMatch(STACK)
  }, 60_000)

  it.skipIf(!pgUp && !requireServices)("a user the server does not know: authentication failed, the user named, the password never", async () => {
    const at = pgUrl((u) => {
      u.username = "modelgate_no_such_role"
      u.password = "never-printed-secret"
    })
    const ran = await startWith({ DATABASE_URL: at.url })
    expect(ran.code).toBe(1)
    // Under trust the server refuses the role (28000); under password authentication, the password (28P01).
    expect(ran.stderr).toMatch(
      new RegExp(
        `^modelgate did not start: cannot connect to PostgreSQL at ${at.host}:${at.port} \\(database "[^"]+", user "modelgate_no_such_role"\\): ` +
          `authentication failed: (role "modelgate_no_such_role" does not exist|password authentication failed for user "modelgate_no_such_role")\\. Fix the user`
      )
    )
    expect(ran.stderr + ran.stdout).not.toContain("never-printed-secret")
  }, 60_000)

  it("a port where nothing listens: connection refused, start PostgreSQL or fix the host and port", async () => {
    const port = await freePort()
    const ran = await startWith({ DATABASE_URL: `postgres://gateway:pw@127.0.0.1:${port}/modelgate` })
    expect(ran.code).toBe(1)
    expect(ran.stderr.trim()).toBe(
      `modelgate did not start: cannot connect to PostgreSQL at 127.0.0.1:${port} (database "modelgate", user "gateway"): ` +
        "connection refused (nothing listens there). Start PostgreSQL, or fix the host and port in DATABASE_URL."
    )
  }, 60_000)

  describe("a server that accepts and never answers", () => {
    let silent: Server
    let port: number
    const held: Array<Socket> = []
    beforeAll(async () => {
      port = await freePort()
      silent = createServer((socket) => void held.push(socket))
      await new Promise<void>((resolve) => silent.listen(port, "127.0.0.1", resolve))
    })
    afterAll(() => {
      for (const socket of held) socket.destroy()
      return new Promise<void>((resolve) => silent.close(() => resolve()))
    })

    it("no answer within STORE_TIMEOUT_MS", async () => {
      const ran = await startWith({ DATABASE_URL: `postgres://gateway@127.0.0.1:${port}/modelgate`, STORE_TIMEOUT_MS: "500" })
      expect(ran.code).toBe(1)
      expect(ran.stderr.trim()).toBe(
        `modelgate did not start: cannot connect to PostgreSQL at 127.0.0.1:${port} (database "modelgate", user "gateway"): no answer within 500 ms. ` +
          "Check that PostgreSQL runs there and that nothing (a firewall) holds the connection; STORE_TIMEOUT_MS sets the wait."
      )
    }, 60_000)
  })

  it("DATABASE_URL that is neither a postgres:// URL nor a SQLite file is refused, not made a file of that name", async () => {
    const ran = await startWith({ DATABASE_URL: "garbage" })
    expect(ran.code).toBe(1)
    expect(ran.stderr.trim()).toBe(
      "modelgate did not start: DATABASE_URL=garbage is neither a postgres:// URL nor a SQLite file; " +
        "use postgres://user@host:5432/db, sqlite:<path>, or a path ending in .db, .sqlite or .sqlite3"
    )
    expect(existsSync(join(ran.cwd, "garbage"))).toBe(false)
  }, 60_000)

  it("Redis unreachable is said as Redis, not as the database, once", async () => {
    const port = await freePort()
    const ran = await startWith({ REDIS_URL: `redis://127.0.0.1:${port}` })
    expect(ran.code).toBe(1)
    expect(ran.stderr.trim()).toBe(
      `modelgate did not start: Redis at redis://127.0.0.1:${port} is unreachable (connect ECONNREFUSED 127.0.0.1:${port}). ` +
        "Start Redis, fix REDIS_URL, or unset REDIS_URL to schedule in process (one instance)."
    )
  }, 60_000)
})
