/**
 * The gateway and the CLI as a user runs them: separate processes on the Node 24 in node_modules
 * (not the system node), from their bundles (scripts/start.mjs, bin/modelgate.js), in a directory
 * of the test's own so their ./data is the test's.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import { join } from "node:path"

export const ROOT = join(import.meta.dirname, "..", "..")
export const NODE = join(ROOT, "node_modules", ".bin", "node")
export const START = join(ROOT, "scripts", "start.mjs")
export const CLI = join(ROOT, "bin", "modelgate.js")

/** The environment without the settings a developer's shell may carry into a test. */
export const cleanEnv = (extra: Record<string, string> = {}): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined) continue
    if (/^(DATABASE_URL|MODELGATE_CONFIG|REDIS_URL|PORT|HOST|ADMIN_.*|LOG_.*|OTEL_.*|NO_COLOR|FORCE_COLOR)$/.test(k)) continue
    env[k] = v
  }
  return { ...env, ...extra }
}

export interface Ran {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs `args` (after the node binary) to its end; stdout and stderr are pipes, as in `cmd | less`;
 * `input`, when given, is piped in as stdin (`printf … | cmd`), else stdin is /dev/null.
 */
export const run = (args: ReadonlyArray<string>, options: { cwd: string; env: Record<string, string>; timeoutMs?: number; input?: string }) =>
  new Promise<Ran>((resolve, reject) => {
    const child = options.input === undefined
      ? spawn(NODE, args, { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"] })
      : spawn(NODE, args, { cwd: options.cwd, env: options.env, stdio: ["pipe", "pipe", "pipe"] })
    if (options.input !== undefined) child.stdin?.end(options.input)
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`timed out: ${args.join(" ")}\n${stdout}\n${stderr}`))
    }, options.timeoutMs ?? 60_000)
    child.once("error", reject)
    child.once("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })

/** `npx modelgate <args>` in `cwd`. */
export const cli = (cwd: string, env: Record<string, string>, ...args: Array<string>) => run([CLI, ...args], { cwd, env })

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))))
    })
  })

export interface Gateway {
  readonly child: ChildProcess
  readonly base: string
  /** Everything it printed so far, stdout and stderr. */
  readonly output: () => string
  readonly stop: () => Promise<void>
}

/** `npm start [args]` in `cwd`, once /health answers. */
export const startGateway = async (cwd: string, env: Record<string, string>, args: ReadonlyArray<string> = []): Promise<Gateway> => {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const child = spawn(NODE, ["--max-semi-space-size=32", START, ...args], {
    cwd,
    env: { ...env, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  child.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString()))
  child.stderr?.on("data", (chunk: Buffer) => (out += chunk.toString()))
  const deadline = Date.now() + 60_000 // a cold start bundles src/ first
  for (;;) {
    const up = await fetch(`${base}/health`).then((r) => r.ok, () => false)
    if (up) break
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill("SIGKILL")
      throw new Error(`npm start did not answer /health:\n${out}`)
    }
    await new Promise((r) => setTimeout(r, 200))
  }
  return {
    child,
    base,
    output: () => out,
    stop: async () => {
      if (child.exitCode !== null) return
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
      child.kill("SIGTERM")
      await exited
    }
  }
}
