/**
 * What settlement costs on SQLite (not part of the test run):
 *   npx tsx test/store/bench-settle.ts
 * 1. 10,000 settlements one after another (each waits for its commit: an idle gateway's case);
 * 2. 10,000 settlements 100 at a time (batched by the writer: a loaded gateway's case);
 * 3. the same with the open-request marker each gateway request writes (track + settle);
 * 4. whole requests through a gateway in its own process (memory store vs SQLite store), driven by
 *    autocannon from this process, 32 connections: requests/s and the gateway's CPU per request.
 * Steps 1-3 run with the settlement writer on its own thread and on the event loop (writerThread
 * false), to show whether the thread still pays. SETTLE_ONLY=1 skips step 4.
 */
import { fork } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import autocannon from "autocannon"
import { Effect, Option, Result } from "effect"
import { sha256Hex } from "../../src/config/resolve.js"
import { emptyUsage } from "../../src/domain/usage.js"
import { KeyRepo } from "../../src/services/keyRepo/KeyRepo.js"
import { Quota } from "../../src/services/quota/Quota.js"
import { sqlServices } from "../../src/store/Database.js"
import { parseDatabaseUrl } from "../../src/store/target.js"
import { dataOf, openStore } from "./harness.js"

const N = 10_000
// The child gateway is handed the parent's temporary directory.
const dir = process.argv[2] === "--serve" ? process.argv[4]! : mkdtempSync(join(tmpdir(), "modelgate-bench-"))
const config = {
  groups: [{ name: "g", platform: "openai" }],
  users: [{ name: "u", balance_usd: 1_000_000, concurrency: 1000 }],
  keys: [{ key: "sk-bench-0000000001", user: "u", group: "g", name: "bench" }],
  accounts: [{ name: "sim", platform: "openai", kind: "simulator", groups: ["g"], concurrency: 1000 }]
}
const target = (name: string) => Result.getOrThrow(parseDatabaseUrl(`sqlite:${join(dir, name)}`))

const settleLoop = async (name: string, concurrency: number, withTrack: boolean, writerThread = true) => {
  const db = { url: "", target: target(`${name}-${writerThread ? "thread" : "loop"}.db`) }
  const rt = openStore(db, dataOf(config), { writerThread })
  const program = Effect.gen(function*() {
    const principal = Option.getOrThrow(yield* (yield* KeyRepo).findByHash(sha256Hex("sk-bench-0000000001")))
    const quota = yield* Quota
    const one = (i: number) => {
      const settle = quota.settle({
        requestId: `${name}-${i}`,
        principal,
        model: "gpt-5.4",
        usage: { ...emptyUsage, inputTokens: 1200, outputTokens: 300 },
        at: new Date()
      })
      return withTrack ? Effect.scoped(Effect.andThen(quota.track(`${name}-${i}`, principal, "gpt-5.4"), settle)) : settle
    }
    const started = performance.now()
    const cpu = process.cpuUsage()
    const main = process.threadCpuUsage()
    yield* Effect.forEach(Array.from({ length: N }, (_, i) => i), one, { concurrency, discard: true })
    const used = process.cpuUsage(cpu)
    const mainUsed = process.threadCpuUsage(main)
    return { ms: performance.now() - started, cpuUs: used.user + used.system, loopUs: mainUsed.user + mainUsed.system }
  })
  const { cpuUs, loopUs, ms } = await rt.runPromise(program)
  await rt.dispose()
  console.log(
    `${name.padEnd(28)} ${writerThread ? "thread" : "loop  "} ${String(Math.round(N / (ms / 1000))).padStart(7)} settlements/s  ` +
      `${((ms * 1000) / N).toFixed(1).padStart(6)} us wall  ${(cpuUs / N).toFixed(1).padStart(6)} us CPU (all threads)  ${(loopUs / N).toFixed(1).padStart(6)} us main thread each`
  )
}

/** Child mode: serve a gateway on the given store and answer CPU-usage questions over IPC. */
const serve = async (store: string) => {
  const { startGateway } = await import("../support/gateway.js")
  const services = store === "sqlite" ? sqlServices(target("gateway.db"), { reportOrphans: false }) : {}
  const gw = await startGateway({ config, services, settings: { slotQueueLimit: 10_000 } })
  process.on("message", async (m) => {
    if (m === "cpu") process.send?.(process.cpuUsage())
    if (m === "stop") {
      await gw.close()
      process.exit(0)
    }
  })
  process.send?.(gw.url)
}

const gateway = async (store: "memory" | "sqlite") => {
  const child = fork(new URL(import.meta.url).pathname, ["--serve", store, dir], {
    execArgv: ["--import", "tsx"],
    env: { ...process.env, LOG_LEVEL: "Warn" }
  })
  const ask = <A>(message?: string) =>
    new Promise<A>((resolve) => {
      child.once("message", (m) => resolve(m as A))
      if (message !== undefined) child.send(message)
    })
  const url = await ask<string>()
  const load = (duration: number) =>
    new Promise<autocannon.Result>((resolve, reject) => {
      autocannon({
        url: `${url}/v1/responses`,
        connections: 32,
        duration,
        method: "POST",
        headers: { authorization: "Bearer sk-bench-0000000001", "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-5.4", input: "hello" })
      }, (error, result) => (error ? reject(error) : resolve(result)))
    })
  await load(2) // warm-up (JIT, caches)
  const before = await ask<NodeJS.CpuUsage>("cpu")
  const result = await load(5)
  const after = await ask<NodeJS.CpuUsage>("cpu")
  child.send("stop")
  const requests = result.requests.total
  const cpuUs = (after.user - before.user + after.system - before.system) / requests
  console.log(
    `gateway, ${store.padEnd(6)} store   ${String(Math.round(result.requests.average)).padStart(7)} requests/s  ` +
      `${cpuUs.toFixed(0).padStart(6)} us CPU each  p50 ${result.latency.p50} ms  p99 ${result.latency.p99} ms  ` +
      `errors ${result.errors + result.non2xx}`
  )
  return cpuUs
}

if (process.argv[2] === "--serve") {
  await serve(process.argv[3] ?? "memory")
} else {
  await main()
}

async function main() {
  if (!process.env.ROUNDS) {
    for (const writerThread of [true, false]) {
      await settleLoop("sequential", 1, false, writerThread)
      await settleLoop("100 in flight", 100, false, writerThread)
      await settleLoop("sequential, track+settle", 1, true, writerThread)
      await settleLoop("100 in flight, track+settle", 100, true, writerThread)
    }
  }
  if (process.env.SETTLE_ONLY === "1") {
    rmSync(dir, { recursive: true, force: true })
    return
  }
  // Alternating rounds: this VM is noisy, one pair proves little.
  const memory: Array<number> = []
  const sqlite: Array<number> = []
  for (let round = 0; round < (process.env.ROUNDS ? Number(process.env.ROUNDS) : 3); round++) {
    memory.push(await gateway("memory"))
    sqlite.push(await gateway("sqlite"))
  }
  const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  console.log(
    `median gateway CPU per request: memory ${median(memory).toFixed(0)} us, SQLite ${median(sqlite).toFixed(0)} us ` +
      `(+${((median(sqlite) / median(memory) - 1) * 100).toFixed(1)}%)`
  )
  rmSync(dir, { recursive: true, force: true })
}
