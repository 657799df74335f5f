/**
 * `npm run bench:cli`: how long `npx modelgate` takes, as a figure (never a test assertion): wall
 * time of `--help` and of `users list` on a SQLite database, each run several times in a fresh
 * process on the node in node_modules, from the bundle bin/modelgate.js runs (.build/cli.mjs, built
 * first if stale) and, for comparison, through tsx from src/ (how the CLI ran before it had a bundle).
 *
 *   npm run bench:cli
 *   BENCH_CLI_RUNS=20 npm run bench:cli
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const ROOT = join(import.meta.dirname, "..")
const NODE = join(ROOT, "node_modules", ".bin", "node")
const TSX = join(ROOT, "node_modules", "tsx", "dist", "cli.mjs")
const RUNS = Number(process.env["BENCH_CLI_RUNS"] ?? "7")

const dir = mkdtempSync(join(tmpdir(), "modelgate-bench-cli-"))
const env = { ...process.env, DATABASE_URL: `sqlite:${join(dir, "bench.db")}`, NO_COLOR: "1" }

const timeOnce = (args: ReadonlyArray<string>): number => {
  const started = performance.now()
  const ran = spawnSync(NODE, args, { cwd: dir, env, stdio: ["ignore", "ignore", "pipe"] })
  const ms = performance.now() - started
  if (ran.status !== 0) throw new Error(`${args.join(" ")} exited ${ran.status}: ${ran.stderr.toString()}`)
  return ms
}

const median = (xs: ReadonlyArray<number>) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

const measure = (label: string, args: ReadonlyArray<string>) => {
  timeOnce(args) // warm: builds the bundle if stale, fills tsx's cache, creates the database
  const times = Array.from({ length: RUNS }, () => timeOnce(args))
  const f = (n: number) => `${Math.round(n)}`
  console.log(`${label.padEnd(44)} median ${f(median(times)).padStart(5)} ms   (min ${f(Math.min(...times))}, max ${f(Math.max(...times))}, ${RUNS} runs)`)
}

try {
  const bin = join(ROOT, "bin", "modelgate.js")
  const source = join(ROOT, "src", "cli", "main.ts")
  measure("modelgate --help (bundle)", [bin, "--help"])
  measure("modelgate users list (bundle, SQLite)", [bin, "users", "list"])
  measure("tsx src/cli/main.ts --help (no bundle)", [TSX, source, "--help"])
  measure("tsx src/cli/main.ts users list (no bundle)", [TSX, source, "users", "list"])
} finally {
  rmSync(dir, { recursive: true, force: true })
}
