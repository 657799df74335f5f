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
 * better than any timing does; runs still vary by about 5-10%, hence the medians.
 */
import { cpuSeconds } from "./shared.js"
import { killAll, log, scenarios, startFakeUpstream, startGateway, startLoad } from "./harness.js"

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
  const load = await startLoad()
  const chosen = scenarios.filter((s) => s.id.includes(filter))
  const figures = new Map<string, Array<number>>()
  for (let run = 0; run < runs; run++) {
    for (const scenario of chosen) {
      const command = { op: "cannon" as const, url: gw.url, connections: 16, amount: requests, requests: [scenario.gatewayRequest] }
      if (run === 0) await load.run({ ...command, amount: Math.min(2000, requests) }) // warm-up
      const before = cpuSeconds(gw.pid)
      const result = await load.run(command)
      const micros = ((cpuSeconds(gw.pid) - before) * 1e6) / requests
      if (result.ok2xx !== requests) throw new Error(`${scenario.id}: ${requests - result.ok2xx} requests did not answer 2xx`)
      figures.set(scenario.id, [...(figures.get(scenario.id) ?? []), micros])
    }
    log(`run ${run + 1}/${runs} done`)
  }
  for (const [id, xs] of figures) {
    console.log(`${id.padEnd(18)} ${Math.round(median(xs)).toLocaleString("en-US").padStart(6)} µs CPU/request  (runs: ${xs.map(Math.round).join(", ")})`)
  }
} finally {
  killAll()
}
process.exit(0)
