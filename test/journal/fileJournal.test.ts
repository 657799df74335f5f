/**
 * The settlement journal's file (services/journal/file.ts): what was appended survives the process
 * (a new journal on the same path holds it), what the store has is forgotten, a line torn by a
 * crash or edited into nonsense is set aside rather than lost or guessed at, a journal that
 * never had anything leaves no file, and what it writes only its owner can read.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { Effect, Exit, Result, Scope } from "effect"
import fc from "fast-check"
import { afterAll, describe, expect, it } from "vitest"
import * as JournalFile from "../../src/services/journal/file.js"
import { decodeLine, encodeLine } from "../../src/services/journal/record.js"
import type { Settlement } from "../../src/domain/settlement.js"
import type { SettlementJournalShape } from "../../src/services/journal/SettlementJournal.js"
import { testPrincipal } from "../support/principal.js"

const dir = mkdtempSync(join(tmpdir(), "modelgate-journal-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const freshPath = () => join(dir, `j${++files}`, "settlements.journal")

const settlement = (n: number, overrides: Partial<Settlement> = {}): Settlement => ({
  requestId: `req-${n}`,
  principal: testPrincipal({ key: `key-${n % 3}`, user: `user-${n % 2}` }),
  model: "gpt-5.4",
  usage: { inputTokens: 10 + n, outputTokens: 20 + n, cacheReadTokens: n % 5, cacheCreationTokens: 0, reasoningTokens: n % 7 },
  at: new Date(1_750_000_000_000 + n * 1000),
  ...overrides
})

/** A journal open on `path` for `use`, closed after it (as a gateway's stop closes it). */
const withJournal = async <A>(path: string, use: (j: SettlementJournalShape) => Effect.Effect<A, unknown>): Promise<A> => {
  const scope = await Effect.runPromise(Scope.make())
  try {
    const journal = await Effect.runPromise(Scope.provide(JournalFile.make(path), scope))
    return await Effect.runPromise(use(journal))
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

const pendingIds = (path: string) =>
  withJournal(path, (j) => Effect.map(j.pending, (ps) => ps.map((s) => s.requestId)))

describe("a journal line", () => {
  it("gives back the settlement it was made from, principal and all", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000 }),
        fc.option(fc.boolean(), { nil: undefined }),
        fc.option(fc.integer({ min: 1, max: 1e9 }), { nil: undefined }),
        fc.option(fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }), { nil: undefined }),
        fc.constantFrom<"balance" | "subscription">("balance", "subscription"),
        fc.option(fc.string(), { nil: undefined }),
        (n, estimated, quotaMicros, expiresAt, billing, account) => {
          const base = testPrincipal({ billing, quotaMicros })
          const s = settlement(n, {
            principal: {
              ...base,
              key: { ...base.key, expiresAt, rpmLimit: n },
              user: { ...base.user, disabled: n % 2 === 0 },
              group: { ...base.group, models: n % 2 === 0 ? ["a", "b"] : undefined, rateMultiplier: 1.5, websocket: false }
            },
            ...(estimated === undefined ? {} : { estimated }),
            ...(account === undefined ? {} : { account })
          })
          const back = decodeLine(encodeLine(s))
          expect(Result.isSuccess(back) ? back.success : back.failure).toEqual(s)
        }
      ),
      { numRuns: 200 }
    )
  })

  it("keeps the provider tool calls of its usage: a replayed settlement bills them as the live one would have", () => {
    const base = settlement(3)
    const s = settlement(3, { usage: { ...base.usage, toolCalls: { web_search: 2, code_execution: 1 } } })
    const back = decodeLine(encodeLine(s))
    expect(Result.isSuccess(back) ? back.success.usage : back.failure).toEqual(s.usage)
  })

  it("that is torn or not a settlement is refused, with a reason", () => {
    const line = encodeLine(settlement(1))
    expect(Result.isFailure(decodeLine(line.slice(0, line.length - 5)))).toBe(true)
    expect(Result.isFailure(decodeLine(JSON.stringify({ v: 1, requestId: "x" })))).toBe(true)
    expect(Result.isFailure(decodeLine(JSON.stringify({ ...JSON.parse(line), v: 2 })))).toBe(true)
  })
})

