/**
 * `npx modelgate` opens the database the gateway beside it uses, as `npm start` picks it (the
 * demo's ./data/demo.db with no config; ./data/modelgate.db with one; DATABASE_URL; --database),
 * and says on stderr which one it opened. Beside a running demo: the README's CLI flow works, the
 * key it issues is accepted by that gateway.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Option, Result } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chooseDatabase } from "../../src/cli/database.js"
import { DEFAULT_SQLITE_FILE, DEMO_SQLITE_FILE } from "../../src/store/target.js"
import { cleanEnv, cli, type Gateway, startGateway } from "./processes.js"

describe("the CLI beside a running demo", () => {
  let dir: string
  let gateway: Gateway
  const env = cleanEnv({ LOG_LEVEL: "Warn" })

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "modelgate-cli-demo-"))
    gateway = await startGateway(dir, env)
  }, 70_000)

  afterAll(async () => {
    await gateway.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it("lists the demo's user from the demo's database and says which database it opened", async () => {
    const users = await cli(dir, env, "users", "list")
    expect(users.stderr).toContain(`database: sqlite:${join(dir, "data", "demo.db")}`)
    expect(users.stderr).not.toContain("new, empty")
    expect(users.code).toBe(0)
    expect(users.stdout).toMatch(/^demo\s+\d/m)
  }, 30_000)

  it("issues a key that the running gateway accepts", async () => {
    const created = await cli(dir, env, "keys", "create", "--user", "demo", "--group", "demo-openai", "--name", "cli-key")
    expect(created.code).toBe(0)
    const key = /(sk-mg-[A-Za-z0-9_-]{20,})/.exec(created.stdout)?.[1]
    expect(key).toBeDefined()
    // The gateway's key cache lives about a second; a new key is a miss and is read from the database at once.
    const res = await fetch(`${gateway.base}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-5.4", input: "Hello!" })
    })
    expect(res.status).toBe(200)
  }, 30_000)
})

describe("the CLI's database, as npm start picks it", () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "modelgate-cli-db-"))
    writeFileSync(join(dir, "gateway.yaml"), "groups: []\nusers: []\nkeys: []\naccounts: []\n")
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it("with a config file (--config or MODELGATE_CONFIG): ./data/modelgate.db, said new when no gateway has used it", async () => {
    const flag = await cli(dir, cleanEnv(), "users", "list", "--config", "gateway.yaml")
    expect(flag.code).toBe(0)
    expect(flag.stderr).toContain(`database: sqlite:${join(dir, "data", "modelgate.db")} (--config given, DATABASE_URL unset; a new, empty database`)
    const fromEnv = await cli(dir, cleanEnv({ MODELGATE_CONFIG: "gateway.yaml" }), "users", "list", "--json")
    expect(fromEnv.stderr).toContain(`database: sqlite:${join(dir, "data", "modelgate.db")} (MODELGATE_CONFIG set`)
    expect(JSON.parse(fromEnv.stdout)).toEqual([])
  }, 30_000)

  it("DATABASE_URL, and --database over it", async () => {
    const url = await cli(dir, cleanEnv({ DATABASE_URL: "sqlite:./elsewhere.db" }), "users", "list")
    expect(url.stderr).toContain(`database: sqlite:${join(dir, "elsewhere.db")} (DATABASE_URL`)
    const flag = await cli(dir, cleanEnv({ DATABASE_URL: "sqlite:./elsewhere.db" }), "users", "list", "--database", "sqlite:./flag.db")
    expect(flag.stderr).toContain(`database: sqlite:${join(dir, "flag.db")} (--database`)
  }, 30_000)

  it("the rules: --database, DATABASE_URL, a config's default, the demo's", () => {
    const pick = (database: string | undefined, config: string | undefined, env: Record<string, string>) => {
      const choice = chooseDatabase({ database: Option.fromNullishOr(database), config: Option.fromNullishOr(config), env })
      if (Result.isFailure(choice)) return `refused: ${choice.failure}`
      return choice.success.target._tag === "Sqlite" ? choice.success.target.filename : "postgres"
    }
    expect(pick(undefined, undefined, {})).toBe(DEMO_SQLITE_FILE)
    expect(pick(undefined, undefined, { DATABASE_URL: " " })).toBe(DEMO_SQLITE_FILE)
    expect(pick(undefined, "x.yaml", {})).toBe(DEFAULT_SQLITE_FILE)
    expect(pick(undefined, undefined, { MODELGATE_CONFIG: "x.yaml" })).toBe(DEFAULT_SQLITE_FILE)
    expect(pick(undefined, "x.yaml", { DATABASE_URL: "sqlite:a.db" })).toBe("a.db")
    expect(pick(undefined, undefined, { DATABASE_URL: "postgres://u:p@h/db" })).toBe("postgres")
    expect(pick("b.db", "x.yaml", { DATABASE_URL: "sqlite:a.db" })).toBe("b.db")
    expect(pick("mysql://h/db", undefined, {})).toMatch(/^refused: DATABASE_URL scheme is not supported/)
  })
})
