/**
 * The long-lived streams scenario: what a gateway mostly does in production, holding many slow
 * streams open, where the other scenarios measure a request's cost at full speed.
 *
 * BENCH_STREAMS (default 200) passthrough SSE requests are kept open at once against one target at
 * a time; the fake upstream paces its events BENCH_PACE_MS apart (40 ms; the same Responses events
 * the passthrough SSE scenario streams, so a stream lasts about a second), and each stream that
 * ends is replaced by a new one at once. Starts are spread over one stream's length so the streams
 * do not all end, and restart, together. After a ramp of one stream's length, a window of
 * BENCH_LONG_SECONDS (8) is measured:
 *
 *   CPU per forwarded event   the target process's CPU seconds over the window (/proc/<pid>/stat)
 *                             divided by the SSE events the clients received in it
 *   memory per open stream    (median RSS during the window - idle RSS just before the streams
 *                             opened) / median number of streams open
 *   first byte p50 / p99      request start to the first body byte, for streams started in the window
 *
 * Memory per stream is read from RSS, so it includes how V8 sizes its heap for the load (the young
 * generation alone may grow by tens of MB under `npm start`'s --max-semi-space-size=32, or shrink
 * when the load is lighter than what came before): with 200 streams, +-20 MB of heap sizing is
 * +-100 KB per stream. Compare targets started alike (bench:streams starts them all fresh), and
 * read a small or negative figure as "no measurable cost per stream".
 *
 * The client is ours (node:http, a keep-alive agent with a socket per stream), not autocannon,
 * which has no notion of a stream's first byte or events. It runs in the bench's own process: it
 * does little per event, and nothing else runs while this scenario does.
 */
import { Agent, request } from "node:http"
import { performance } from "node:perf_hooks"
import { setTimeout as sleep } from "node:timers/promises"
import { log, type Req, type Scenario, scenarios } from "./harness.js"
import { f, fInt, median, quantile, table } from "./report.js"
import { cpuSeconds, envNumber, rssBytes } from "./shared.js"

export interface LongStreamsSettings {
  readonly streams: number
  readonly seconds: number
  readonly paceMs: number
}

export const longStreamsSettings = (): LongStreamsSettings => ({
  streams: Math.round(envNumber("BENCH_STREAMS", 200)),
  seconds: envNumber("BENCH_LONG_SECONDS", 8),
  paceMs: envNumber("BENCH_PACE_MS", 40)
})

/** One process to measure: where to send the passthrough SSE request, and which pid to read. */
export interface StreamTarget {
  /** Key in results.json: "bare", "gateway", "before". */
  readonly name: string
  /** Row label in the table. */
  readonly label: string
  readonly url: string
  readonly pid: number
  readonly request: Req
}

export interface LongStreamsResult {
  readonly streams: number
  readonly windowSeconds: number
  /** Median of the open-stream count sampled with the RSS. */
  readonly openStreams: number
  readonly events: number
  readonly eventsPerSecond: number
  readonly cpuSeconds: number
  readonly cpuUsPerEvent: number
  readonly idleRssBytes: number
  readonly openRssBytes: number
  readonly rssPerStreamBytes: number
  readonly firstByteP50Ms: number
  readonly firstByteP99Ms: number
  /** Streams that ended with response.completed during the window. */
  readonly completed: number
  /** Non-200 answers, connection errors and streams that ended without response.completed, whole run. */
  readonly failed: number
}

/** The request the passthrough SSE scenario sends: what every long-lived stream sends too. */
const passthroughSse = (): Scenario => {
  const s = scenarios.find((x) => x.id === "passthrough-sse")
  if (s === undefined) throw new Error("bench: no passthrough-sse scenario")
  return s
}

/**
 * The targets in the order they are measured: the bare proxy (the floor, sent what a client
 * would send the provider), then the gateway and the "before" gateway (sent the gateway request).
 */
