/**
 * Balance changes racing each other (issue 26, item 7): forty top-ups and forty set-balance calls
 * at once, through the operator's store functions, on SQLite and on PostgreSQL. Each change must
 * read the balance it records as "before" under the same lock as its write, so the ledger
 * (balance_topups) sums to the balance and the audit rows chain: each one's before is another's
 * after. On SQLite a second connection also writes the balance meanwhile, as the settlement
 * writer thread does, so a change that read before taking the write lock is caught there too.
 */
import { Worker } from "node:worker_threads"
import { SqlClient } from "effect/sql"
import { Effect, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Micros } from "../../src/domain/model.js"
import { listAudit } from "../../src/store/admin/audit.js"
import { changeBalance, createUser, getUser } from "../../src/store/admin/users.js"
import {
  type Backend,
  dataOf,
  openStore,
  PG_URL,
  postgresBackend,
  postgresReachable,
  requireServices,
  sqliteBackend,
  type StoreServices,
  type TestDatabase
} from "./harness.js"
import { storeConfig } from "./suite.js"

const PARALLEL = 40

const micros = (n: number) => n as Micros

const Detail = Schema.Struct({ balance_micros: Schema.Tuple([Schema.Number, Schema.Number]) })
const decodeDetail = Schema.decodeUnknownSync(Schema.fromJsonString(Detail))

/** The user's balance changes as the audit trail tells them: [before, after] per row. */
const auditedChanges = (name: string) =>
  Effect.map(listAudit({ limit: 10 * PARALLEL, target: name }), (rows) =>
    rows
      .filter((r) => r.action === "user.topup" || r.action === "user.set_balance")
      .map((r) => decodeDetail(r.detail ?? "null").balance_micros))

const ledgerOf = (name: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ amount_micros: number | string }>`SELECT amount_micros FROM balance_topups WHERE user_name = ${name}`).pipe(
      Effect.map((rows) => rows.map((r) => Number(r.amount_micros)))
    )

/**
 * The audit pairs walked from `start`: each row's before must be the after of the one before it.
 * Returns where the walk ends, or fails naming the first before no row led to.
 */
const walk = (start: number, pairs: ReadonlyArray<readonly [number, number]>): number => {
  const byBefore = new Map<number, Array<number>>()
  for (const [before, after] of pairs) byBefore.set(before, [...(byBefore.get(before) ?? []), after])
  let at = start
  for (let step = 0; step < pairs.length; step++) {
    const next = byBefore.get(at)?.shift()
    if (next === undefined) {
      throw new Error(`audit rows do not chain: after ${step} steps none starts at ${at}; pairs ${JSON.stringify(pairs)}`)
    }
    at = next
  }
  return at
}

const createdAt = (rt: ReturnType<typeof openStore>, name: string, balance: number) =>
  rt.runPromise(createUser("test", { name, balanceMicros: micros(balance), concurrency: 1 }))

/**
 * What a second connection on the SQLite file does to the user meanwhile: 1 µ$ off per commit, a
 * commit every few milliseconds until stopped; then how many commits it made.
 */
const settlingThread = (filename: string, user: string) => {
  const code = `
    const { workerData, parentPort } = require("node:worker_threads")
    const { DatabaseSync } = require("node:sqlite")
    const db = new DatabaseSync(workerData.filename)
    db.exec("PRAGMA busy_timeout = 5000")
    const debit = db.prepare("UPDATE users SET balance_micros = balance_micros - 1 WHERE name = ?")
    let done = 0
    let stop = false
    parentPort.once("message", () => { stop = true })
    const tick = () => {
      if (stop) { db.close(); parentPort.postMessage(done); return }
      db.exec("BEGIN IMMEDIATE")
      debit.run(workerData.user)
      db.exec("COMMIT")
      done++
      setTimeout(tick, 2) // as a writer that commits batch after batch, letting others in between
    }
    parentPort.postMessage("started")
    tick()`
  const worker = new Worker(code, { eval: true, workerData: { filename, user } })
  const started = new Promise<void>((resolve, reject) => {
    worker.once("message", () => resolve())
    worker.once("error", reject)
  })
  const stop = () =>
    new Promise<number>((resolve, reject) => {
      worker.once("message", (n: number) => resolve(n))
      worker.once("error", reject)
      worker.postMessage("stop")
    })
  return { started, stop }
}

