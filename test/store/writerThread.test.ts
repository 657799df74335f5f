/**
 * The SQLite writer thread on its own (the store suite runs every settlement through it too): one
 * transaction per batch on its own connection, the rows asked for, a rollback when the batch was
 * planned for other new settlements than the database holds, failures as StoreError values, a new
 * thread after one has died, and an idle thread that never keeps a process from exiting.
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync as Database } from "node:sqlite"
import { Cause, Effect, Exit, Option } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { sqlitePragmas } from "../../src/store/client.js"
import { startWriterThread, type ThreadStatement, type WriterThread } from "../../src/store/writerThread.js"

const dir = mkdtempSync(join(tmpdir(), "modelgate-thread-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let n = 0
/** A fresh database file with one table, and this thread's own connection to it. */
const freshDb = () => {
  const filename = join(dir, `w${++n}.db`)
  const db = new Database(filename)
  db.exec("PRAGMA journal_mode = WAL")
  db.exec("CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER NOT NULL CHECK (n >= 0))")
  return { filename, db }
}

/** Runs `use` with a thread on `filename`, closing it afterwards. */
const withThread = <A>(filename: string, use: (thread: WriterThread) => Effect.Effect<A, unknown>) =>
  Effect.runPromiseExit(Effect.scoped(Effect.flatMap(startWriterThread({ filename, pragmas: sqlitePragmas }), use)))

const insert = (ids: ReadonlyArray<string>): ThreadStatement => ({
  sql: `INSERT INTO t (id, n) VALUES ${ids.map(() => "(?, 0)").join(", ")} ON CONFLICT (id) DO NOTHING RETURNING id`,
  params: ids,
  rows: true,
  fresh: true
})
const bump = (id: string, by: number, rows = true): ThreadStatement => ({
  sql: "UPDATE t SET n = n + ? WHERE id = ? RETURNING id, n",
  params: [by, id],
  rows,
  fresh: false
})

const valueOf = <A>(exit: Exit.Exit<A, unknown>): A => {
  if (Exit.isFailure(exit)) throw new Error(`expected success, got ${String(exit.cause)}`)
  return exit.value
}
const errorOf = (exit: Exit.Exit<unknown, unknown>): unknown => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  return Option.getOrNull(Cause.findErrorOption(exit.cause))
}

describe("SQLite writer thread", () => {
  it("commits a batch as one transaction and sends back only the rows asked for", async () => {
    const { db, filename } = freshDb()
    const reply = valueOf(await withThread(filename, (t) => t.run([insert(["a", "b"]), bump("a", 5), bump("b", 7, false)], 2)))
    expect(reply).toEqual({ id: 1, _tag: "Committed", rows: [[{ id: "a" }, { id: "b" }], [{ id: "a", n: 5 }], null] })
    // Committed: the other connection (the server's, in the gateway) reads it at once.
    expect(db.prepare("SELECT id, n FROM t ORDER BY id").all()).toEqual([{ id: "a", n: 5 }, { id: "b", n: 7 }])
  })

  it("rolls back a batch planned for other new rows than it found, and says which were new", async () => {
    const { db, filename } = freshDb()
    db.exec("INSERT INTO t (id, n) VALUES ('a', 1)")
    const reply = valueOf(await withThread(filename, (t) => t.run([insert(["a", "b"]), bump("a", 5), bump("b", 5)], 2)))
    expect(reply).toEqual({ id: 1, _tag: "Mismatch", fresh: [[{ id: "b" }]] })
    // Nothing of it landed: not the new row, not the updates planned on the wrong premise.
    expect(db.prepare("SELECT id, n FROM t ORDER BY id").all()).toEqual([{ id: "a", n: 1 }])
  })

  it("fails a batch whose statement fails as a StoreError, and writes none of it", async () => {
    const { db, filename } = freshDb()
    const exit = await withThread(filename, (t) => t.run([insert(["a"]), bump("a", -1)], 1))
    expect(errorOf(exit)).toMatchObject({ _tag: "StoreError", message: expect.stringContaining("CHECK constraint failed") })
    expect(db.prepare("SELECT COUNT(*) AS c FROM t").get()).toEqual({ c: 0 })
  })

  it("waits for another connection's write lock without holding up the event loop", async () => {
    const { db, filename } = freshDb()
    db.exec("BEGIN IMMEDIATE")
    let ticks = 0
    const timer = setInterval(() => ticks++, 10)
    setTimeout(() => db.exec("COMMIT"), 300)
    const reply = valueOf(await withThread(filename, (t) => t.run([insert(["a"])], 1)))
    clearInterval(timer)
    expect(reply._tag).toBe("Committed")
    // The batch waited for the lock (busy_timeout) on its thread while timers here kept firing.
    expect(ticks).toBeGreaterThanOrEqual(10)
  })

  it("fails what a thread was given when it dies, and starts a new thread for the next batch", async () => {
    const missing = join(dir, "not-yet", "w.db")
    const exit = await withThread(missing, (t) =>
      Effect.gen(function*() {
        const first = yield* Effect.exit(t.run([insert(["a"])], 1))
        mkdirSync(join(dir, "not-yet"))
        new Database(missing).exec("CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER NOT NULL)")
        const second = yield* t.run([insert(["a"])], 1)
        return { first, second }
      }))
    const { first, second } = valueOf(exit)
    expect(errorOf(first)).toMatchObject({ _tag: "StoreError", message: "the SQLite writer thread stopped" })
    expect(second._tag).toBe("Committed")
  })

  it("does not keep a process alive once its batches have landed", () => {
    const { filename } = freshDb()
    const script = new URL("./threadLeftOpen.ts", import.meta.url).pathname
    const child = spawnSync(process.execPath, ["--import", "tsx", script, filename], { encoding: "utf8", timeout: 20_000 })
    expect(child.stderr).toBe("")
    expect(child.stdout.trim()).toBe("Committed")
    expect(child.signal).toBeNull() // not killed by the timeout: it exited on its own
    expect(child.status).toBe(0)
  })
})
