/**
 * Process plumbing shared by `bench/run.ts` and `bench/profile.ts`: starting the fake upstream, the
 * bare proxy, the gateway and the load generator as child processes, each in its own process
 * group, and killing every one of them on exit, on Ctrl-C (SIGINT), SIGTERM, SIGHUP and on errors.
 * Also the four benchmark scenarios and the generated gateway config.
 */
import { type ChildProcess, spawn, type SpawnOptions } from "node:child_process"
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { get } from "node:http"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { performance } from "node:perf_hooks"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import type { CannonCommand, CannonResult, PacedCommand, PacedResult } from "./load.js"
import { ANTHROPIC_MODEL, messagesBody, OPENAI_MODEL, responsesBody } from "./shared.js"

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..")
/** BENCH_KEEP=1 keeps the temp dir (generated config, gateway log). */
export const KEEP = process.env["BENCH_KEEP"] === "1"

const T0 = performance.now()
export const log = (msg: string): void => {
  process.stderr.write(`[bench ${((performance.now() - T0) / 1000).toFixed(1).padStart(5)}s] ${msg}\n`)
}

// ---------------------------------------------------------------------------------------------
// Child processes

const children = new Map<number, string>()
let tempDir: string | undefined
let gatewayLogPath: string | undefined
/** Synchronous clean-ups killAll runs after the children are gone and before the temp dir goes (git worktrees). */
const cleanups: Array<() => void> = []

/** Registers a synchronous clean-up for killAll (exit, signals, errors); it must not throw. */
export const onCleanup = (cleanup: () => void): void => {
  cleanups.push(cleanup)
}

/** A temp dir for this run, removed on exit unless BENCH_KEEP=1. */
export const makeTempDir = (): string => {
  tempDir ??= mkdtempSync(join(tmpdir(), "modelgate-bench-"))
  return tempDir
}

/** On failure: the end of the gateway's log, before the temp dir goes away. */
const printGatewayLogTail = (): void => {
  if (gatewayLogPath === undefined) return
  try {
    const tail = readFileSync(gatewayLogPath, "utf8").split("\n").slice(-40).join("\n")
    process.stderr.write(`--- last lines of the gateway log (${gatewayLogPath}) ---\n${tail}\n`)
  } catch {
    // no log yet
  }
}

const killGroup = (pid: number, signal: NodeJS.Signals): void => {
  try {
    process.kill(-pid, signal)
  } catch {
    // already gone
  }
}

/** SIGKILL every child's process group and remove the temp dir. Synchronous: safe in an exit handler. */
export const killAll = (): void => {
  for (const pid of children.keys()) killGroup(pid, "SIGKILL")
  children.clear()
  for (const cleanup of cleanups.splice(0)) cleanup()
  if (tempDir !== undefined && !KEEP) {
    rmSync(tempDir, { recursive: true, force: true })
    tempDir = undefined
  }
}

