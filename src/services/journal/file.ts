/**
 * The settlement journal as a local file of JSON lines (record.ts), one settlement a line.
 *
 * - Appends are group-committed: the appends of one event-loop turn are written together and
 *   fsynced once; each resolves only after that fsync. The file (and its directory entry, when the
 *   append created it) survives a crash of the process or the machine from then on.
 * - The file holds only what is pending: once the store has some settlements, the rest is written
 *   to a temporary file, fsynced and renamed over the journal (atomic); when nothing is left, the
 *   file is removed. A crash in between leaves entries the store already has: replayed, they are
 *   repeats the store ignores (its usage is keyed by request id).
 * - Every file operation is synchronous, so no append or rewrite interleaves with another: an
 *   append queued while a rewrite runs lands in the new file. They happen only while the store is
 *   away or just back, and each is one write and one fsync.
 * - The file is created by the first append: a gateway whose store never failed leaves none.
 * - The journal, its temporary file and `.rejected` are readable by their owner only (0600): a line
 *   names a key's hash, its user and what they spent. One found wider (made by hand, or before
 *   this rule) is narrowed when it is opened.
 * - On open, a line that does not decode (torn by a crash mid-write, edited by hand) is moved to
 *   `<path>.rejected` and logged, never dropped in silence and never guessed at.
 *
 * One process per file (lock.ts): a second process on the same path refuses to start.
 */
import {
  appendFileSync,
  closeSync,
  existsSync,
  fchmodSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeSync
} from "node:fs"
import { dirname, extname, join } from "node:path"
import { Config, Effect, Exit, Latch, Layer, Result, type Scope } from "effect"
import { lockJournal } from "./lock.js"
import { decodeLine, encodeLine } from "./record.js"
import type { Settlement } from "../../domain/settlement.js"
import { JournalError, reportDepth, SettlementJournal, type SettlementJournalShape } from "./SettlementJournal.js"

interface Entry {
  readonly settlement: Settlement
  readonly line: string
}

interface Queued {
  readonly entry: Entry
  readonly resume: (exit: Exit.Exit<void, JournalError>) => void
}

const failed = (message: string) => (cause: unknown) => new JournalError({ message, cause })

