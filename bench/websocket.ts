/**
 * WebSocket turns beside HTTP SSE requests: the same streaming create, through the same gateway,
 * sent as `response.create` messages over long-lived WebSocket connections (the Responses
 * WebSocket transport) and as `POST /v1/responses` SSE requests on keep-alive connections. Both
 * loops run here with the same concurrency, one turn after another on each connection; the figure
 * is the gateway process's CPU per turn (from /proc), plus turns/s and the median turn time.
 *
 *   npm run bench:ws                 both platforms, 3 runs of 3,000 turns, 16 connections
 *   npm run bench:ws -- 2000 5       2,000 turns, 5 runs
 *
 * `npm run bench` runs it too (one run) and prints its table.
 */
import { Agent, request } from "undici"
import WebSocket from "ws"
import { cpuSeconds } from "./shared.js"
import { GATEWAY_KEYS, killAll, log, startFakeUpstream, startGateway } from "./harness.js"
import { ANTHROPIC_MODEL, OPENAI_MODEL, PROMPT } from "./shared.js"

export type Transport = "http" | "websocket"

export interface TurnFigures {
  readonly platform: "passthrough" | "translated"
  readonly transport: Transport
  readonly turns: number
  readonly cpuMicrosPerTurn: number
  readonly turnsPerSecond: number
  readonly p50Millis: number
}

const TERMINAL = /"type"\s*:\s*"(response\.completed|response\.failed|response\.incomplete|error)"/

const httpSession = (url: string, key: string, model: string, agent: Agent) => async (): Promise<void> => {
  const res = await request(`${url}/v1/responses`, {
    method: "POST",
    dispatcher: agent,
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, input: PROMPT, stream: true })
  })
  const text = await res.body.text()
  if (res.statusCode !== 200 || !text.includes("response.completed")) throw new Error(`HTTP turn failed: ${res.statusCode}`)
}

/** One connection; each call sends a create and resolves at its terminal frame. */
const websocketSession = async (url: string, key: string, model: string) => {
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}/v1/responses`, { headers: { authorization: `Bearer ${key}` } })
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve())
    ws.once("error", reject)
  })
  let done: ((ok: boolean) => void) | undefined
  ws.on("message", (data) => {
    const m = TERMINAL.exec(String(data).slice(0, 80))
    if (m !== null) done?.(m[1] === "response.completed")
  })
  const body = JSON.stringify({ type: "response.create", model, input: PROMPT })
  return {
    turn: () =>
      new Promise<void>((resolve, reject) => {
        done = (ok) => (ok ? resolve() : reject(new Error("WebSocket turn failed")))
        ws.send(body)
      }),
    close: () => ws.close()
  }
}

const median = (xs: ReadonlyArray<number>): number => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

/** `turns` turns over `connections` connections, one after another on each. */
export const measureTurns = async (
  gateway: { readonly url: string; readonly pid: number },
  platform: "passthrough" | "translated",
  transport: Transport,
  turns: number,
  connections = 16
): Promise<TurnFigures> => {
  const key = platform === "passthrough" ? GATEWAY_KEYS.openai : GATEWAY_KEYS.anthropic
  const model = platform === "passthrough" ? OPENAI_MODEL : ANTHROPIC_MODEL
  const agent = new Agent({ connections: connections * 2, keepAliveTimeout: 30_000 })
  const sessions = transport === "http"
    ? Array.from({ length: connections }, () => ({ turn: httpSession(gateway.url, key, model, agent), close: () => undefined }))
    : await Promise.all(Array.from({ length: connections }, () => websocketSession(gateway.url, key, model)))
  // A short warm-up on every connection, outside the measurement.
  await Promise.all(sessions.map(async (s) => {
    for (let i = 0; i < 20; i++) await s.turn()
  }))
  const times: Array<number> = []
  let left = turns
  const cpu0 = cpuSeconds(gateway.pid)
  const t0 = performance.now()
  await Promise.all(sessions.map(async (s) => {
    while (left-- > 0) {
      const started = performance.now()
      await s.turn()
      times.push(performance.now() - started)
    }
  }))
  const seconds = (performance.now() - t0) / 1000
  const cpu = cpuSeconds(gateway.pid) - cpu0
  for (const s of sessions) s.close()
  await agent.close()
  return {
    platform,
    transport,
    turns,
    cpuMicrosPerTurn: Math.round((cpu * 1e6) / turns),
    turnsPerSecond: Math.round(turns / seconds),
    p50Millis: Number(median(times).toFixed(2))
  }
}

/** The table: per platform, HTTP SSE and WebSocket side by side, and their ratio. */
export const turnTable = (figures: ReadonlyArray<TurnFigures>): string => {
  const lines = [
    "WebSocket turns vs HTTP SSE requests (same streaming create, same gateway, 16 connections, one turn after another on each)",
    "platform      transport   turns/s  CPU µs/turn  vs HTTP  turn p50 ms",
    "------------  ---------  --------  -----------  -------  -----------"
  ]
  for (const platform of ["passthrough", "translated"] as const) {
    const http = figures.find((f) => f.platform === platform && f.transport === "http")
    for (const f of figures.filter((x) => x.platform === platform)) {
      const ratio = http === undefined || f.transport === "http" ? "" : `${(f.cpuMicrosPerTurn / http.cpuMicrosPerTurn).toFixed(2)}x`
      lines.push(
        `${platform.padEnd(12)}  ${f.transport.padEnd(9)}  ${String(f.turnsPerSecond).padStart(8)}  ${String(f.cpuMicrosPerTurn).padStart(11)}  ${ratio.padStart(7)}  ${String(f.p50Millis).padStart(11)}`
      )
    }
  }
  return lines.join("\n")
}

const runMain = async () => {
  const [turnsArg = "3000", runsArg = "3"] = process.argv.slice(2)
  const turns = Number(turnsArg)
  const runs = Number(runsArg)
  try {
    const fake = await startFakeUpstream()
    const gw = await startGateway(fake.info.url)
    const all: Array<Array<TurnFigures>> = []
    for (let run = 0; run < runs; run++) {
      log(`run ${run + 1}/${runs}`)
      const figures: Array<TurnFigures> = []
      // Alternate the order so neither transport always runs on a warmer process.
      for (const platform of ["passthrough", "translated"] as const) {
        const order: ReadonlyArray<Transport> = run % 2 === 0 ? ["http", "websocket"] : ["websocket", "http"]
        for (const transport of order) figures.push(await measureTurns(gw, platform, transport, turns))
      }
      all.push(figures)
    }
    const medians = all[0]!.map((f) => {
      const same = all.map((r) => r.find((x) => x.platform === f.platform && x.transport === f.transport)!)
      return {
        ...f,
        cpuMicrosPerTurn: median(same.map((x) => x.cpuMicrosPerTurn)),
        turnsPerSecond: median(same.map((x) => x.turnsPerSecond)),
        p50Millis: median(same.map((x) => x.p50Millis))
      }
    })
    process.stdout.write(`${turnTable(medians)}\n(medians of ${runs} runs of ${turns} turns)\n`)
  } finally {
    killAll()
  }
}

if (process.argv[1]?.endsWith("websocket.ts")) await runMain()
