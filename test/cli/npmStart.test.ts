/**
 * The README's first command as a user runs it: `npm start` (scripts/start.mjs: the bundle, built
 * if stale) with no config serves the demo on simulator upstreams, the dashboard, and with
 * ADMIN_PORT the admin API and its docs page; SIGTERM ends it cleanly. Runs the real bundle, so
 * what only the bundle does (locating ui/ and Scalar's script from .build/) is covered too.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { delimiter, join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { claudeAvailable } from "../support/claudeCode.js"

const ROOT = join(import.meta.dirname, "..", "..")
const TOKEN = "npm-start-admin-token-0123"

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))))
    })
  })

describe("npm start, with no config", () => {
  let child: ChildProcess
  let dir: string
  let out = ""
  let base = ""
  let admin = ""

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "modelgate-start-"))
    const [port, adminPort] = [await freePort(), await freePort()]
    base = `http://127.0.0.1:${port}`
    admin = `http://127.0.0.1:${adminPort}`
    // As `npm start` runs it (package.json), from another directory: the demo database goes there.
    child = spawn(join(ROOT, "node_modules", ".bin", "node"), ["--max-semi-space-size=32", join(ROOT, "scripts", "start.mjs")], {
      cwd: dir,
      env: { ...process.env, PORT: String(port), ADMIN_PORT: String(adminPort), ADMIN_TOKEN: TOKEN, LOG_LEVEL: "Warn" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    child.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString()))
    child.stderr?.on("data", (chunk: Buffer) => (out += chunk.toString()))
    const deadline = Date.now() + 60_000 // a cold start bundles src/ first
    for (;;) {
      const up = await fetch(`${base}/health`).then((r) => r.ok, () => false)
      if (up) break
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`npm start did not answer /health:\n${out}`)
      await new Promise((r) => setTimeout(r, 200))
    }
  }, 70_000)

  afterAll(() => {
    if (child.exitCode === null) child.kill("SIGKILL")
    rmSync(dir, { recursive: true, force: true })
  })

  it("serves the demo key it prints against the simulator", async () => {
    const key = /demo key: +(\S+)/.exec(out)?.[1]
    expect(key).toBeDefined()
    const res = await fetch(`${base}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-5.4", input: "Hello!" })
    })
    expect(res.status).toBe(200)
    expect(((await res.json()) as { status: string }).status).toBe("completed")
  })

  it("prints the Anthropic demo key and a Claude Code command line that work on the Messages door", async () => {
    const key = /anthropic key: +(\S+)/.exec(out)?.[1]
    expect(key).toBeDefined()
    const claude = /Claude Code: +ANTHROPIC_BASE_URL=(\S+) ANTHROPIC_API_KEY=(\S+) npx claude -p "hello" --model (\S+)/.exec(out)
    expect(claude?.[1]).toBe(base)
    expect(claude?.[2]).toBe(key)
    const res = await fetch(`${base}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": key!, "anthropic-version": "2023-06-01", "content-type": "application/json" },
      body: JSON.stringify({ model: claude?.[3], max_tokens: 64, messages: [{ role: "user", content: "hello" }] })
    })
    expect(res.status).toBe(200)
    expect(((await res.json()) as { type: string }).type).toBe("message")
  })

  it("its curl line, run as printed, prints the stream and nothing else (no progress meter)", () => {
    const line = /try: +(curl .*)$/m.exec(out)?.[1]
    expect(line).toBeDefined()
    // Output to a pipe, as `curl ... | grep` or a log: where curl draws its meter unless -s.
    const ran = spawnSync("bash", ["-c", `${line!} 2>&1`], { encoding: "utf8", timeout: 30_000 })
    expect(ran.status).toBe(0)
    expect(ran.stdout).toMatch(/^event: response\.created\n/)
    expect(ran.stdout).toContain("event: response.completed")
    expect(ran.stdout).not.toMatch(/% Total/)
  })

  it.skipIf(!claudeAvailable)("its Claude Code command line, run as printed in the checkout after npm ci, gets the demo's answer", async () => {
    const line = /Claude Code: +(.*)$/m.exec(out)?.[1]
    expect(line).toBeDefined()
    const home = mkdtempSync(join(tmpdir(), "modelgate-claude-"))
    try {
      // A fresh shell's PATH (no node_modules/.bin, no `claude`) and HOME; the rest keeps Claude Code off the network.
      const env = {
        PATH: (process.env["PATH"] ?? "/usr/bin:/bin").split(delimiter).filter((d) => !d.endsWith(join("node_modules", ".bin"))).join(delimiter),
        HOME: home,
        TMPDIR: home,
        npm_config_update_notifier: "false",
        DISABLE_TELEMETRY: "1",
        DISABLE_ERROR_REPORTING: "1",
        DISABLE_AUTOUPDATER: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        CLAUDE_CODE_MAX_RETRIES: "0"
      }
      const ran = spawnSync("bash", ["-c", line!], { cwd: ROOT, env, encoding: "utf8", timeout: 90_000 })
      expect(ran.status, `${ran.stdout}\n${ran.stderr}`).toBe(0)
      // The simulator's answer quotes the prompt.
      expect(ran.stdout).toContain('"hello"')
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  }, 100_000)

  it("serves the dashboard, the admin API and its docs page from the bundle", async () => {
    const ui = await fetch(`${base}/ui`)
    expect(ui.status).toBe(200)
    expect(await ui.text()).toContain('data-mode="key"')
    expect((await fetch(`${base}/ui/vendor/uPlot.iife.min.js`)).status).toBe(200)
    const users = await fetch(`${admin}/admin/users`, { headers: { authorization: `Bearer ${TOKEN}` } })
    expect(users.status).toBe(200)
    expect(await users.json()).toEqual([expect.objectContaining({ name: "demo" })])
    expect((await fetch(`${admin}/docs`)).status).toBe(200)
    const script = await fetch(`${admin}/docs/scalar.js`)
    expect(script.status).toBe(200)
    expect((await script.text()).length).toBeGreaterThan(100_000)
    expect(await (await fetch(`${admin}/ui`)).text()).toContain('data-mode="admin"')
  })

  it("ends cleanly on SIGTERM", async () => {
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    child.kill("SIGTERM")
    expect(await exited).toBe(0)
  }, 20_000)
})
