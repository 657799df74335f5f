/**
 * Constants and small helpers shared by the benchmark processes (orchestrator, fake upstream,
 * bare proxy, load generator). Nothing here starts anything.
 */
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"

/**
 * The user text of every benchmark request. Thirty short words make the simulator stream about
 * 20 events (22 Responses events, 20 Messages events), the size the performance targets speak of.
 */
export const PROMPT = "a b c d e f g h i j k l m n o p q r s t u v w x y z a b c d"

export const OPENAI_MODEL = "gpt-5.4"
export const ANTHROPIC_MODEL = "claude-sonnet-4-5"

/** A Responses request as a client sends it to the gateway (and, for passthrough, to the upstream). */
export const responsesBody = (model: string, stream: boolean): string =>
  JSON.stringify({ model, input: PROMPT, stream })

/** The Messages request a client would send to Anthropic directly (the translated path's "direct" baseline). */
export const messagesBody = (stream: boolean): string =>
  JSON.stringify({
    model: ANTHROPIC_MODEL,
    max_tokens: 1024,
    messages: [{ role: "user", content: PROMPT }],
    stream
  })

/** A positive number from the environment, or `fallback` when unset; anything else is an error. */
export const envNumber = (name: string, fallback: number): number => {
  const raw = process.env[name]
  if (raw === undefined || raw === "") return fallback
  const n = Number(raw)
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got '${raw}'`)
  return n
}

/** utime + stime of a process, in seconds (fields 14 and 15 of /proc/<pid>/stat, in clock ticks). */
export const cpuSeconds = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  // The command name (field 2) may contain spaces; everything after the last ')' is space separated.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  // After ')' the first field is field 3 (state), so field N is at index N - 3.
  const utime = Number(fields[14 - 3])
  const stime = Number(fields[15 - 3])
  return (utime + stime) / clockTicks()
}

let ticks: number | undefined
/** USER_HZ (`getconf CLK_TCK`), read once; 100 when getconf is missing. */
const clockTicks = (): number => {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100
    } catch {
      ticks = 100
    }
  }
  return ticks
}

/** Resident set size of a process in bytes (VmRSS of /proc/<pid>/status). */
export const rssBytes = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)
  return m === null ? Number.NaN : Number(m[1]) * 1024
}

/** Exits this (child) process when its parent goes away: the parent holds our stdin open. */
export const exitWithParent = (): void => {
  process.stdin.on("end", () => process.exit(0))
  process.stdin.on("error", () => process.exit(0))
  process.stdin.resume()
}

/** CPU seconds the whole machine has spent busy (all cores; first line of /proc/stat, minus idle and iowait). */
export const systemBusySeconds = (): number => {
  const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0] ?? ""
  const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number)
  return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) / clockTicks()
}