/** Reports a fatal error (with the gateway's last log lines), kills everything, exits 1. */
export const fail = (error: unknown): never => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`)
  printGatewayLogTail()
  killAll()
  process.exit(1)
}

process.on("exit", killAll)
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    log(`${signal}: stopping children`)
    killAll()
    process.exit(130)
  })
}
process.on("uncaughtException", fail)
process.on("unhandledRejection", fail)

/** Spawns a child in its own process group (so the whole tree can be killed: npm -> sh -> tsx -> node). */
export const spawnChild = (name: string, command: string, args: ReadonlyArray<string>, options: SpawnOptions): ChildProcess => {
  const child = spawn(command, args, { cwd: ROOT, detached: true, ...options })
  if (child.pid === undefined) throw new Error(`could not start ${name}`)
  const pid = child.pid
  children.set(pid, name)
  child.once("exit", () => children.delete(pid))
  child.once("error", (e) => log(`${name}: ${e.message}`))
  return child
}

/**
 * Our own helpers exit when their stdin closes, but the gateway (and `npm start`) would outlive a
 * SIGKILLed bench. A tiny watchdog process kills the child's process group when this process is
 * gone (and removes the temp dir unless BENCH_KEEP=1), and exits by itself once the group is gone.
 */
const WATCHDOG = `
const [parent, group] = process.argv.slice(1, 3).map(Number)
const dir = process.argv[3]
const alive = (pid) => { try { process.kill(pid, 0); return true } catch { return false } }
setInterval(() => {
  if (!alive(-group)) process.exit(0)
  if (!alive(parent)) {
    try { process.kill(-group, "SIGKILL") } catch {}
    if (dir) setTimeout(() => { require("node:fs").rmSync(dir, { recursive: true, force: true }); process.exit(0) }, 500)
    else process.exit(0)
  }
}, 250)
`

export const guard = (child: ChildProcess): void => {
  const args = ["-e", WATCHDOG, String(process.pid), String(child.pid), ...(tempDir !== undefined && !KEEP ? [tempDir] : [])]
  const watchdog = spawn(process.execPath, args, { detached: true, stdio: "ignore" })
  watchdog.unref()
}

export const isRunning = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null

/** Sends `signal` to the child's group, waits for the exit, SIGKILLs the group after `graceMs`. */
export const stopChild = (child: ChildProcess, graceMs = 3000, signal: NodeJS.Signals = "SIGTERM"): Promise<void> =>
  new Promise((done) => {
    const pid = child.pid
    if (pid === undefined || !isRunning(child)) return done()
    const timer = setTimeout(() => killGroup(pid, "SIGKILL"), graceMs)
    child.once("exit", () => {
      clearTimeout(timer)
      killGroup(pid, "SIGKILL") // anything the group left behind
      children.delete(pid)
      done()
    })
    killGroup(pid, signal)
  })

/** The first stdout line of a child that parses as JSON (our children announce themselves that way). */
const firstJsonLine = <T>(child: ChildProcess, name: string, timeoutMs = 20_000): Promise<T> =>
  new Promise((ok, reject) => {
    const rl = createInterface({ input: child.stdout! })
    const timer = setTimeout(() => reject(new Error(`${name} did not start within ${timeoutMs} ms`)), timeoutMs)
    child.once("exit", (code) => reject(new Error(`${name} exited (${code}) before it was ready`)))
    rl.on("line", (line) => {
      try {
        const value = JSON.parse(line) as T
        clearTimeout(timer)
        rl.removeAllListeners("line")
        ok(value)
      } catch {
        // not our line
      }
    })
  })

/** Starts one of our bench/*.ts helpers; it exits by itself when our end of its stdin closes. */
const startHelper = async <T>(name: string, file: string, env: Record<string, string> = {}) => {
  const child = spawnChild(name, process.execPath, ["--import", "tsx", file], {
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, ...env }
  })
  const info = await firstJsonLine<T>(child, name)
  return { child, info }
}

export interface FakeInfo {
  readonly url: string
  readonly events: { readonly responses: number; readonly messages: number }
  readonly bytes: Record<string, number>
}

export const startFakeUpstream = () => startHelper<FakeInfo>("fake upstream", "bench/fakeUpstream.ts")

/** `maxSockets`: its upstream pool; raise it above the default 256 only for more concurrent requests than that. */
export const startBareProxy = (upstreamUrl: string, maxSockets = 256) =>
  startHelper<{ url: string }>("bare proxy", "bench/bareProxy.ts", { UPSTREAM: upstreamUrl, MAX_SOCKETS: String(maxSockets) })

export const freePort = (): Promise<number> =>
  new Promise((ok, reject) => {
    const srv = createServer()
    srv.once("error", reject)
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      srv.close(() => ok(port))
    })
  })

export const healthOnce = (port: number): Promise<boolean> =>
  new Promise((ok) => {
    const req = get({ host: "127.0.0.1", port, path: "/health", agent: false, timeout: 500 }, (res) => {
      res.resume()
      res.on("end", () => ok(res.statusCode === 200))
    })
    req.on("error", () => ok(false))
    req.on("timeout", () => {
      req.destroy()
      ok(false)
    })
  })

/** Polls /health every 5 ms; resolves with the ms since `since` once it answers 200. */
export const waitHealthy = async (port: number, child: ChildProcess, since: number, timeoutMs = 30_000): Promise<number> => {
  while (performance.now() - since < timeoutMs) {
    if (!isRunning(child)) throw new Error(`gateway exited (${child.exitCode ?? child.signalCode}) before answering /health`)
    if (await healthOnce(port)) return performance.now() - since
    await new Promise((r) => setTimeout(r, 5))
  }
  throw new Error(`gateway did not answer /health within ${timeoutMs} ms`)
}

// ---------------------------------------------------------------------------------------------
// The gateway

export const GATEWAY_KEYS = { openai: "sk-bench-openai-0000000000000000000000", anthropic: "sk-bench-anthropic-000000000000000000" }
export const UPSTREAM_KEY = "sk-bench-upstream-key"

/**
 * One openai group, one anthropic group, a key each, an http account each pointing at the fake.
 * The concurrency limits are far above anything the bench sends (the long-lived streams scenario
 * holds BENCH_STREAMS, default 200, open at once): no request ever waits for a slot, so
 * SLOT_QUEUE_LIMIT and ACCOUNT_QUEUE_LIMIT (how many may wait) never come into play.
 */
export const configYaml = (upstreamUrl: string): string => `# generated by bench/harness.ts
groups:
  - { name: bench-openai, platform: openai, models: ["${OPENAI_MODEL}"] }
  - { name: bench-anthropic, platform: anthropic, models: ["${ANTHROPIC_MODEL}"] }
