/**
 * One process per settlement journal: the journal's owner holds `<path>.lock` (its pid and host)
 * while it runs. A journal's rewrite keeps only what its owner has pending, so a second process
 * appending to the same file would have its settlements deleted by the first one's replay: a second
 * process on the same path refuses to start instead, naming the path and the setting to change.
 *
 * A lock left by a process that is gone (`kill -9`, a crash) is taken over: on this host when its
 * pid no longer runs (or is this process's own, a container restarted with the same pid), never
 * when it names another host (a shared volume: only the operator can tell).
 */
import { hostname } from "node:os"
import { mkdirSync, openSync, readFileSync, unlinkSync, writeSync, closeSync } from "node:fs"
import { dirname } from "node:path"
import { Effect, type Scope } from "effect"
import { JournalError } from "./SettlementJournal.js"

interface Owner {
  readonly pid: number
  readonly host: string
}

const readOwner = (lock: string): Owner | undefined => {
  try {
    const parsed: unknown = JSON.parse(readFileSync(lock, "utf8"))
    if (typeof parsed !== "object" || parsed === null) return undefined
    const { host, pid } = parsed as Record<string, unknown>
    return typeof pid === "number" && typeof host === "string" ? { pid, host } : undefined
  } catch {
    return undefined
  }
}

const running = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    // EPERM: it runs, as another user.
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** Whether `owner`'s process is gone, so its lock may be taken over. */
const stale = (owner: Owner | undefined, self: Owner): boolean =>
  owner === undefined || (owner.host === self.host && (owner.pid === self.pid || !running(owner.pid)))

const create = (lock: string, self: Owner): boolean => {
  let fd: number
  try {
    fd = openSync(lock, "wx", 0o600)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return false
    throw e
  }
  try {
    writeSync(fd, JSON.stringify({ ...self, started: new Date().toISOString() }))
  } finally {
    closeSync(fd)
  }
  return true
}

const inUse = (path: string, lock: string, owner: Owner | undefined) =>
  new JournalError({
    message: `the settlement journal ${path} is in use by ${owner === undefined ? "another process" : `process ${owner.pid} on ${owner.host}`} ` +
      `(lock file ${lock}). Each gateway process needs a journal of its own: set SETTLEMENT_JOURNAL_PATH to another file for this one. ` +
      "If no gateway uses it any more, remove the lock file."
  })

/** Holds the lock on the journal at `path` for the Scope's life; fails when another process holds it. */
export const lockJournal = (path: string): Effect.Effect<void, JournalError, Scope.Scope> => {
  const lock = `${path}.lock`
  const self: Owner = { pid: process.pid, host: hostname() }
  const acquire = Effect.try({
    try: () => {
      mkdirSync(dirname(path), { recursive: true })
      if (create(lock, self)) return undefined
      const owner = readOwner(lock)
      if (!stale(owner, self)) return owner ?? null
      unlinkSync(lock)
      return create(lock, self) ? undefined : (readOwner(lock) ?? null)
    },
    catch: (cause) => new JournalError({ message: `cannot lock the settlement journal ${path} (${lock})`, cause })
  }).pipe(Effect.flatMap((held) => held === undefined ? Effect.void : Effect.fail(inUse(path, lock, held ?? undefined))))
  const release = Effect.sync(() => {
    const owner = readOwner(lock)
    if (owner !== undefined && owner.pid === self.pid && owner.host === self.host) {
      try {
        unlinkSync(lock)
      } catch {
        // Already gone: nothing to give back.
      }
    }
  })
  return Effect.acquireRelease(acquire, () => release)
}
