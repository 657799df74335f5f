/**
 * `npm run bench:count` (and a section of `npm run bench`): how long the o200k token count (src/endpoints/kit/tokenEstimate.ts:
 * `count_tokens` on an OpenAI group, the usage of a stream cut short) holds the event loop, and the
 * CPU it takes, on hostile text, this checkout's module against an older one. Method and figures:
 * docs/performance.md ("Token counts").
 *
 *   npm run bench:count                       before = the newest commit whose module does not count in slices
 *   npm run bench:count -- --before <ref>     another before
 *   BENCH_COUNT_PARALLEL=4 BENCH_COUNT_CHARS=4000000 npm run bench:count
 *
 * Each module runs in its own process (the tokenizer's merge cache is process-wide), loaded once and
 * warmed up; then, for each kind of text, BENCH_COUNT_PARALLEL counts of BENCH_COUNT_CHARS
 * characters start at once. A setImmediate chain runs beside them: the longest gap between two of
 * its turns is the longest the event loop was held (nothing else could run: no socket read, no
 * /health), read as the process's CPU time between the two turns (what a quiet machine would take;
 * the 99th percentile over the turns, and the longest, which is a garbage collection more often
 * than not) and as wall time (which, on a busy machine, also counts the time the process waited
 * for a core).
 * CPU is the process's (user + system) over the counts.
 */
import { execFileSync, spawn } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { f, fInt, quantile, table } from "./report.js"
import { envNumber, exitWithParent } from "./shared.js"

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const MODULE = "src/endpoints/kit/tokenEstimate.ts"
const PARALLEL = Math.round(envNumber("BENCH_COUNT_PARALLEL", 4))
const CHARS = Math.round(envNumber("BENCH_COUNT_CHARS", 4_000_000))

/** Characters in a fixed pseudo-random order from `alphabet(i)`: text the tokenizer has never seen. */
const scrambled = (chars: number, seed: number, char: (r: number) => string): string => {
  let s = seed
  const out = new Array<string>(chars)
  for (let i = 0; i < chars; i++) {
    s = (s * 1103515245 + 12345) % 2147483648
    out[i] = char(s)
  }
  return out.join("")
}

const PROSE = "The gateway counts the tokens of a request before it answers; ordinary prose like this is cheap. "

/** The kinds of text, each made `chars` long (seeded: every count of a kind gets its own text). */
const WORKLOADS: ReadonlyArray<{ readonly name: string; readonly make: (chars: number, seed: number) => string }> = [
  { name: "prose", make: (chars) => PROSE.repeat(Math.ceil(chars / PROSE.length)).slice(0, chars) },
  { name: "'s run", make: (chars) => "'s".repeat(chars / 2) },
  { name: "one-char run", make: (chars) => "x".repeat(chars) },
  { name: "random a-z", make: (chars, seed) => scrambled(chars, seed, (r) => String.fromCharCode(97 + (r % 26))) },
  { name: "random CJK", make: (chars, seed) => scrambled(chars, seed, (r) => String.fromCharCode(0x4e00 + (r % 20_000))) }
]

interface Figures {
  readonly workload: string
  readonly holdMs: number
  readonly holdCpuMs: number
  readonly holdCpuP99Ms: number
  readonly cpuSeconds: number
  readonly wallSeconds: number
  readonly tokens: number
}

type CountTokens = (texts: ReadonlyArray<string>) => import("effect").Effect.Effect<number>

/** In the child: every workload against the module at `path`, one JSON line each. */
const runChild = async (path: string): Promise<void> => {
  const { Effect } = await import("effect")
  const { countTokens } = (await import(pathToFileURL(path).href)) as { countTokens: CountTokens }
  await Effect.runPromise(countTokens(["warm up the tokenizer"]))
  for (const workload of WORKLOADS) {
    const texts = Array.from({ length: PARALLEL }, (_, i) => workload.make(CHARS, i + 1))
    let longest = 0
    const holdsCpu: Array<number> = []
    let last = performance.now()
    let lastCpu = process.cpuUsage()
    let running = true
    const turn = () => {
      const now = performance.now()
      const cpu = process.cpuUsage(lastCpu)
      longest = Math.max(longest, now - last)
      holdsCpu.push((cpu.user + cpu.system) / 1000)
      last = now
      lastCpu = process.cpuUsage()
      if (running) setImmediate(turn)
    }
    const cpu = process.cpuUsage()
    const started = performance.now()
    setImmediate(turn)
    const tokens = await Effect.runPromise(Effect.all(texts.map((t) => countTokens([t])), { concurrency: "unbounded" }))
    running = false
    const sinceTurn = process.cpuUsage(lastCpu)
    holdsCpu.push((sinceTurn.user + sinceTurn.system) / 1000)
    const used = process.cpuUsage(cpu)
    const figures: Figures = {
      workload: workload.name,
      holdMs: Math.max(longest, performance.now() - last),
      holdCpuMs: Math.max(...holdsCpu),
      holdCpuP99Ms: quantile(holdsCpu, 0.99),
      cpuSeconds: (used.user + used.system) / 1e6,
      wallSeconds: (performance.now() - started) / 1000,
      tokens: tokens[0] ?? 0
    }
    process.stdout.write(`${JSON.stringify(figures)}\n`)
  }
}