users:
  - { name: bench, balance_usd: 1000000000, concurrency: 100000 }
keys:
  - { key: ${GATEWAY_KEYS.openai}, user: bench, group: bench-openai, name: bench-openai }
  - { key: ${GATEWAY_KEYS.anthropic}, user: bench, group: bench-anthropic, name: bench-anthropic }
accounts:
  - name: fake-openai
    platform: openai
    kind: http
    base_url: "${upstreamUrl}/v1"
    api_key_env: BENCH_UPSTREAM_KEY
    groups: [bench-openai]
    concurrency: 100000
  - name: fake-anthropic
    platform: anthropic
    kind: http
    base_url: "${upstreamUrl}"
    api_key_env: BENCH_UPSTREAM_KEY
    groups: [bench-anthropic]
    concurrency: 100000
`

export interface Gateway {
  readonly child: ChildProcess
  readonly pid: number
  readonly port: number
  readonly url: string
  /** Spawn to first 200 from /health. */
  readonly startMs: number
  readonly logPath: string
  readonly configPath: string
  /** The environment it runs with (for starting more copies). */
  readonly env: Record<string, string | undefined>
  /** The checkout it runs from: ROOT, or a git worktree of another commit (bench/worktree.ts). */
  readonly root: string
}

/** The log file of the gateway named `label` in the temp dir. */
export const gatewayLogFile = (label: string): string => join(makeTempDir(), label === "gateway" ? "gateway.log" : `${label}-gateway.log`)

/** Where a gateway runs from, and the name its log and database files get in the temp dir. */
export interface GatewayPlace {
  /** A checkout with scripts/start.mjs and node_modules (default: this one). */
  readonly root?: string
  /** Names the process, its log and its SQLite file (default "gateway"). */
  readonly label?: string
}

/**
 * How the gateway process runs: `bundle` is what `npm start` runs (`node <V8 flags>
 * scripts/start.mjs`, the esbuild bundle, rebuilt first if src/ changed), without the npm and sh
 * processes in front; `tsx` compiles src/ on the fly, which keeps one file per module in CPU
 * profiles. Both take their node flags from package.json's start script, so the bench measures
 * the heap settings users get.
 */
export type GatewayRunner = "bundle" | "tsx"

/** The `npm start` command line after `node` in the checkout at `root`: its flags, then scripts/start.mjs. */
const startArgs = (root: string): ReadonlyArray<string> => {
  const { scripts } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: { start: string } }
  const [node, ...args] = scripts.start.trim().replace(/^exec\s+/, "").split(/\s+/)
  if (node !== "node" || args.at(-1) !== "scripts/start.mjs") {
    throw new Error(`bench: expected package.json's start script to be "node [flags] scripts/start.mjs", found "${scripts.start}"`)
  }
  return args
}

const runnerArgs = (runner: GatewayRunner, root: string): ReadonlyArray<string> =>
  runner === "bundle" ? startArgs(root) : [...startArgs(root).slice(0, -1), "--import", "tsx", "src/main.ts"]

/**
 * Starts the gateway in its production configuration: `node [nodeArgs] scripts/start.mjs`, the
 * generated config, its default store (SQLite) in the temp dir, stdout/stderr (its JSON logs)
 * appended to a file, and the DEFAULT log level: LOG_LEVEL is removed from its environment so
 * nobody hides the logging cost by accident.
 *
 * `place` starts another copy (the "before" gateway from a worktree of an older commit): same
 * config, its own port, log and SQLite file. BENCH_DATABASE_URL applies to this checkout's
 * gateway only: two versions must not migrate one database.
 */
export const startGateway = async (
  upstreamUrl: string,
  nodeArgs: ReadonlyArray<string> = [],
  runner: GatewayRunner = "bundle",
  place: GatewayPlace = {}
): Promise<Gateway> => {
  const dir = makeTempDir()
  const root = place.root ?? ROOT
  const label = place.label ?? "gateway"
  const isMain = label === "gateway"
  const configPath = join(dir, "modelgate.yaml")
  const logPath = gatewayLogFile(label)
  if (isMain) gatewayLogPath = logPath
  writeFileSync(configPath, configYaml(upstreamUrl))
  const port = await freePort()
  const env: Record<string, string | undefined> = {
    ...process.env,
    PORT: String(port),
    HOST: "127.0.0.1",
    MODELGATE_CONFIG: configPath,
    BENCH_UPSTREAM_KEY: UPSTREAM_KEY,
    // The default store (a SQLite file), fresh for every run and outside ./data;
    // BENCH_DATABASE_URL points the gateway elsewhere (e.g. a PostgreSQL to measure).
    DATABASE_URL: isMain ? process.env["BENCH_DATABASE_URL"] ?? join(dir, "modelgate.db") : join(dir, `${label}.db`),
    // bench:ws holds 16 WebSocket connections on one key, twice the default cap per key.
    WEBSOCKET_MAX_CONNECTIONS_PER_KEY: "0",
    WEBSOCKET_MAX_CONNECTIONS_PER_USER: "0"
  }
  delete env["LOG_LEVEL"]
  const logFd = openSync(logPath, "a")
  const spawnedAt = performance.now()
  const child = spawnChild(label, process.execPath, [...nodeArgs, ...runnerArgs(runner, root)], {
    cwd: root,
    stdio: ["ignore", logFd, logFd],
    env
  })
  closeSync(logFd)
  guard(child)
  const startMs = await waitHealthy(port, child, spawnedAt)
  return { child, pid: child.pid!, port, url: `http://127.0.0.1:${port}`, startMs, logPath, configPath, env, root }
}

