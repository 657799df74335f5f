// @ts-check
/**
 * The SQLite writer thread (see writerThread.ts): one connection to the gateway's database file,
 * one transaction per batch of settlement statements. It knows nothing about settlements: the
 * statements are built on the main thread (batch.ts) and come here as SQL text and parameters.
 *
 * Plain JavaScript on purpose: the same file runs from src/ under tsx and vitest, from dist/ and
 * beside the bundle, with no loader in the thread.
 */
import { createRequire } from "node:module"
import { parentPort, workerData } from "node:worker_threads"

/** @typedef {import("./writerThread.js").ThreadBatch} ThreadBatch */
/** @typedef {import("./writerThread.js").ThreadReply} ThreadReply */
/** @typedef {import("./writerThread.js").ThreadOptions} ThreadOptions */

/** @type {typeof import("better-sqlite3")} */
const Database = createRequire(import.meta.url)("better-sqlite3")
const options = /** @type {ThreadOptions} */ (workerData)
const db = new Database(options.filename)
for (const pragma of options.pragmas) db.exec(pragma)

// Prepared once per SQL text: a batch's statements repeat (only a multi-row insert's row count varies).
const PREPARED_MAX = 200
/** @type {Map<string, import("better-sqlite3").Statement<Array<unknown>>>} */
const prepared = new Map()
/** @param {string} sql */
const prepare = (sql) => {
  let statement = prepared.get(sql)
  if (statement === undefined) {
    if (prepared.size >= PREPARED_MAX) prepared.clear()
    statement = db.prepare(sql)
    prepared.set(sql, statement)
  }
  return statement
}

class Mismatch {
  /** @param {Array<Array<unknown>>} fresh */
  constructor(fresh) {
    this.fresh = fresh
  }
}

/** BEGIN IMMEDIATE: the write lock is taken up front (waiting up to the busy timeout), not mid-batch. */
const write = db.transaction(/** @param {ThreadBatch} batch */ (batch) => {
  /** @type {Array<Array<unknown> | null>} */
  const rows = []
  /** @type {Array<Array<unknown>>} */
  const fresh = []
  let freshCount = 0
  for (const s of batch.statements) {
    const statement = prepare(s.sql)
    if (statement.reader) {
      const returned = statement.all(...s.params)
      rows.push(s.rows ? returned : null)
      if (s.fresh) {
        fresh.push(returned)
        freshCount += returned.length
      }
    } else {
      statement.run(...s.params)
      rows.push(null)
    }
  }
  if (freshCount !== batch.expectedFresh) throw new Mismatch(fresh) // rolls the transaction back
  return rows
}).immediate

const port = /** @type {import("node:worker_threads").MessagePort} */ (parentPort)
port.on("message", (/** @type {ThreadBatch | "close"} */ message) => {
  if (message === "close") {
    db.close()
    port.close()
    return
  }
  /** @type {ThreadReply} */
  let reply
  try {
    reply = { id: message.id, _tag: "Committed", rows: write(message) }
  } catch (error) {
    reply = error instanceof Mismatch
      ? { id: message.id, _tag: "Mismatch", fresh: error.fresh }
      : { id: message.id, _tag: "Failed", message: `writing settlements failed: ${String(error)}` }
  }
  port.postMessage(reply)
})