/** The newest commit whose module does not yet count in slices (the one before this design), and its path then (the module moved). */
const defaultBefore = (): { readonly ref: string; readonly path: string } => {
  const log = execFileSync("git", ["log", "--follow", "--format=%H", "--name-only", "--", MODULE], { cwd: ROOT, encoding: "utf8" })
  const lines = log.split("\n").filter(Boolean)
  for (let i = 0; i + 1 < lines.length; i += 2) {
    const [commit, path] = [lines[i]!, lines[i + 1]!]
    const text = execFileSync("git", ["show", `${commit}:${path}`], { cwd: ROOT, encoding: "utf8" })
    if (!text.includes("SLICE_CHARS")) return { ref: commit, path }
  }
  throw new Error(`no commit of ${MODULE} without SLICE_CHARS`)
}

/** The module as it was at `ref`, written where its imports resolve (this checkout's node_modules). */
const moduleAt = (ref: string, at: string = MODULE): { readonly path: string; readonly commit: string } => {
  const commit = execFileSync("git", ["rev-parse", "--short", ref], { cwd: ROOT, encoding: "utf8" }).trim()
  const dir = join(ROOT, "node_modules", ".cache", "modelgate-bench")
  mkdirSync(dir, { recursive: true })
  const path = join(dir, `tokenEstimate-${commit}.ts`)
  writeFileSync(path, execFileSync("git", ["show", `${ref}:${at}`], { cwd: ROOT, encoding: "utf8" }))
  return { path, commit }
}

const measure = (path: string): Promise<Array<Figures>> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, join(ROOT, "bench", "countTokens.ts"), "--child", path], {
      cwd: ROOT,
      // Our stdin held open: the child exits when we do (exitWithParent).
      stdio: ["pipe", "pipe", "inherit"]
    })
    let out = ""
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")))
    child.on("error", reject)
    child.on("exit", (code) => {
      if (code !== 0) reject(new Error(`count bench child for ${path} exited with ${code}`))
      else resolve(out.split("\n").filter(Boolean).map((line) => JSON.parse(line) as Figures))
    })
  })

export interface TokenCountBench {
  readonly before: string
  readonly figures: ReadonlyArray<Figures & { readonly module: string }>
  /** The table, with a line saying what was measured. */
  readonly text: string
}

/** Both modules measured, each in its own process; `beforeRef` undefined: defaultBefore(). */
export const measureTokenCounts = async (beforeRef?: string): Promise<TokenCountBench> => {
  const found = beforeRef === undefined ? defaultBefore() : { ref: beforeRef, path: MODULE }
  const before = moduleAt(found.ref, found.path)
  const figures: Array<Figures & { readonly module: string }> = []
  for (const [label, path] of [[`before (${before.commit})`, before.path], ["after", join(ROOT, MODULE)]] as const) {
    for (const r of await measure(path)) figures.push({ ...r, module: label })
  }
  const order = (name: string) => WORKLOADS.findIndex((w) => w.name === name)
  const rows = [...figures].sort((a, b) => order(a.workload) - order(b.workload)).map((r) => [
    r.workload,
    r.module,
    f(r.holdCpuP99Ms, 1),
    f(r.holdCpuMs, 1),
    f(r.holdMs, 1),
    f(r.cpuSeconds, 2),
    f(r.wallSeconds, 2),
    fInt(r.tokens)
  ])
  const text = [
    `token counts: ${PARALLEL} at once of ${fInt(CHARS)} characters each, before = ${before.commit} (${MODULE}), after = this checkout`,
    table(["text", "module", "hold p99, CPU ms", "longest, CPU ms", "longest, wall ms", "CPU s", "wall s", "tokens (one count)"], rows, 2)
  ].join("\n")
  return { before: before.commit, figures, text }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const child = process.argv.indexOf("--child")
  if (child >= 0) {
    exitWithParent()
    await runChild(process.argv[child + 1]!)
    process.exit(0)
  }
  const at = process.argv.indexOf("--before")
  console.log((await measureTokenCounts(at >= 0 ? process.argv[at + 1] : undefined)).text)
}
