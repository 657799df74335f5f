/**
 * Account keys given by value, as an operator gives them to `npm start` and `npx modelgate`: the
 * gateway started with MODELGATE_SECRET_KEY stores a key posted to /admin/accounts and sends it
 * upstream; the CLI takes one piped on stdin; neither prints it, nor does the gateway's log.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { randomBytes } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { cleanEnv, CLI, freePort, type Gateway, run, startGateway } from "./processes.js"

const TOKEN = "account-keys-admin-token-0123"
const POSTED = "sk-process-posted-upstream-key-01"
const PIPED = "sk-process-piped-upstream-key-002"

describe("account keys given by value to npm start and npx modelgate", () => {
  let dir: string
  let gateway: Gateway
  let upstream: FakeUpstream
  let admin: string
  const env = cleanEnv({ LOG_LEVEL: "Info", MODELGATE_SECRET_KEY: randomBytes(32).toString("base64") })

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "modelgate-account-keys-"))
    upstream = await startFakeUpstream()
    const adminPort = await freePort()
    admin = `http://127.0.0.1:${adminPort}`
    gateway = await startGateway(dir, { ...env, ADMIN_PORT: String(adminPort), ADMIN_TOKEN: TOKEN })
  }, 70_000)

  afterAll(async () => {
    await gateway.stop()
    await upstream.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const adminCall = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${admin}${path}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return { status: res.status, text: await res.text() }
  }

  it("POST /admin/accounts stores api_key under the gateway's MODELGATE_SECRET_KEY and the upstream gets it", async () => {
    const added = await adminCall("POST", "/admin/accounts", {
      name: "posted-oa",
      platform: "openai",
      base_url: `${upstream.url}/v1`,
      api_key: POSTED,
      groups: ["demo-openai"]
    })
    expect(added.status).toBe(201)
    expect(JSON.parse(added.text)).toMatchObject({ name: "posted-oa", key_source: "stored" })
    expect(added.text).not.toContain(POSTED)
    expect((await adminCall("POST", "/admin/accounts/simulator-openai/take-out")).status).toBe(200)
    const res = await fetch(`${gateway.base}/v1/responses`, {
      method: "POST",
      headers: { authorization: "Bearer sk-modelgate-demo-0000000000000000", "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-5.4", input: "Hello!" })
    })
    expect(res.status).toBe(200)
    await res.text()
    expect(upstream.requests.at(-1)?.headers["authorization"]).toBe(`Bearer ${POSTED}`)
  }, 30_000)

  it("modelgate accounts add takes the key piped on stdin; list shows it stored; no output or log holds a key", async () => {
    const added = await run([CLI, "accounts", "add", "piped-oa", "--platform", "openai", "--group", "demo-openai"], {
      cwd: dir,
      env,
      input: `${PIPED}\n`
    })
    expect(added.code).toBe(0)
    expect(added.stdout).toContain("Added account 'piped-oa'")
    const listed = await run([CLI, "accounts", "list"], { cwd: dir, env })
    expect(listed.code).toBe(0)
    expect(listed.stdout).toMatch(/piped-oa\s+openai\s+http\s+stored/)
    expect(listed.stdout).toMatch(/posted-oa\s+openai\s+http\s+stored/)
    for (const text of [added.stdout, added.stderr, listed.stdout, listed.stderr, gateway.output()]) {
      expect(text).not.toContain(POSTED)
      expect(text).not.toContain(PIPED)
    }
  }, 30_000)
})
