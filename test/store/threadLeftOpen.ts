/**
 * A process that writes one batch through a SQLite writer thread and never closes the thread's
 * scope (a CLI that forgets to): run by writerThread.test.ts, which expects it to exit by itself.
 *   node --import tsx test/store/threadLeftOpen.ts <database file with a table t (id, n)>
 */
import { Effect, Scope } from "effect"
import { startWriterThread } from "../../src/store/writerThread.js"

const filename = process.argv[2] ?? ""
const scope = Effect.runSync(Scope.make())
const thread = Effect.runSync(Scope.provide(startWriterThread({ filename, pragmas: [] }), scope))
const insert = { sql: "INSERT INTO t (id, n) VALUES ('z', 1)", params: [], rows: false, fresh: false }
const reply = await Effect.runPromise(thread.run([insert], 0))
process.stdout.write(`${reply._tag}\n`)