export const streamTargets = (
  bare: { readonly url: string; readonly pid: number },
  gateways: ReadonlyArray<{ readonly name: string; readonly label: string; readonly url: string; readonly pid: number }>
): Array<StreamTarget> => [
  { name: "bare", label: "bare proxy", ...bare, request: passthroughSse().upstreamRequest },
  ...gateways.map((g) => ({ ...g, request: passthroughSse().gatewayRequest }))
]

/** Switches the fake upstream's SSE pacing (bench/fakeUpstream.ts); 0 = off. */
export const setUpstreamPace = (fakeUrl: string, ms: number): Promise<void> =>
  new Promise((resolve, reject) => {
    const body = JSON.stringify({ ms })
    const req = request(`${fakeUrl}/bench/pace`, { method: "POST", headers: { "content-length": String(body.length) } }, (res) => {
      res.resume()
      res.once("end", () => (res.statusCode === 204 ? resolve() : reject(new Error(`fake upstream: pace answered ${res.statusCode}`))))
    })
    req.once("error", reject)
    req.end(body)
  })

/**
 * Counts one stream's SSE events (their `data:` lines) as its bytes arrive, in chunks cut anywhere
 * (a proxy may merge or split events), and notices the terminal response.completed.
 */
const sseCounter = () => {
  let carry = ""
  let completed = false
  return {
    feed(chunk: Buffer): number {
      const lines = (carry + chunk.toString("latin1")).split("\n")
      carry = lines.pop() ?? ""
      let events = 0
      for (const line of lines) {
        if (!line.startsWith("data:")) continue
        events++
        if (line.includes("\"response.completed\"")) completed = true
      }
      return events
    },
    completed: () => completed
  }
}

/** What the streams of one measurement share: the counters the window reads. */
interface Tally {
  measuring: boolean
  open: number
  events: number
  completed: number
  failed: number
  readonly firstBytes: Array<number>
}

/** One stream, start to end; resolves false when it failed in any way. */
const oneStream = (target: URL, req: Req, body: Buffer, agent: Agent, tally: Tally): Promise<boolean> =>
  new Promise((resolve) => {
    const t0 = performance.now()
    const startedInWindow = tally.measuring
    let settled = false
    const done = (ok: boolean): void => {
      if (settled) return
      settled = true
      tally.open--
      if (!ok) tally.failed++
      else if (tally.measuring) tally.completed++
      resolve(ok)
    }
    tally.open++
    const headers = { ...req.headers, "content-length": String(body.length) }
    const client = request(
      { host: target.hostname, port: target.port, path: req.path, method: req.method, headers, agent },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume()
          res.once("end", () => done(false))
          return
        }
        const counter = sseCounter()
        let first = true
        res.on("data", (chunk: Buffer) => {
          if (first) {
            first = false
            if (startedInWindow) tally.firstBytes.push(performance.now() - t0)
          }
          const n = counter.feed(chunk)
          if (tally.measuring) tally.events += n
        })
        res.once("end", () => done(counter.completed()))
        res.once("error", () => done(false))
      }
    )
    client.once("error", () => done(false))
    client.end(body)
  })

/** Median RSS of a few readings 100 ms apart (a single reading may catch a GC). */
export const idleRss = async (pid: number): Promise<number> => {
  const readings: Array<number> = []
  for (let i = 0; i < 5; i++) {
    readings.push(rssBytes(pid))
    await sleep(100)
  }
  return median(readings)
}

/**
 * Holds `settings.streams` streams open against one target and measures the window. `streamMs` is
 * how long one stream lasts (events x pace): starts are spread over it and the ramp waits it out.
 */
