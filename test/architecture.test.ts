/**
 * The house's shape, read from the imports of src/ (type-only imports included, as the compiler
 * sees them): no module imports itself through others, each area imports only the areas below
 * it, and a service's contract (its tag, shape and types) imports none of the implementations.
 */
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve, sep } from "node:path"
import ts from "typescript"
import { describe, expect, it } from "vitest"

const SRC = resolve(import.meta.dirname, "../src")

const sourceFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    return entry.isDirectory() ? sourceFiles(path) : /\.(ts|mjs)$/.test(entry.name) ? [path] : []
  })

/** The src/ modules a file imports (relative specifiers resolved, `.js` read as the `.ts` beside it). */
const importsOf = (file: string, known: ReadonlySet<string>): Array<string> =>
  ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles
    .map((imported) => imported.fileName)
    .filter((spec) => spec.startsWith("."))
    .map((spec) => {
      const target = resolve(dirname(file), spec)
      const asTs = target.replace(/\.js$/, ".ts")
      return known.has(asTs) ? asTs : target
    })
    .filter((target) => known.has(target))

const files = sourceFiles(SRC)
const graph = new Map(files.map((file) => [file, importsOf(file, new Set(files))]))
const name = (file: string) => relative(SRC, file).split(sep).join("/")

/** Strongly connected components of more than one module (Tarjan). */
const cycles = (): Array<Array<string>> => {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<Array<string>> = []
  const visit = (v: string) => {
    index.set(v, next)
    low.set(v, next++)
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const component: Array<string> = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(name(w))
      } while (w !== v)
      if (component.length > 1) found.push(component.sort())
    }
  }
  for (const v of graph.keys()) if (!index.has(v)) visit(v)
  return found
}

/** What each area may import besides itself; the files at the root (wiring, entry points) may import anything. */
const ALLOWED: Readonly<Record<string, ReadonlyArray<string>>> = {
  domain: [],
  translate: ["domain"],
  lib: [],
  config: ["domain"],
  observability: ["domain", "config"],
  services: ["domain", "config", "lib", "observability"],
  store: ["domain", "config", "lib", "observability", "services"],
  core: ["domain", "config", "lib", "observability", "services"],
  endpoints: ["domain", "translate", "config", "lib", "observability", "services", "core"],
  server: ["domain", "config", "lib", "observability", "services", "core", "endpoints", "ui"],
  ui: [],
  admin: ["domain", "config", "lib", "observability", "services", "store", "ui"],
  cli: ["domain", "config", "lib", "observability", "services", "store", "admin"]
}

const areaOf = (file: string): string => {
  const parts = name(file).split("/")
  return parts.length > 1 ? parts[0]! : "(root)"
}

describe("the import graph of src/", () => {
  it("reads every module (the checks below are about something)", () => {
    expect(files.length).toBeGreaterThan(100)
    expect([...graph.values()].flat().length).toBeGreaterThan(300)
  })

  it("has no cycles", () => {
    expect(cycles()).toEqual([])
  })

  it("goes one way: each area imports only the areas below it", () => {
    const wrong: Array<string> = []
    for (const [file, imports] of graph) {
      const from = areaOf(file)
      const allowed = ALLOWED[from]
      if (allowed === undefined) continue // the root: layers.ts, main.ts, index.ts
      for (const target of imports) {
        const to = areaOf(target)
        if (to !== from && !allowed.includes(to)) wrong.push(`${name(file)} -> ${name(target)}`)
      }
    }
    expect(wrong).toEqual([])
  })

  it("keeps the doors apart: a door imports no other door, the kit imports no door", () => {
    // A door is endpoints/<door>/ (responses, with its WebSocket; messages) or endpoints/<door>.ts
    // (models, usage, ops); what two doors share lives in endpoints/kit/.
    const doorOf = (file: string): string | undefined => {
      const match = /^endpoints\/([^/]+?)(?:\.ts|\/.*)$/.exec(name(file))
      return match === null ? undefined : match[1]
    }
    const wrong: Array<string> = []
    for (const [file, imports] of graph) {
      const from = doorOf(file)
      if (from === undefined) continue
      for (const target of imports) {
        const to = doorOf(target)
        if (to !== undefined && to !== from && to !== "kit") wrong.push(`${name(file)} -> ${name(target)}`)
      }
    }
    expect(wrong).toEqual([])
  })

  it("lets the core and the endpoints reach a service through its contract only", () => {
    // services/<name>/<Name>.ts is the contract (tag, shape, types, test layer); anything else under
    // services/ is an implementation's part. Pure rules the core or a door needs live in domain/,
    // shared metrics in observability/.
    const wrong: Array<string> = []
    for (const [file, imports] of graph) {
      if (!/^(core|endpoints)\//.test(name(file))) continue
      for (const target of imports) {
        const to = name(target)
        if (to.startsWith("services/") && !/^services\/[^/]+\/[A-Z][^/]*\.ts$/.test(to)) wrong.push(`${name(file)} -> ${to}`)
      }
    }
    expect(wrong).toEqual([])
  })

  it("keeps each service's contract apart from its implementations", () => {
    // A contract is services/<name>/<Name>.ts: its tag, shape, types and test layer.
    const contracts = files.filter((file) => /^services\/[^/]+\/[A-Z][^/]*\.ts$/.test(name(file)))
    expect(contracts.map(name).sort()).toEqual([
      "services/journal/SettlementJournal.ts",
      "services/keyRepo/KeyRepo.ts",
      "services/lifecycle/Lifecycle.ts",
      "services/moderation/Moderation.ts",
      "services/quota/Quota.ts",
      "services/rateLimits/RateLimits.ts",
      "services/readiness/Readiness.ts",
      "services/scheduler/Scheduler.ts",
      "services/scheduler/UpstreamAccounts.ts",
      "services/upstream/Upstream.ts"
    ])
    const reachingImplementations = contracts.flatMap((contract) =>
      (graph.get(contract) ?? [])
        .filter((target) => /^(services|store)\//.test(name(target)) && !/^services\/scheduler\/store\.ts$/.test(name(target)))
        .map((target) => `${name(contract)} -> ${name(target)}`)
    )
    expect(reachingImplementations).toEqual([])
  })
})

describe("docs/architecture.md", () => {
  it("names only src/ paths that exist", () => {
    const doc = readFileSync(resolve(SRC, "../docs/architecture.md"), "utf8")
    const named = [...new Set([...doc.matchAll(/`(src\/[A-Za-z0-9_./-]+)`/g)].map((m) => m[1]!.replace(/\/$/, "")))]
    expect(named.length).toBeGreaterThan(20)
    const missing = named.filter((path) => {
      try {
        readdirSync(resolve(SRC, "..", path))
        return false
      } catch {
        try {
          readFileSync(resolve(SRC, "..", path))
          return false
        } catch {
          return true
        }
      }
    })
    expect(missing).toEqual([])
  })
})
