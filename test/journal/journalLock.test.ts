/**
 * One process per journal (services/journal/lock.ts): a journal whose lock names a live process
 * refuses to open, naming the path and SETTLEMENT_JOURNAL_PATH; a lock left by a process that is
 * gone (kill -9) is taken over and its settlements are still there; a lock from another host is
 * never taken over (only the operator can tell whether that gateway still runs).
 */
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Scope } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import * as JournalFile from "../../src/services/journal/file.js"

const dir = mkdtempSync(join(tmpdir(), "modelgate-lock-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let n = 0
const freshPath = () => {
  const sub = join(dir, `j${++n}`)
  mkdirSync(sub, { recursive: true })
  return join(sub, "settlements.journal")
}

/** Opens the journal at `path` and closes it again: the open's failure message, or undefined. */
const openFails = async (path: string): Promise<string | undefined> => {
  const scope = await Effect.runPromise(Scope.make())
  const exit = await Effect.runPromiseExit(Scope.provide(JournalFile.make(path), scope))
  await Effect.runPromise(Scope.close(scope, Exit.void))
  return Exit.isFailure(exit) ? String(exit.cause) : undefined
}

const lockOf = (path: string, owner: { pid: number; host: string }) => writeFileSync(`${path}.lock`, JSON.stringify(owner))

describe("the settlement journal's lock", () => {
  it("refuses a journal another live process holds, naming it and SETTLEMENT_JOURNAL_PATH", async () => {
    const path = freshPath()
    const other = spawn("sleep", ["30"])
    try {
      lockOf(path, { pid: other.pid!, host: hostname() })
      const failure = await openFails(path)
      expect(failure).toContain(path)
      expect(failure).toContain("SETTLEMENT_JOURNAL_PATH")
    } finally {
      other.kill("SIGKILL")
    }
  })

  it("takes over the lock of a process that is gone, and gives it back when closed", async () => {
    const path = freshPath()
    const gone = spawn("true")
    await new Promise((resolve) => gone.once("exit", resolve))
    lockOf(path, { pid: gone.pid!, host: hostname() })
    expect(await openFails(path)).toBeUndefined()
    expect(existsSync(`${path}.lock`)).toBe(false)
  })

  it("never takes over a lock from another host", async () => {
    const path = freshPath()
    lockOf(path, { pid: 1, host: `${hostname()}-elsewhere` })
    expect(await openFails(path)).toContain(path)
  })

  it("is held while the journal is open", async () => {
    const path = freshPath()
    const scope = await Effect.runPromise(Scope.make())
    await Effect.runPromise(Scope.provide(JournalFile.make(path), scope))
    expect(existsSync(`${path}.lock`)).toBe(true)
    await Effect.runPromise(Scope.close(scope, Exit.void))
    expect(existsSync(`${path}.lock`)).toBe(false)
  })
})