/** Makes a rename or a new file's name durable (a no-op where directories cannot be opened). */
const fsyncDirectory = (dir: string) => {
  let fd: number | undefined
  try {
    fd = openSync(dir, "r")
    fsyncSync(fd)
  } catch {
    // Some platforms refuse fsync on a directory; the data itself is fsynced.
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** Owner only: read and write. */
const PRIVATE = 0o600

/**
 * Narrows `fd`'s file to owner-only, should it be wider (a file created by hand, or by an older
 * gateway). A file another user owns cannot be narrowed by this one; it is left as it is.
 */
const narrow = (fd: number) => {
  if ((fstatSync(fd).mode & 0o077) === 0) return
  try {
    fchmodSync(fd, PRIVATE)
  } catch {
    // Not ours to change: the file stays usable, as its owner made it.
  }
}

const writeAll = (fd: number, text: string) => {
  const bytes = Buffer.from(text, "utf8")
  let at = 0
  while (at < bytes.length) at += writeSync(fd, bytes, at, bytes.length - at)
  return bytes.length
}

/** Reads `path` (if it exists): the pending entries, and the lines that did not decode. */
const load = (path: string) => {
  const entries = new Map<string, Entry>()
  const rejected: Array<string> = []
  if (!existsSync(path)) return { entries, rejected, clean: true }
  const text = readFileSync(path, "utf8")
  const lines = text.split("\n")
  // A last line without its newline was being written when the process stopped.
  const complete = text.endsWith("\n") || text === ""
  let duplicates = false
  for (const line of lines) {
    if (line === "") continue
    const decoded = decodeLine(line)
    if (Result.isFailure(decoded)) {
      rejected.push(line)
      continue
    }
    const s = decoded.success
    if (entries.has(s.requestId)) duplicates = true
    else entries.set(s.requestId, { settlement: s, line })
  }
  return { entries, rejected, clean: complete && rejected.length === 0 && !duplicates }
}

export const make = Effect.fnUntraced(function*(path: string): Effect.fn.Return<SettlementJournalShape, JournalError, Scope.Scope> {
  const dir = dirname(path)
  yield* lockJournal(path)
  const loaded = yield* Effect.try({ try: () => load(path), catch: failed(`cannot read the settlement journal ${path}`) })
  const pending = loaded.entries
  let fd: number | undefined
  let size = 0
  const open = () => {
    if (fd !== undefined) return fd
    mkdirSync(dir, { recursive: true })
    const created = !existsSync(path)
    const opened = openSync(path, "a", PRIVATE)
    narrow(opened)
    if (created) fsyncDirectory(dir)
    fd = opened
    // What a failed write is cut back to: the file as it is, whatever happened before.
    size = fstatSync(opened).size
    return opened
  }
  const close = () => {
    if (fd !== undefined) closeSync(fd)
    fd = undefined
  }
  /** Makes the file hold exactly what is pending (removed when nothing is). */
  const rewrite = () => {
    close()
    if (pending.size === 0) {
      if (existsSync(path)) {
        unlinkSync(path)
        fsyncDirectory(dir)
      }
      return
    }
    const tmp = `${path}.tmp`
    const tmpFd = openSync(tmp, "w", PRIVATE)
    try {
      // Renamed over the journal: its mode becomes the journal's.
      narrow(tmpFd)
      writeAll(tmpFd, [...pending.values()].map((e) => `${e.line}\n`).join(""))
      fsyncSync(tmpFd)
    } finally {
      closeSync(tmpFd)
    }
    renameSync(tmp, path)
    fsyncDirectory(dir)
    open()
  }
  if (loaded.rejected.length > 0) {
    const aside = `${path}.rejected`
    yield* Effect.try({
      try: () => {
        appendFileSync(aside, loaded.rejected.map((l) => `${l}\n`).join(""), { mode: PRIVATE })
        const f = openSync(aside, "r")
        try {
          narrow(f)
          fsyncSync(f)
        } finally {
          closeSync(f)
        }
      },
      catch: failed(`cannot set aside unreadable lines of the settlement journal to ${aside}`)
    })
    yield* Effect.logError("settlement journal: lines that do not decode were set aside; reconcile them by hand").pipe(
      Effect.annotateLogs({ journal: path, rejected_file: aside, lines: loaded.rejected.length })
    )
  }
  if (!loaded.clean) yield* Effect.try({ try: rewrite, catch: failed(`cannot rewrite the settlement journal ${path}`) })
  else if (pending.size > 0) yield* Effect.try({ try: open, catch: failed(`cannot open the settlement journal ${path}`) })
  const nonEmpty = yield* Latch.make(pending.size > 0)
  yield* reportDepth(pending.size)
  if (pending.size > 0) {
    yield* Effect.logWarning("settlement journal holds settlements from before this start; they are written to the store").pipe(
      Effect.annotateLogs({ journal: path, depth: pending.size })
    )
  }
  let queue: Array<Queued> = []
  let scheduled: ReturnType<typeof setImmediate> | undefined
  /** Writes what was appended this turn, fsyncs once, then answers every append. */
  const commit = () => {
    scheduled = undefined
    const batch = queue
    queue = []
    if (batch.length === 0) return
    const fresh: Array<Entry> = []
    const seen = new Set<string>()
    for (const { entry } of batch) {
      const id = entry.settlement.requestId
      if (pending.has(id) || seen.has(id)) continue
      seen.add(id)
      fresh.push(entry)
    }
    let exit: Exit.Exit<void, JournalError> = Exit.void
    if (fresh.length > 0) {
      try {
        const f = open()
        try {
          const written = writeAll(f, fresh.map((e) => `${e.line}\n`).join(""))
          fsyncSync(f)
          size += written
        } catch (e) {
          // Cut back a partial write, so the next append starts on a line of its own.
          try {
            ftruncateSync(f, size)
          } catch {
            close()
          }
          throw e
        }
        for (const e of fresh) pending.set(e.settlement.requestId, e)
        nonEmpty.openUnsafe()
      } catch (e) {
        exit = Exit.fail(failed(`cannot write the settlement journal ${path}`)(e))
      }
    }
    for (const q of batch) q.resume(exit)
  }
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      if (scheduled !== undefined) clearImmediate(scheduled)
      commit()
      close()
    })
  )
  const depth = () => pending.size
  return {
    append: (s) =>
      Effect.andThen(
        Effect.callback<void, JournalError>((resume) => {
          queue.push({ entry: { settlement: s, line: encodeLine(s) }, resume })
          if (scheduled === undefined) scheduled = setImmediate(commit)
        }),
        Effect.suspend(() => reportDepth(depth()))
      ),
    pending: Effect.sync(() => [...pending.values()].map((e) => e.settlement)),
    remove: (ids) =>
      Effect.suspend(() => {
        let changed = false
        for (const id of ids) changed = pending.delete(id) || changed
        if (!changed) return Effect.void
        if (pending.size === 0) nonEmpty.closeUnsafe()
        return Effect.andThen(
          reportDepth(depth()),
          Effect.try({ try: rewrite, catch: failed(`cannot rewrite the settlement journal ${path}`) })
        )
      }),
    depth,
    awaitPending: nonEmpty.await,
    location: path
  } satisfies SettlementJournalShape
})

/** The journal at `path`. */
export const layer = (path: string): Layer.Layer<SettlementJournal, JournalError> => Layer.effect(SettlementJournal, make(path))

/**
 * Where the journal goes unless SETTLEMENT_JOURNAL_PATH says: beside the SQLite file
 * (`data/modelgate.db` -> `data/modelgate.settlements.journal`), else `./data/settlements.journal`.
 */
export const defaultPath = (sqliteFile?: string): string => {
  if (sqliteFile === undefined || sqliteFile === ":memory:") return join("data", "settlements.journal")
  const ext = extname(sqliteFile)
  const base = ext === "" ? sqliteFile : sqliteFile.slice(0, -ext.length)
  return `${base}.settlements.journal`
}

/** The journal at SETTLEMENT_JOURNAL_PATH, else at `fallback` (see `defaultPath`). */
export const layerConfig = (fallback: string = defaultPath()): Layer.Layer<SettlementJournal, JournalError> =>
  Layer.unwrap(
    Effect.gen(function*() {
      const configured = yield* Config.String("SETTLEMENT_JOURNAL_PATH").pipe(
        Config.withDefault(fallback),
        Effect.mapError(failed("invalid SETTLEMENT_JOURNAL_PATH"))
      )
      return layer(configured.trim() === "" ? fallback : configured)
    })
  )