export const measureLongStreams = async (
  target: StreamTarget,
  settings: LongStreamsSettings,
  streamMs: number
): Promise<LongStreamsResult> => {
  const url = new URL(target.url)
  const body = Buffer.from(target.request.body)
  const agent = new Agent({ keepAlive: true, maxSockets: settings.streams + 16, maxFreeSockets: settings.streams + 16 })
  const tally: Tally = { measuring: false, open: 0, events: 0, completed: 0, failed: 0, firstBytes: [] }

  await sleep(500) // let the previous target's load die down before the idle reading
  const rssIdle = await idleRss(target.pid)

  let running = true
  const lane = async (startDelayMs: number): Promise<void> => {
    await sleep(startDelayMs)
    while (running) {
      // A failing target must not turn the loop into a busy spin.
      if (!(await oneStream(url, target.request, body, agent, tally))) await sleep(50)
    }
  }
  const lanes = Array.from({ length: settings.streams }, (_, i) => lane((i * streamMs) / settings.streams))
  // Every lane has started by streamMs; another stream's length lets the target settle at the
  // steady count (pools, heap and JIT grown to it) before the window opens.
  await sleep(2 * streamMs + 250)

  const samples: Array<{ rss: number; open: number }> = []
  const sampler = setInterval(() => samples.push({ rss: rssBytes(target.pid), open: tally.open }), 100)
  const cpu0 = cpuSeconds(target.pid)
  const t0 = performance.now()
  tally.measuring = true
  await sleep(settings.seconds * 1000)
  tally.measuring = false
  const cpu1 = cpuSeconds(target.pid)
  const windowSeconds = (performance.now() - t0) / 1000
  clearInterval(sampler)

  // Let the streams in flight finish (about one stream's length) rather than cut them: client
  // hang-ups are another test's business.
  running = false
  await Promise.race([Promise.all(lanes), sleep(streamMs + 10_000)])
  agent.destroy()

  const openStreams = median(samples.map((s) => s.open))
  const openRss = median(samples.map((s) => s.rss))
  const cpu = cpu1 - cpu0
  return {
    streams: settings.streams,
    windowSeconds,
    openStreams,
    events: tally.events,
    eventsPerSecond: tally.events / windowSeconds,
    cpuSeconds: cpu,
    cpuUsPerEvent: (cpu / Math.max(1, tally.events)) * 1e6,
    idleRssBytes: rssIdle,
    openRssBytes: openRss,
    rssPerStreamBytes: (openRss - rssIdle) / Math.max(1, openStreams),
    firstByteP50Ms: quantile(tally.firstBytes, 0.5),
    firstByteP99Ms: quantile(tally.firstBytes, 0.99),
    completed: tally.completed,
    failed: tally.failed
  }
}

/** Measures each target in turn with the fake's pacing on, and switches it off again. */
export const runLongStreams = async (
  fakeUrl: string,
  eventsPerStream: number,
  targets: ReadonlyArray<StreamTarget>,
  settings: LongStreamsSettings
): Promise<Map<string, LongStreamsResult>> => {
  const streamMs = Math.max(1, eventsPerStream - 1) * settings.paceMs
  const results = new Map<string, LongStreamsResult>()
  await setUpstreamPace(fakeUrl, settings.paceMs)
  try {
    for (const target of targets) {
      log(`long-lived streams: ${settings.streams} x ~${fInt(streamMs)} ms streams through ${target.label}, ${settings.seconds}s measured`)
      results.set(target.name, await measureLongStreams(target, settings, streamMs))
    }
  } finally {
    await setUpstreamPace(fakeUrl, 0)
  }
  return results
}

/** Each target's figures beside the bare proxy's (ratios), as a table. */
export const longStreamsTable = (targets: ReadonlyArray<StreamTarget>, results: ReadonlyMap<string, LongStreamsResult>): string => {
  const bare = results.get("bare")
  const ratio = (x: number, base: number | undefined) => (base === undefined ? "" : `${f(x / base)}x`)
  const rows = targets.flatMap((t) => {
    const r = results.get(t.name)
    if (r === undefined) return []
    return [[
      t.label,
      fInt(r.openStreams),
      fInt(r.eventsPerSecond),
      f(r.cpuUsPerEvent, 1),
      t.name === "bare" ? "" : ratio(r.cpuUsPerEvent, bare?.cpuUsPerEvent),
      f(r.idleRssBytes / 1048576, 0),
      f(r.openRssBytes / 1048576, 0),
      f(r.rssPerStreamBytes / 1024, 1),
      t.name === "bare" ? "" : ratio(r.rssPerStreamBytes, bare?.rssPerStreamBytes),
      f(r.firstByteP50Ms),
      t.name === "bare" ? "" : ratio(r.firstByteP50Ms, bare?.firstByteP50Ms),
      f(r.firstByteP99Ms),
      r.failed === 0 ? "" : String(r.failed)
    ]]
  })
  return table(
    ["target", "open", "events/s", "CPU µs/event", "vs bare", "idle MB", "open MB", "KB/stream", "vs bare", "1st byte p50", "vs bare", "1st byte p99", "errors"],
    rows
  )
}

