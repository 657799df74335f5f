/**
 * The load generator, in its own process so its CPU never competes inside the measured one.
 * Reads one JSON command per line on stdin, answers one JSON line per command on stdout:
 *
 * - `cannon`: closed-loop load with autocannon (fixed connections, for an amount of requests, or
 *   for a duration: that mode cuts the requests still in flight when time is up); latencies are
 *   collected per response in full precision (autocannon's histogram rounds to 1 ms).
 * - `paced`: open-loop load at a fixed rate with our own node:http client (autocannon's rate limit
 *   sends each connection's quota in a burst at the start of every second, which measures queueing,
 *   not latency at a rate). Records total latency, time to response headers and time to the first
 *   body byte (for streams: the first SSE event), per request.
 *
 * Exits when stdin closes.
 */
import autocannon from "autocannon"
import { Agent, request } from "node:http"
import { performance } from "node:perf_hooks"
import { createInterface } from "node:readline"

export interface CannonCommand {
  readonly op: "cannon"
  readonly url: string
  readonly connections: number
  readonly duration?: number
  readonly amount?: number
  readonly requests: ReadonlyArray<{ method: string; path: string; headers: Record<string, string>; body: string }>
}

export interface PacedCommand {
  readonly op: "paced"
  readonly url: string
  readonly rate: number
  readonly duration: number
  readonly warmup: number
  readonly path: string
  readonly headers: Record<string, string>
  readonly body: string
}

export interface Percentiles {
  readonly p50: number
  readonly p90: number
  readonly p99: number
  readonly max: number
  readonly mean: number
}

export interface CannonResult {
  readonly ok2xx: number
  readonly non2xx: number
  readonly errors: number
  readonly timeouts: number
  readonly elapsedSec: number
  readonly rps: number
  readonly latencyMs: Percentiles
}

export interface PacedResult {
  readonly sent: number
  readonly ok: number
  readonly failed: number
  readonly elapsedSec: number
  readonly latencyMs: Percentiles
  readonly headersMs: Percentiles
  readonly firstByteMs: Percentiles
  /** How late the client fired requests against their schedule (client overload shows here). */
  readonly lateMs: Percentiles
}

/** Nearest-rank percentiles of a sample (ms). */
export const percentiles = (values: ArrayLike<number>): Percentiles => {
  const sorted = Float64Array.from(values).sort()
  const n = sorted.length
  if (n === 0) return { p50: Number.NaN, p90: Number.NaN, p99: Number.NaN, max: Number.NaN, mean: Number.NaN }
  const at = (q: number): number => sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))]!
  let sum = 0
  for (let i = 0; i < n; i++) sum += sorted[i]!
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: sorted[n - 1]!, mean: sum / n }
}

const cannon = (cmd: CannonCommand): Promise<CannonResult> =>
  new Promise((resolve, reject) => {
    const latencies: Array<number> = []
    const started = performance.now()
    let lastResponseAt = started
    const instance = autocannon(
      {
        url: cmd.url,
        connections: cmd.connections,
        ...(cmd.amount !== undefined ? { amount: cmd.amount } : { duration: cmd.duration ?? 2 }),
        timeout: 30,
        // autocannon notices the end only on a sample tick (default every 1000 ms).
        sampleInt: 20,
        requests: cmd.requests
      },
      (error, result) => {
        if (error !== null) return reject(error)
        // From the start to the last response, not to autocannon's next sample tick.
        const elapsedSec = (lastResponseAt - started) / 1000
        const ok2xx = result["2xx"]
        resolve({
          ok2xx,
          non2xx: result.non2xx,
          errors: result.errors,
          timeouts: result.timeouts,
          elapsedSec,
          rps: ok2xx / elapsedSec,
          latencyMs: percentiles(latencies)
        })
      }
    )
    instance.on("response", (_client: unknown, status: number, _bytes: number, ms: number) => {
      lastResponseAt = performance.now()
      if (status >= 200 && status < 300) latencies.push(ms)
    })
  })

interface Sample {
  readonly ok: boolean
  readonly total: number
  readonly headers: number
  readonly firstByte: number
}

const paced = async (cmd: PacedCommand): Promise<PacedResult> => {
  const target = new URL(cmd.url)
  const agent = new Agent({ keepAlive: true, maxSockets: 512 })
  const body = Buffer.from(cmd.body)
  const headers = { ...cmd.headers, "content-length": String(body.length) }
  const one = (): Promise<Sample> =>
    new Promise((resolve) => {
      const t0 = performance.now()
      let headersAt = Number.NaN
      let firstAt = Number.NaN
      const req = request(
        { host: target.hostname, port: target.port, path: cmd.path, method: "POST", headers, agent },
        (res) => {
          headersAt = performance.now()
          res.on("data", () => {
            if (Number.isNaN(firstAt)) firstAt = performance.now()
          })
          res.on("end", () => {
            const end = performance.now()
            resolve({ ok: res.statusCode === 200, total: end - t0, headers: headersAt - t0, firstByte: (Number.isNaN(firstAt) ? end : firstAt) - t0 })
          })
          res.on("error", () => resolve({ ok: false, total: 0, headers: 0, firstByte: 0 }))
        }
      )
      req.on("error", () => resolve({ ok: false, total: 0, headers: 0, firstByte: 0 }))
      req.end(body)
    })

  // Warm the connection (and the target) so the schedule does not start with a TCP connect.
  for (let i = 0; i < cmd.warmup; i++) await one()

  const n = Math.max(1, Math.round(cmd.rate * cmd.duration))
  const interval = 1000 / cmd.rate
  const late: Array<number> = []
  const pending: Array<Promise<Sample>> = []
  const start = performance.now()
  for (let i = 0; i < n; i++) {
    const due = start + i * interval
    const wait = due - performance.now()
    if (wait >= 1) await new Promise((r) => setTimeout(r, wait))
    late.push(Math.max(0, performance.now() - due))
    pending.push(one())
  }
  const samples = await Promise.all(pending)
  const elapsedSec = (performance.now() - start) / 1000
  agent.destroy()
  const good = samples.filter((s) => s.ok)
  return {
    sent: n,
    ok: good.length,
    failed: n - good.length,
    elapsedSec,
    latencyMs: percentiles(good.map((s) => s.total)),
    headersMs: percentiles(good.map((s) => s.headers)),
    firstByteMs: percentiles(good.map((s) => s.firstByte)),
    lateMs: percentiles(late)
  }
}

const reply = (line: unknown): void => {
  process.stdout.write(`${JSON.stringify(line)}\n`)
}

const lines = createInterface({ input: process.stdin })
let queue: Promise<void> = Promise.resolve()
lines.on("line", (line) => {
  if (line.trim() === "") return
  // Commands run one at a time, in order.
  queue = queue.then(async () => {
    const { id, command } = JSON.parse(line) as { id: number; command: CannonCommand | PacedCommand }
    try {
      const result = command.op === "cannon" ? await cannon(command) : await paced(command)
      reply({ id, ok: true, result })
    } catch (error) {
      reply({ id, ok: false, error: error instanceof Error ? error.message : String(error) })
    }
  })
})
lines.on("close", () => process.exit(0))
reply({ ready: true })
