/**
 * The SQLite settlement writer's own thread. node:sqlite is synchronous: a batch's statements,
 * its commit and, every thousand pages or so, the WAL checkpoint (an fsync) would run on the event
 * loop, between requests. Here they run on a second connection to the same file, in a worker
 * thread (writerThread.worker.mjs), and the event loop only builds the statements and reads back
 * the rows it needs. SQLite's WAL lets the server's own connection go on reading meanwhile.
 *
 * The thread is started on the first batch (a CLI command that settles nothing never starts it),
 * holds the process open only while a batch is in flight, and is started again if it dies.
 */
import { Worker } from "node:worker_threads"
import { Effect, type Scope } from "effect"
import { StoreError } from "../domain/errors.js"

/** One statement as the thread runs it. */
export interface ThreadStatement {
  readonly sql: string
  readonly params: ReadonlyArray<unknown>
  /** Send back the rows it returns. */
  readonly rows: boolean
  /** Its rows are the batch's new settlements: they are counted against `expectedFresh`. */
  readonly fresh: boolean
}

export interface ThreadBatch {
  readonly id: number
  readonly statements: ReadonlyArray<ThreadStatement>
  /**
   * How many new settlements the statements were planned for. When the "fresh" statements return
   * another number, the transaction is rolled back and the thread answers `Mismatch` with what they
   * returned, so the batch is planned again for those (a repeat of an earlier settlement).
   */
  readonly expectedFresh: number
}

export type ThreadReply =
  | { readonly id: number; readonly _tag: "Committed"; readonly rows: ReadonlyArray<ReadonlyArray<unknown> | null> }
  | { readonly id: number; readonly _tag: "Mismatch"; readonly fresh: ReadonlyArray<ReadonlyArray<unknown>> }
  | { readonly id: number; readonly _tag: "Failed"; readonly message: string }

export interface ThreadOptions {
  readonly filename: string
  /** Run on the thread's connection when it opens (busy timeout, synchronous mode...). */
  readonly pragmas: ReadonlyArray<string>
}

export interface WriterThread {
  /** Runs the statements in one transaction on the thread's connection. */
  readonly run: (
    statements: ReadonlyArray<ThreadStatement>,
    expectedFresh: number
  ) => Effect.Effect<Exclude<ThreadReply, { _tag: "Failed" }>, StoreError>
}

// Beside this module in src/ and dist/; beside the bundle in .build/ (scripts/start.mjs copies it).
const WORKER_URL = new URL("./writerThread.worker.mjs", import.meta.url)

export const startWriterThread = (options: ThreadOptions): Effect.Effect<WriterThread, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(Effect.sync(() => new Thread(options)), (thread) => Effect.promise(() => thread.close())),
    (thread): WriterThread => ({ run: thread.run })
  )

type Waiter = (reply: Effect.Effect<Exclude<ThreadReply, { _tag: "Failed" }>, StoreError>) => void

class Thread {
  private worker: Worker | undefined
  private readonly waiting = new Map<number, Waiter>()
  private nextId = 0

  constructor(private readonly options: ThreadOptions) {}

  readonly run: WriterThread["run"] = (statements, expectedFresh) =>
    Effect.callback((resume) => {
      const id = ++this.nextId
      const worker = this.started()
      this.waiting.set(id, resume)
      worker.ref() // a batch in flight keeps the process up until it has landed
      worker.postMessage({ id, statements, expectedFresh } satisfies ThreadBatch)
      return Effect.sync(() => this.settled(id))
    })

  private started(): Worker {
    if (this.worker !== undefined) return this.worker
    const worker = new Worker(WORKER_URL, { workerData: this.options })
    worker.unref()
    worker.on("message", (reply: ThreadReply) => {
      const resume = this.settled(reply.id)
      if (resume === undefined) return
      resume(reply._tag === "Failed" ? Effect.fail(new StoreError({ message: reply.message })) : Effect.succeed(reply))
    })
    // An uncaught error ends the thread: what it was writing fails (and is retried on a new one).
    const stopped = (cause: unknown) => {
      if (this.worker !== worker) return
      this.worker = undefined
      const waiting = [...this.waiting.values()]
      this.waiting.clear()
      const failure = Effect.fail(new StoreError({ message: "the SQLite writer thread stopped", cause }))
      for (const resume of waiting) resume(failure)
    }
    worker.on("error", stopped)
    worker.on("exit", (code) => stopped(`exit code ${code}`))
    this.worker = worker
    return worker
  }

  private settled(id: number): Waiter | undefined {
    const resume = this.waiting.get(id)
    this.waiting.delete(id)
    if (this.waiting.size === 0) this.worker?.unref()
    return resume
  }

  /** Closes the thread's connection (which checkpoints the WAL) and waits for the thread to end. */
  close(): Promise<void> {
    const worker = this.worker
    this.worker = undefined
    if (worker === undefined) return Promise.resolve()
    return new Promise((resolve) => {
      worker.once("exit", () => resolve())
      // Held open until the thread has closed its connection: an unreferenced worker's exit would
      // not keep this process alive to see it, and the scope closing here waits for it.
      worker.ref()
      worker.postMessage("close")
    })
  }
}
