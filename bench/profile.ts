/**
 * Where the gateway's time (or memory churn) goes under one benchmark load.
 *
 *   npx tsx bench/profile.ts [scenario=passthrough-json] [requests=20000]          CPU, by self time
 *   npx tsx bench/profile.ts --alloc [scenario=passthrough-json] [requests=4000]   allocations
 *   npx tsx bench/profile.ts --survivors [scenario] [requests=4000]   what outlives a minor GC at 200 req/s
 *
 * CPU: starts the bench fake upstream and the gateway as `node --cpu-prof
 * --cpu-prof-dir=$BENCH_PROF_DIR --import tsx src/main.ts` (default dir /tmp/prof; default log
 * level, like the benchmark), sends the requests with autocannon (32 connections, a fixed amount so
 * no request is cut), stops the gateway with SIGINT so it writes its profile, and prints the
 * hottest functions (bench/profileSummary.ts). The profile covers the gateway's whole life,
 * start-up included.
 *
 * BENCH_PROFILE_RUNNER=bundle profiles the bundle `npm start` runs instead (`.build/main.mjs`, one
 * file with each module's path in a comment above it): closer to production, and the positions
 * point at readable code.
 *
 * --alloc: starts the gateway with `--inspect` on a free local port and, after a warm-up, runs the
 * V8 sampling heap profiler over the inspector protocol with garbage included (objects later
 * collected by minor and major GC), which `--heap-prof` leaves out: the bytes allocated per
 * request and by whom, i.e. what feeds the garbage collector.
 *
 * --survivors: the same at 200 req/s (open loop), counting only objects that outlived a minor GC:
 * what the scavenger copies and promotes. At that rate a request's objects should all die young.
 */
import { mkdirSync, readdirSync, statSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { WebSocket } from "undici"
import {
  fail,
  freePort,
  killAll,
  log,
  type Scenario,
  type ScenarioId,
  scenarios,
  startFakeUpstream,
  startGateway,
  startLoad,
  stopChild
} from "./harness.js"
import { formatAllocations, formatSummary, type HeapProfileNode, summarise, summariseAllocations } from "./profileSummary.js"
import type { CannonResult, PacedResult } from "./load.js"
import { cpuSeconds } from "./shared.js"

const args = process.argv.slice(2)
const survivors = args.includes("--survivors")
const alloc = survivors || args.includes("--alloc")
const positional = args.filter((a) => !a.startsWith("--"))
const scenarioId = (positional[0] ?? "passthrough-json") as ScenarioId
const requests = Number(positional[1] ?? (alloc ? "4000" : "20000"))
const top = Number(process.env["BENCH_PROF_TOP"] ?? "30")

/** A minimal Chrome DevTools Protocol client over the inspector WebSocket. */
const inspector = async (port: number) => {
  const list = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{ webSocketDebuggerUrl: string }>
  const url = list[0]?.webSocketDebuggerUrl
  if (url === undefined) throw new Error("no inspector target")
  const ws = new WebSocket(url)
  await new Promise<void>((ok, reject) => {
    ws.addEventListener("open", () => ok(), { once: true })
    ws.addEventListener("error", () => reject(new Error("inspector connection failed")), { once: true })
  })
  const pending = new Map<number, { ok: (v: unknown) => void; fail: (e: Error) => void }>()
  let nextId = 0
  ws.addEventListener("message", (event) => {
    const msg = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: { message: string } }
    if (msg.id === undefined) return
    const p = pending.get(msg.id)
    pending.delete(msg.id)
    if (msg.error !== undefined) p?.fail(new Error(msg.error.message))
    else p?.ok(msg.result)
  })
  const call = <T>(method: string, params: object = {}): Promise<T> =>
    new Promise((ok, reject) => {
      const id = ++nextId
      pending.set(id, { ok: ok as (v: unknown) => void, fail: reject })
      ws.send(JSON.stringify({ id, method, params }))
    })
  return { call, close: () => ws.close() }
}

const answered = (r: CannonResult | PacedResult) =>
  "ok2xx" in r
    ? { ok2xx: r.ok2xx, failed: r.non2xx + r.errors, rps: r.rps }
    : { ok2xx: r.ok, failed: r.failed, rps: r.ok / r.elapsedSec }