// ---------------------------------------------------------------------------------------------
// Load generator client

export interface LoadClient {
  readonly child: ChildProcess
  readonly run: {
    (command: CannonCommand): Promise<CannonResult>
    (command: PacedCommand): Promise<PacedResult>
  }
}

export const startLoad = async (): Promise<LoadClient> => {
  const { child } = await startHelper<{ ready: boolean }>("load", "bench/load.ts")
  const waiting = new Map<number, { ok: (v: unknown) => void; fail: (e: Error) => void }>()
  let nextId = 1
  createInterface({ input: child.stdout! }).on("line", (line) => {
    let msg: { id?: number; ok?: boolean; result?: unknown; error?: string }
    try {
      msg = JSON.parse(line) as typeof msg
    } catch {
      return
    }
    const w = msg.id === undefined ? undefined : waiting.get(msg.id)
    if (w === undefined || msg.id === undefined) return
    waiting.delete(msg.id)
    if (msg.ok === true) w.ok(msg.result)
    else w.fail(new Error(`load generator: ${msg.error ?? "failed"}`))
  })
  child.once("exit", (code) => {
    for (const w of waiting.values()) w.fail(new Error(`load generator exited (${code})`))
    waiting.clear()
  })
  const run = ((command: CannonCommand | PacedCommand) =>
    new Promise<unknown>((ok, reject) => {
      const id = nextId++
      waiting.set(id, { ok, fail: reject })
      child.stdin!.write(`${JSON.stringify({ id, command })}\n`)
    })) as LoadClient["run"]
  return { child, run }
}

// ---------------------------------------------------------------------------------------------
// Scenarios

/** `before`: the gateway built from an older commit (bench/worktree.ts), when the run has one. */
export type TargetName = "direct" | "bare" | "gateway" | "before"
export type ScenarioId = "passthrough-json" | "passthrough-sse" | "translated-json" | "translated-sse"

export interface Req {
  readonly method: "POST"
  readonly path: string
  readonly headers: Record<string, string>
  readonly body: string
}

export interface Scenario {
  readonly id: ScenarioId
  readonly label: string
  readonly stream: boolean
  /** What a client would send to the provider itself (also what the bare proxy forwards). */
  readonly upstreamRequest: Req
  /** What a client sends to the gateway. */
  readonly gatewayRequest: Req
}

const openaiUpstreamHeaders = { "content-type": "application/json", authorization: `Bearer ${UPSTREAM_KEY}` }
const anthropicUpstreamHeaders = { "content-type": "application/json", "x-api-key": UPSTREAM_KEY, "anthropic-version": "2023-06-01" }
const gatewayHeaders = (key: string) => ({ "content-type": "application/json", authorization: `Bearer ${key}` })

const scenario = (translated: boolean, stream: boolean): Scenario => {
  const kind = stream ? "sse" : "json"
  return translated
    ? {
      id: `translated-${kind}`,
      label: `translated ${kind.toUpperCase()}`,
      stream,
      upstreamRequest: { method: "POST", path: "/v1/messages", headers: anthropicUpstreamHeaders, body: messagesBody(stream) },
      gatewayRequest: { method: "POST", path: "/v1/responses", headers: gatewayHeaders(GATEWAY_KEYS.anthropic), body: responsesBody(ANTHROPIC_MODEL, stream) }
    }
    : {
      id: `passthrough-${kind}`,
      label: `passthrough ${kind.toUpperCase()}`,
      stream,
      upstreamRequest: { method: "POST", path: "/v1/responses", headers: openaiUpstreamHeaders, body: responsesBody(OPENAI_MODEL, stream) },
      gatewayRequest: { method: "POST", path: "/v1/responses", headers: gatewayHeaders(GATEWAY_KEYS.openai), body: responsesBody(OPENAI_MODEL, stream) }
    }
}

export const scenarios: ReadonlyArray<Scenario> = [
  scenario(false, false),
  scenario(false, true),
  scenario(true, false),
  scenario(true, true)
]
