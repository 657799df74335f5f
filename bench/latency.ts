/**
 * `npm run bench:latency`: only the latency part of `npm run bench`, in a minute or two: what a
 * request adds over the fake upstream when requests come one at a time ("sequential") and at 200
 * req/s open loop ("paced"), through the bare proxy, this checkout's gateway and (with --before)
 * another commit's, interleaved round by round; then each gateway's RSS after the warm-up and 35 s
 * of rest ("idle after warm-up").
 *
 *   npm run bench:latency                          bare proxy and gateway
 *   npm run bench:latency -- --before main         and main's gateway in the same rounds
 *   npm run bench:latency -- json                  only scenarios whose id contains "json"
 *   BENCH_ROUNDS=5 BENCH_PACED_SECONDS=3 npm run bench:latency
 *
 * Same processes and options as `npm run bench` (bench/harness.ts, bench/worktree.ts).
 */
import { setTimeout as sleep } from "node:timers/promises"
import { loadavg } from "node:os"
import { fail, killAll, log, makeTempDir, type Req, type Scenario, scenarios, startBareProxy, startFakeUpstream, startLoad } from "./harness.js"
import { idleRss } from "./longStreams.js"
import { f, mb, median, table } from "./report.js"
import { envNumber } from "./shared.js"
import { checkoutWorktree, startAfterGateway, startGatewayAt } from "./worktree.js"

const argv = process.argv.slice(2)
const flag = (name: string): string | undefined => {
  const i = argv.indexOf(name)
  return i < 0 ? undefined : argv[i + 1]
}
const BEFORE = flag("--before") ?? process.env["BENCH_BEFORE"]
const filter = argv.find((a, i) => !a.startsWith("--") && argv[i - 1] !== "--before") ?? ""
const ROUNDS = Math.round(envNumber("BENCH_ROUNDS", 3))
const PACED_SECONDS = envNumber("BENCH_PACED_SECONDS", 2)
const SEQUENTIAL = Math.round(envNumber("BENCH_SEQUENTIAL", 40))
const RATE = 200

type Target = "direct" | "bare" | "gateway" | "before"

const main = async (): Promise<void> => {
  const load0 = loadavg()[0]!
  makeTempDir()
  const beforeCheckout = BEFORE === undefined || BEFORE === "none" ? undefined : checkoutWorktree(BEFORE, "before")
  const fake = await startFakeUpstream()
  const bare = await startBareProxy(fake.info.url)
  const gw = await startAfterGateway(fake.info.url, undefined)
  const before = beforeCheckout === undefined ? undefined : await startGatewayAt(fake.info.url, beforeCheckout, "before")
  const load = await startLoad()
  const targets = new Map<Target, { url: string; pid: number }>([
    ["direct", { url: fake.info.url, pid: fake.child.pid! }],
    ["bare", { url: bare.info.url, pid: bare.child.pid! }],
    ["gateway", { url: gw.url, pid: gw.pid }],
    ...(before === undefined ? [] : [["before", { url: before.url, pid: before.pid }] as const])
  ])
  const order = [...targets.keys()]
  const chosen = scenarios.filter((s) => s.id.includes(filter))
  const requestFor = (s: Scenario, t: Target): Req => (t === "gateway" || t === "before" ? s.gatewayRequest : s.upstreamRequest)

  log("warm-up: 32 connections, 3,000 requests per scenario and gateway")
  for (const s of chosen) {
    for (const t of order) {
      await load.run({ op: "cannon", url: targets.get(t)!.url, connections: 32, amount: t === "gateway" || t === "before" ? 3000 : 1000, requests: [requestFor(s, t)] })
    }
  }

  const figures = new Map<string, { seq: Array<number>; seq99: Array<number>; p50: Array<number>; p99: Array<number>; fb: Array<number> }>()
  const cell = (s: Scenario, t: Target) => {
    const key = `${s.id}/${t}`
    if (!figures.has(key)) figures.set(key, { seq: [], seq99: [], p50: [], p99: [], fb: [] })
    return figures.get(key)!
  }
  for (let round = 0; round < ROUNDS; round++) {
    const rotated = order.map((_, i) => order[(i + round) % order.length]!)
    log(`round ${round + 1}/${ROUNDS} (load average ${f(loadavg()[0]!)})`)
    for (const s of chosen) {
      for (const t of rotated) {
        const req = requestFor(s, t)
        const base = { url: targets.get(t)!.url, warmup: 20, path: req.path, headers: req.headers, body: req.body }
        // Sequential: at 20 req/s every request is alone on the connection and the loop.
        const seq = await load.run({ op: "paced", rate: 20, duration: SEQUENTIAL / 20, ...base })
        const paced = await load.run({ op: "paced", rate: RATE, duration: PACED_SECONDS, ...base })
        const c = cell(s, t)
        c.seq.push(seq.latencyMs.p50)
        c.seq99.push(seq.latencyMs.p99)
        c.p50.push(paced.latencyMs.p50)
        c.p99.push(paced.latencyMs.p99)
        c.fb.push(paced.firstByteMs.p50)
      }
    }
  }
  const rows = chosen.flatMap((s) =>
    order.filter((t) => t !== "direct").map((t) => {
      const d = cell(s, "direct")
      const m = cell(s, t)
      const added = (k: "seq" | "seq99" | "p50" | "p99" | "fb") => f(median(m[k]) - median(d[k]))
      return [t === "bare" ? s.label : "", t === "before" ? `before (${beforeCheckout!.ref})` : t, added("seq"), added("seq99"), added("p50"), added("p99"), s.stream ? added("fb") : "", m.p50.map((x) => f(x - median(d.p50))).join(" / ")]
    })
  )
  process.stdout.write(
    `\nadded over direct (ms), medians of ${ROUNDS} rounds; sequential = ${SEQUENTIAL} requests at 20 req/s, paced = ${RATE} req/s for ${PACED_SECONDS} s; load average at start ${f(load0)}, now ${f(loadavg()[0]!)}\n` +
      table(["scenario", "via", "seq p50", "seq p99", "200/s p50", "200/s p99", "1st byte p50", "200/s p50 by round"], rows, 2) +
      "\n"
  )
  log("idle RSS: 35 s of rest after the rounds")
  // The gateway gives its heap back 30 s after the last request (src/server/idleMemory.ts).
  await sleep(35_000)
  const rss = [`gateway ${mb(await idleRss(gw.pid))}`, ...(before === undefined ? [] : [`before ${mb(await idleRss(before.pid))}`]), `bare proxy (under tsx) ${mb(await idleRss(bare.child.pid!))}`]
  process.stdout.write(`idle RSS after the rounds, 35 s of rest: ${rss.join(", ")}\n`)
}

main().then(() => {
  killAll()
  process.exit(0)
}, fail)