describe("the journal file", () => {
  it("keeps what was appended across a restart, forgets what the store has, and goes when empty", async () => {
    const path = freshPath()
    await withJournal(path, (j) =>
      Effect.gen(function*() {
        expect(j.depth()).toBe(0)
        yield* Effect.all([1, 2, 3].map((n) => j.append(settlement(n))), { concurrency: "unbounded" })
        // The same request again (a retried settle) is one entry.
        yield* j.append(settlement(2))
        expect(j.depth()).toBe(3)
      }))
    expect(readFileSync(path, "utf8").trim().split("\n")).toHaveLength(3)

    const reopened = await withJournal(path, (j) =>
      Effect.gen(function*() {
        const pending = yield* j.pending
        yield* j.remove(["req-2"])
        return pending
      }))
    expect(reopened).toEqual([settlement(1), settlement(2), settlement(3)])
    expect(await pendingIds(path)).toEqual(["req-1", "req-3"])

    await withJournal(path, (j) => j.remove(["req-1", "req-3", "req-unknown"]))
    expect(existsSync(path)).toBe(false)
  })

  it("leaves no file when nothing was ever appended", async () => {
    const path = freshPath()
    await withJournal(path, (j) => Effect.sync(() => expect(j.depth()).toBe(0)))
    expect(existsSync(path)).toBe(false)
  })

  it("sets aside a torn last line and a line that is not a settlement, keeps the rest, and appends on a line of its own", async () => {
    const path = freshPath()
    await withJournal(path, (j) => j.append(settlement(1)))
    const good = readFileSync(path, "utf8")
    const torn = encodeLine(settlement(9)).slice(0, 40)
    writeFileSync(path, `${good}{"not":"a settlement"}\n${encodeLine(settlement(2))}\n${torn}`)

    const pending = await withJournal(path, (j) =>
      Effect.gen(function*() {
        yield* j.append(settlement(3))
        return (yield* j.pending).map((s) => s.requestId)
      }))
    expect(pending).toEqual(["req-1", "req-2", "req-3"])
    expect(readFileSync(`${path}.rejected`, "utf8")).toBe(`{"not":"a settlement"}\n${torn}\n`)
    expect(await pendingIds(path)).toEqual(["req-1", "req-2", "req-3"])
  })

  it("is readable by its owner only (0600), as is its .rejected file, under the usual umask (022); one found wider is narrowed", async () => {
    const modeOf = (p: string) => statSync(p).mode & 0o777
    const umask = process.umask(0o022)
    try {
      const path = freshPath()
      await withJournal(path, (j) => j.append(settlement(1)))
      expect(modeOf(path)).toBe(0o600)
      // Rewritten (the store took some): still the owner's only.
      await withJournal(path, (j) => Effect.andThen(j.append(settlement(2)), j.remove(["req-1"])))
      expect(modeOf(path)).toBe(0o600)

      // A journal with a line that does not decode, made world-readable by hand.
      writeFileSync(path, `${readFileSync(path, "utf8")}{"not":"a settlement"}\n`)
      chmodSync(path, 0o644)
      await withJournal(path, (j) => j.append(settlement(3)))
      expect(modeOf(`${path}.rejected`)).toBe(0o600)
      expect(modeOf(path)).toBe(0o600)

      // Wider, with nothing to set aside: narrowed at the first append.
      const other = freshPath()
      mkdirSync(dirname(other), { recursive: true })
      writeFileSync(other, `${encodeLine(settlement(4))}\n`, { mode: 0o644 })
      await withJournal(other, (j) => j.append(settlement(5)))
      expect(modeOf(other)).toBe(0o600)
    } finally {
      process.umask(umask)
    }
  })

  it("holds, after any run of appends, removals and restarts, exactly what was appended and not removed, oldest first", async () => {
    type Op = { readonly _tag: "append"; readonly n: number } | { readonly _tag: "remove"; readonly ns: ReadonlyArray<number> } | {
      readonly _tag: "restart"
    }
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ _tag: fc.constant("append" as const), n: fc.integer({ min: 0, max: 12 }) }),
      fc.record({ _tag: fc.constant("remove" as const), ns: fc.array(fc.integer({ min: 0, max: 12 }), { maxLength: 4 }) }),
      fc.constant({ _tag: "restart" as const })
    )
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 25 }), async (ops) => {
        const path = freshPath()
        const model: Array<string> = []
        let scope = await Effect.runPromise(Scope.make())
        let journal = await Effect.runPromise(Scope.provide(JournalFile.make(path), scope))
        try {
          for (const o of ops) {
            if (o._tag === "append") {
              await Effect.runPromise(journal.append(settlement(o.n)))
              if (!model.includes(`req-${o.n}`)) model.push(`req-${o.n}`)
            } else if (o._tag === "remove") {
              await Effect.runPromise(journal.remove(o.ns.map((n) => `req-${n}`)))
              for (const n of o.ns) {
                const at = model.indexOf(`req-${n}`)
                if (at >= 0) model.splice(at, 1)
              }
            } else {
              await Effect.runPromise(Scope.close(scope, Exit.void))
              scope = await Effect.runPromise(Scope.make())
              journal = await Effect.runPromise(Scope.provide(JournalFile.make(path), scope))
            }
            expect(journal.depth()).toBe(model.length)
          }
        } finally {
          await Effect.runPromise(Scope.close(scope, Exit.void))
        }
        expect(await pendingIds(path)).toEqual(model)
        expect(existsSync(path)).toBe(model.length > 0)
      }),
      { numRuns: 40 }
    )
  })
})

describe("the journal's default place", () => {
  it("is beside the SQLite file, else ./data", () => {
    expect(JournalFile.defaultPath("./data/modelgate.db")).toBe("./data/modelgate.settlements.journal")
    expect(JournalFile.defaultPath("/var/lib/mg/store")).toBe("/var/lib/mg/store.settlements.journal")
    expect(JournalFile.defaultPath(undefined)).toBe(join("data", "settlements.journal"))
    expect(JournalFile.defaultPath(":memory:")).toBe(join("data", "settlements.journal"))
  })
})
