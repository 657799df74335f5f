/**
 * Signals reach the gateway however it is started (issue: "runs as infrastructure"): SIGTERM to
 * `npm start`'s own process (what a process manager or `docker stop` on an npm entry point sends)
 * drains the node process behind it: new connections are refused, a running stream finishes up to
 * DRAIN_SECONDS and then ends with `server_shutting_down`, the process exits 0 and says in one line
 * that it stopped and how many streams it cut; the cut stream's access line says so too.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startFakeUpstream, type FakeUpstream } from "../support/fakeUpstream.js"
import { cleanEnv, freePort, ROOT } from "../cli/processes.js"

const KEY = "sk-signals-test-key-0001"

const configFor = (upstream: string) => `
groups:
  - name: g
    platform: openai
    models: [gpt-5]
users:
  - name: u
    balance_usd: 10
keys:
  - key: ${KEY}
    name: k
    user: u
    group: g
accounts:
  - name: a
    platform: openai
    base_url: ${upstream}/v1
    api_key_env: SIGNALS_TEST_UPSTREAM_KEY
    groups: [g]
`

interface Started {
  readonly child: ChildProcess
  readonly base: string
  readonly output: () => string
  readonly exited: Promise<number | null>
}

/** `npm start -- --config FILE` from the project root, as an operator's unit or container runs it. */
const npmStart = async (dir: string, upstream: string, extraEnv: Record<string, string>): Promise<Started> => {
  const config = join(dir, "gateway.yaml")
  writeFileSync(config, configFor(upstream))
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const child = spawn("npm", ["start", "--", "--config", config], {
    cwd: ROOT,
    env: cleanEnv({
      PORT: String(port),
      DATABASE_URL: join(dir, "gateway.db"),
      SETTLEMENT_JOURNAL_PATH: join(dir, "settlements.journal"),
      SIGNALS_TEST_UPSTREAM_KEY: "sk-upstream-signals",
      LOG_LEVEL: "Info",
      ...extraEnv
    }),
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  child.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString()))
  child.stderr?.on("data", (chunk: Buffer) => (out += chunk.toString()))
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  const deadline = Date.now() + 60_000
  for (;;) {
    if (await fetch(`${base}/health`).then((r) => r.ok, () => false)) break
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill("SIGKILL")
      throw new Error(`npm start did not answer /health:\n${out}`)
    }
    await new Promise((r) => setTimeout(r, 200))
  }
  return { child, base, output: () => out, exited }
}

/** The node process npm started (npm's only child once `exec` has replaced the shell). */
const gatewayPids = (): Array<number> => {
  const text = execFileSync("ps", ["-eo", "pid,args"], { encoding: "utf8" })
  return text.split("\n").filter((line) => line.includes("scripts/start.mjs") && line.includes("signals-")).map((l) => Number(l.trim().split(/\s+/)[0]))
}

describe("SIGTERM to npm start", () => {
  let upstream: FakeUpstream
  let dir: string
  beforeAll(async () => {
    upstream = await startFakeUpstream()
    dir = mkdtempSync(join(tmpdir(), "modelgate-signals-"))
  })
  afterAll(async () => {
    await upstream.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it("drains: the stream runs to DRAIN_SECONDS, ends server_shutting_down, the process exits 0 and says what it cut", async () => {
    const gw = await npmStart(dir, upstream.url, { DRAIN_SECONDS: "1" })
    try {
      upstream.setFault({ _tag: "SlowEvents", delayMs: 150 })
      const res = await fetch(`${gw.base}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-5", input: "a long answer please, with many many words so that it runs for a while", stream: true })
      })
      expect(res.status).toBe(200)
      const reader = res.body!.getReader()
      const decoder = new TextDecoder()
      let text = ""
      let signalled = false
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        text += decoder.decode(value, { stream: true })
        if (!signalled && text.includes("response.output_text.delta")) {
          signalled = true
          gw.child.kill("SIGTERM") // npm's own pid, not node's
          // The listener closes at once: a new connection is refused while the stream still runs.
          await new Promise((r) => setTimeout(r, 300))
          const fresh = await fetch(`${gw.base}/health`, { headers: { connection: "close" } }).then((r) => r.status, () => "refused")
          expect(fresh).toBe("refused")
        }
      }
      expect(signalled).toBe(true)
      expect(text).toContain("server_shutting_down")
      expect(await gw.exited).toBe(0)
      const lines = gw.output().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { message: string; annotations?: Record<string, unknown> })
      const stopped = lines.filter((l) => l.message === "modelgate stopped")
      expect(stopped).toHaveLength(1)
      expect(stopped[0]?.annotations?.["streams_cut"]).toBe(1)
      const access = lines.find((l) => l.message === "request" && l.annotations?.["path"] === "/v1/responses")
      expect(access?.annotations?.["code"]).toBe("server_shutting_down")
    } finally {
      if (gw.child.exitCode === null) gw.child.kill("SIGKILL")
      for (const pid of gatewayPids()) process.kill(pid, "SIGKILL")
    }
  }, 90_000)
})
