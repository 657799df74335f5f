/**
 * The quick check while working on speed: the gateway's CPU per request for each scenario, in
 * about two minutes, with no baselines, latency or soak (`npm run bench` does all that).
 *
 *   npm run bench:cpu                    4 scenarios x 3 runs of 15,000 requests, medians
 *   npm run bench:cpu -- json 8000 5     only scenarios whose id contains "json", 8,000 requests, 5 runs
 *
 * Same processes as the benchmark (bench/harness.ts): the fake upstream, the gateway as `npm start`
 * runs it (the bundle; default log level, SQLite), autocannon with 16 connections in its own
 * process. CPU is read from /proc for the gateway process only, so it holds up on a busy machine
 * better than any timing does; runs still vary by about 5-10%, hence the medians. Each scenario is
 * also sent through the bare proxy (bench/bareProxy.ts) in the same rounds: its figure is the VM's
 * floor at that moment, and the ratio beside it is the figure to compare across days.
 */
import { cpuSeconds } from "./shared.js"
import { killAll, log, scenarios, startBareProxy, startFakeUpstream, startGateway, startLoad } from "./harness.js"

// 15,000 requests a run: with 5,000 the same build measured anywhere from 470 to 610 µs on this
// VM (a major GC more or less in a short run); at 15,000 runs agree within about 10%.
const [filter = "", requestsArg = "15000", runsArg = "3"] = process.argv.slice(2)
const requests = Number(requestsArg)
const runs = Number(runsArg)

const median = (xs: ReadonlyArray<number>): number => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

try {
  const fake = await startFakeUpstream()
  const gw = await startGateway(fake.info.url)
  const bare = await startBareProxy(fake.info.url)
  const load = await startLoad()
  const chosen = scenarios.filter((s) => s.id.includes(filter))
  const figures = new Map<string, Array<number>>()
  const bareFigures = new Map<string, Array<number>>()
  const measure = async (pid: number, url: string, request: (typeof chosen)[number]["gatewayRequest"], warm: boolean) => {
    const command = { op: "cannon" as const, url, connections: 16, amount: requests, requests: [request] }
    // The first measured run still came out 10-15% higher after 2,000 requests of warm-up.
    if (warm) await load.run({ ...command, amount: Math.min(6000, requests) })
    const before = cpuSeconds(pid)
    const result = await load.run(command)
    if (result.ok2xx !== requests) throw new Error(`${url}: ${requests - result.ok2xx} requests did not answer 2xx`)
    return ((cpuSeconds(pid) - before) * 1e6) / requests
  }
  const add = (to: Map<string, Array<number>>, id: string, micros: number) => to.set(id, [...(to.get(id) ?? []), micros])
  for (let run = 0; run < runs; run++) {
    for (const scenario of chosen) {
      add(figures, scenario.id, await measure(gw.pid, gw.url, scenario.gatewayRequest, run === 0))
      add(bareFigures, scenario.id, await measure(bare.child.pid!, bare.info.url, scenario.upstreamRequest, run === 0))
    }
    log(`run ${run + 1}/${runs} done`)
  }
  for (const [id, xs] of figures) {
    const gateway = median(xs)
    const floor = median(bareFigures.get(id) ?? [])
    console.log(
      `${id.padEnd(18)} ${Math.round(gateway).toLocaleString("en-US").padStart(6)} µs CPU/request  (runs: ${xs.map(Math.round).join(", ")})` +
        `   bare proxy ${Math.round(floor)} µs, ratio ${(gateway / floor).toFixed(2)}x`
    )
  }
} finally {
  killAll()
}
process.exit(0)