/** The results.json entry: settings, each target's figures, and the ratios to the bare proxy. */
export const longStreamsJson = (settings: LongStreamsSettings, eventsPerStream: number, results: ReadonlyMap<string, LongStreamsResult>) => {
  const bare = results.get("bare")
  const vsBare = (r: LongStreamsResult) =>
    bare === undefined
      ? undefined
      : {
        cpuPerEvent: r.cpuUsPerEvent / bare.cpuUsPerEvent,
        memoryPerStream: r.rssPerStreamBytes / bare.rssPerStreamBytes,
        firstByteP50: r.firstByteP50Ms / bare.firstByteP50Ms
      }
  return {
    settings: { ...settings, eventsPerStream },
    targets: Object.fromEntries([...results].map(([name, r]) => [name, { ...r, ...(name === "bare" ? {} : { vsBare: vsBare(r) }) }]))
  }
}

/**
 * Long-lived streams, the gateway against the before gateway (issue 24): CPU per forwarded event at
 * most 0.6x before, memory per open stream no higher than before. Empty without both.
 */
export const LONG_STREAMS_VS_BEFORE_BUDGETS = { cpuPerEvent: 0.6, memoryPerStream: 1 } as const

export interface LongStreamsVsBefore {
  readonly cpuPerEvent: { readonly before: number; readonly after: number; readonly ratio: number; readonly budget: number; readonly pass: boolean }
  readonly memoryPerStream: { readonly before: number; readonly after: number; readonly ratio: number; readonly budget: number; readonly pass: boolean }
}

export const longStreamsVsBefore = (results: ReadonlyMap<string, LongStreamsResult>): LongStreamsVsBefore | undefined => {
  const before = results.get("before")
  const after = results.get("gateway")
  if (before === undefined || after === undefined) return undefined
  const judged = (b: number, a: number, budget: number) => {
    const ratio = a / b
    // Memory per stream can be ~0 or negative (heap sizing noise): no higher is what counts.
    return { before: b, after: a, ratio, budget, pass: budget === 1 ? a <= b : ratio <= budget }
  }
  return {
    cpuPerEvent: judged(before.cpuUsPerEvent, after.cpuUsPerEvent, LONG_STREAMS_VS_BEFORE_BUDGETS.cpuPerEvent),
    memoryPerStream: judged(before.rssPerStreamBytes, after.rssPerStreamBytes, LONG_STREAMS_VS_BEFORE_BUDGETS.memoryPerStream)
  }
}

export const longStreamsVsBeforeTable = (v: LongStreamsVsBefore): string =>
  table(
    ["long-lived streams, after vs before", "before", "after", "after/before", "budget", ""],
    [
      [
        "CPU µs per event",
        f(v.cpuPerEvent.before, 1),
        f(v.cpuPerEvent.after, 1),
        `${f(v.cpuPerEvent.ratio)}x`,
        `<= ${f(v.cpuPerEvent.budget)}x`,
        v.cpuPerEvent.pass ? "PASS" : "FAIL"
      ],
      [
        "KB per open stream",
        f(v.memoryPerStream.before / 1024, 1),
        f(v.memoryPerStream.after / 1024, 1),
        `${f(v.memoryPerStream.ratio)}x`,
        "no higher",
        v.memoryPerStream.pass ? "PASS" : "FAIL"
      ]
    ]
  )