const main = async (scenario: Scenario): Promise<void> => {
  const dir = process.env["BENCH_PROF_DIR"] ?? "/tmp/prof"
  const inspectPort = alloc ? await freePort() : 0
  const nodeArgs = alloc ? [`--inspect=127.0.0.1:${inspectPort}`] : ["--cpu-prof", `--cpu-prof-dir=${dir}`]
  if (!alloc) mkdirSync(dir, { recursive: true })
  const startedAt = Date.now()

  const fake = await startFakeUpstream()
  const load = await startLoad()
  // tsx, not the bundle: one file per module, so the summary can tell effect from our code.
  const gw = await startGateway(fake.info.url, nodeArgs, (process.env["BENCH_PROFILE_RUNNER"] ?? "tsx") as "tsx" | "bundle")
  log(`gateway (pid ${gw.pid}) up in ${gw.startMs.toFixed(0)} ms, ${alloc ? `inspector on ${inspectPort}` : `profiling into ${dir}`}`)

  await load.run({ op: "cannon", url: gw.url, connections: 32, amount: 2000, requests: [scenario.gatewayRequest] })
  const session = alloc ? await inspector(inspectPort) : undefined
  if (session !== undefined) {
    await session.call("HeapProfiler.enable")
    await session.call("HeapProfiler.startSampling", {
      samplingInterval: 16_384,
      includeObjectsCollectedByMajorGC: true,
      // --survivors: only what outlived a minor GC (promoted, or still young), i.e. GC work.
      includeObjectsCollectedByMinorGC: !survivors
    })
  }
  const cpu0 = cpuSeconds(gw.pid)
  const t0 = performance.now()
  // --survivors measures at 200 req/s, where a request's objects should all die young.
  const r = survivors
    ? answered(await load.run({ op: "paced", url: gw.url, rate: 200, duration: requests / 200, warmup: 20, ...scenario.gatewayRequest }))
    : answered(await load.run({ op: "cannon", url: gw.url, connections: 32, amount: requests, requests: [scenario.gatewayRequest] }))
  const cpu1 = cpuSeconds(gw.pid)
  log(
    `${scenario.label}: ${r.ok2xx} ok, ${r.failed} failed, ${r.rps.toFixed(0)} req/s, ` +
      `${(((cpu1 - cpu0) / Math.max(1, r.ok2xx)) * 1e6).toFixed(0)} µs CPU/req (profiler on) in ${((performance.now() - t0) / 1000).toFixed(1)} s`
  )

  if (session !== undefined) {
    const { profile } = await session.call<{ profile: { head: HeapProfileNode } }>("HeapProfiler.stopSampling")
    session.close()
    await stopChild(gw.child)
    await stopChild(load.child)
    await stopChild(fake.child)
    process.stdout.write(`${formatAllocations(summariseAllocations(profile.head, r.ok2xx, top), survivors ? "outlived a minor GC" : undefined)}\n`)
    return
  }

  // SIGINT: the gateway shuts down through its runtime and Node writes the profile on exit.
  await stopChild(gw.child, 20_000, "SIGINT")
  await stopChild(load.child)
  await stopChild(fake.child)
  // One profile per thread: CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile; thread 0 is the main
  // thread (the others are tsx's module-loader worker).
  const file = readdirSync(dir)
    .filter((f) => f.endsWith(".cpuprofile") && f.includes(`.${gw.pid}.0.`))
    .map((f) => join(dir, f))
    .find((f) => statSync(f).mtimeMs >= startedAt)
  if (file === undefined) throw new Error(`no .cpuprofile written to ${dir} (did the gateway exit cleanly on SIGINT?)`)
  log(`profile: ${file}`)
  const profile = JSON.parse(await readFile(file, "utf8")) as Parameters<typeof summarise>[0]
  process.stdout.write(`${formatSummary(summarise(profile, top))}\n`)
}

const scenario = scenarios.find((s) => s.id === scenarioId)
if (scenario === undefined) fail(new Error(`unknown scenario '${scenarioId}' (one of ${scenarios.map((s) => s.id).join(", ")})`))
else {
  main(scenario).then(() => {
    killAll()
    process.exit(0)
  }, fail)
}