const racesSuite = (makeBackend: () => Backend) => {
  let backend: Backend
  let db: TestDatabase
  let rt: ReturnType<typeof openStore>
  const run = <A, E>(effect: Effect.Effect<A, E, StoreServices>) => rt.runPromise(effect)

  beforeAll(async () => {
    backend = makeBackend()
    db = await backend.fresh()
    rt = openStore(db, dataOf(storeConfig()))
  })
  afterAll(async () => {
    await rt.dispose()
    await backend.cleanup()
  })

  it(`${PARALLEL} parallel 1 µ$ top-ups: ${PARALLEL} ledger rows of 1 µ$, audit rows 0→1→…→${PARALLEL}`, async () => {
    await createdAt(rt, "topups", 0)
    const answers = await Promise.all(
      Array.from({ length: PARALLEL }, () => run(changeBalance("test", "topups", { mode: "add", amountMicros: micros(1) })))
    )
    expect([...answers].sort((a, b) => a - b)).toEqual(Array.from({ length: PARALLEL }, (_, i) => i + 1))
    expect((await run(getUser("topups"))).balance_micros).toBe(PARALLEL)
    expect(await run(ledgerOf("topups"))).toEqual(Array.from({ length: PARALLEL }, () => 1))
    const pairs = await run(auditedChanges("topups"))
    expect([...pairs].sort((a, b) => a[0] - b[0])).toEqual(Array.from({ length: PARALLEL }, (_, i) => [i, i + 1]))
  })

  it(`${PARALLEL} parallel set-balance calls: the ledger sums to the balance, each audit before is another's after`, async () => {
    const start = 9_000_000
    await createdAt(rt, "sets", start)
    // Distinct targets, none equal to the start: the audit chain then has one way through.
    const targets = Array.from({ length: PARALLEL }, (_, i) => 1_000_000 + i * 1_000_003)
    await Promise.all(targets.map((t) => run(changeBalance("test", "sets", { mode: "set", amountMicros: micros(t) }))))
    const balance = (await run(getUser("sets"))).balance_micros
    expect(targets).toContain(balance)
    const ledger = await run(ledgerOf("sets"))
    expect(ledger).toHaveLength(PARALLEL)
    expect(start + ledger.reduce((a, b) => a + b, 0)).toBe(balance)
    const pairs = await run(auditedChanges("sets"))
    expect(pairs).toHaveLength(PARALLEL)
    expect(walk(start, pairs)).toBe(balance)
  })

  it("top-ups and set-balance calls mixed: the ledger still sums to the balance", async () => {
    const start = 5_000_000
    await createdAt(rt, "mixed", start)
    // Set targets 10 $ apart, top-ups of at most 40 µ$: every balance the user passes through is
    // distinct (a run of top-ups only climbs from its set), so the audit chain has one way through.
    await Promise.all(Array.from({ length: PARALLEL }, (_, i) =>
      run(changeBalance("test", "mixed", i % 2 === 0
        ? { mode: "add", amountMicros: micros(1 + i) }
        : { mode: "set", amountMicros: micros((i + 1) * 10_000_000) }))
    ))
    const balance = (await run(getUser("mixed"))).balance_micros
    expect(start + (await run(ledgerOf("mixed"))).reduce((a, b) => a + b, 0)).toBe(balance)
    const pairs = await run(auditedChanges("mixed"))
    expect(pairs).toHaveLength(PARALLEL)
    expect(walk(start, pairs)).toBe(balance)
  })

  if (makeBackend === sqliteBackend) {
    it(`while a second connection settles on the same file, ${PARALLEL} top-ups all land, each exactly once`, async () => {
      await createdAt(rt, "shared", 1_000_000)
      if (db.target._tag !== "Sqlite") throw new Error("expected a SQLite target")
      const settling = settlingThread(db.target.filename, "shared")
      await settling.started
      const answers = await Promise.all(Array.from({ length: PARALLEL }, () =>
        rt.runPromiseExit(changeBalance("test", "shared", { mode: "add", amountMicros: micros(1) }))))
      const settled = await settling.stop()
      expect(settled).toBeGreaterThan(0)
      expect(answers.filter((a) => a._tag === "Failure").map(String)).toEqual([])
      expect(await run(ledgerOf("shared"))).toEqual(Array.from({ length: PARALLEL }, () => 1))
      expect((await run(getUser("shared"))).balance_micros).toBe(1_000_000 + PARALLEL - settled)
      // Each top-up's after is its before plus 1 µ$, whatever the other connection took in between.
      for (const [before, after] of await run(auditedChanges("shared"))) expect(after - before).toBe(1)
    })
  }
}

describe("balance changes racing on SQLite", () => {
  racesSuite(sqliteBackend)
})

const reachable = await postgresReachable()
if (reachable) {
  describe("balance changes racing on PostgreSQL", () => {
    racesSuite(postgresBackend)
  })
} else if (requireServices) {
  describe("balance changes racing on PostgreSQL", () => {
    it(`PostgreSQL is reachable at ${PG_URL} (MODELGATE_REQUIRE_SERVICES=1)`, () => {
      expect.fail(`PostgreSQL is not reachable at ${PG_URL}`)
    })
  })
} else {
  console.warn(`PostgreSQL is not reachable at ${PG_URL}: skipping the PostgreSQL balance races (set DATABASE_TEST_URL)`)
  describe.skip(`balance changes racing on PostgreSQL (skipped: not reachable at ${PG_URL})`, () => {
    it("runs the races", () => undefined)
  })
}
