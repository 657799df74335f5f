// @ts-check
/**
 * The SQLite writer thread (see writerThread.ts): one connection to the gateway's database file,
 * one transaction per batch of settlement statements. It knows nothing about settlements: the
 * statements are built on the main thread (batch.ts) and come here as SQL text and parameters.
 *
 * Plain JavaScript on purpose: the same file runs from src/ under tsx and vitest, from dist/ and
 * beside the bundle, with no loader in the thread.
 */
import { DatabaseSync } from "node:sqlite"
import { parentPort, workerData } from "node:worker_threads"

/** @typedef {import("./writerThread.js").ThreadBatch} ThreadBatch */
/** @typedef {import("./writerThread.js").ThreadReply} ThreadReply */
/** @typedef {import("./writerThread.js").ThreadOptions} ThreadOptions */

const options = /** @type {ThreadOptions} */ (workerData)
const db = new DatabaseSync(options.filename)
for (const pragma of options.pragmas) db.exec(pragma)

// Prepared once per SQL text: a batch's statements repeat (only a multi-row insert's row count varies).
const PREPARED_MAX = 200
/** @type {Map<string, { statement: import("node:sqlite").StatementSync, reader: boolean }>} */
const prepared = new Map()
/** @param {string} sql */
const prepare = (sql) => {
  let entry = prepared.get(sql)
  if (entry === undefined) {
    if (prepared.size >= PREPARED_MAX) prepared.clear()
    const statement = db.prepare(sql)
    entry = { statement, reader: statement.columns().length > 0 }
    prepared.set(sql, entry)
  }
  return entry
}

class Mismatch {
  /** @param {Array<Array<unknown>>} fresh */
  constructor(fresh) {
    this.fresh = fresh
  }
}

/**
 * One transaction. BEGIN IMMEDIATE: the write lock is taken up front (waiting up to the busy
 * timeout), not mid-batch. Any throw rolls the whole batch back.
 * @param {ThreadBatch} batch
 */
const write = (batch) => {
  db.exec("BEGIN IMMEDIATE")
  try {
    /** @type {Array<Array<unknown> | null>} */
    const rows = []
    /** @type {Array<Array<unknown>>} */
    const fresh = []
    let freshCount = 0
    for (const s of batch.statements) {
      const { reader, statement } = prepare(s.sql)
      const params = /** @type {Array<import("node:sqlite").SQLInputValue>} */ (s.params)
      if (reader) {
        const returned = statement.all(...params)
        rows.push(s.rows ? returned : null)
        if (s.fresh) {
          fresh.push(returned)
          freshCount += returned.length
        }
      } else {
        statement.run(...params)
        rows.push(null)
      }
    }
    if (freshCount !== batch.expectedFresh) throw new Mismatch(fresh)
    db.exec("COMMIT")
    return rows
  } catch (error) {
    if (db.isTransaction) db.exec("ROLLBACK")
    throw error
  }
}

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
