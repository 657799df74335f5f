/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`): the hottest functions by self time, with
 * their inclusive ("total") time, and self time grouped by area (a package under node_modules, a
 * folder of src/, node internals, GC).
 *
 *   npx tsx bench/profileSummary.ts /tmp/prof/CPU.<...>.cpuprofile [top=25]
 */
import { readFileSync } from "node:fs"
import { pathToFileURL } from "node:url"

interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
  readonly columnNumber: number
}

interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}

interface CpuProfile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
  readonly startTime: number
  readonly endTime: number
}

export interface Row {
  readonly name: string
  readonly selfMs: number
  readonly totalMs: number
  /** Share of the profile's busy (non-idle) time. */
  readonly selfPct: number
  readonly totalPct: number
}

export interface Summary {
  readonly durationMs: number
  readonly busyMs: number
  readonly functions: ReadonlyArray<Row>
  readonly areas: ReadonlyArray<Row>
  /** The project's own files by inclusive time: what each file's code (and all it calls) costs. */
  readonly srcFiles: ReadonlyArray<Row>
}

const shortUrl = (url: string): string => {
  if (url === "") return ""
  const path = url.replace(/^file:\/\//, "")
  const nm = path.lastIndexOf("/node_modules/")
  if (nm >= 0) return path.slice(nm + "/node_modules/".length)
  const src = path.lastIndexOf("/src/")
  if (src >= 0) return path.slice(src + 1)
  return path
}

/** The area a frame belongs to: a package, a src/ folder, node internals, or a V8 pseudo-frame. */
const areaOf = (frame: CallFrame): string => {
  const url = frame.url
  if (url === "") return frame.functionName.startsWith("(") ? frame.functionName : "(native / builtins)"
  if (url.startsWith("node:")) return "node internals"
  const path = url.replace(/^file:\/\//, "")
  const nm = path.lastIndexOf("/node_modules/")
  if (nm >= 0) {
    const rest = path.slice(nm + "/node_modules/".length).split("/")
    const pkg = rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]!
    // effect's own modules are worth telling apart (core runtime vs Stream vs Schema ...).
    if (pkg === "effect") return `effect/${(rest[rest.length - 1] ?? "").replace(/\.(ts|js|mjs|cjs)$/, "")}`
    return pkg
  }
  const src = path.lastIndexOf("/src/")
  if (src >= 0) {
    const parts = path.slice(src + 1).split("/")
    return parts.length > 2 ? `${parts[0]}/${parts[1]}` : parts.join("/")
  }
  return path
}

/**
 * Function name and location. tsx strips whitespace from the code it compiles, so for src/ files
 * the line/column point into that compiled code, not the .ts source; the file is still right.
 */
const keyOf = (frame: CallFrame): string => {
  const name = frame.functionName === "" ? "(anonymous)" : frame.functionName
  const where = shortUrl(frame.url)
  return where === "" ? name : `${name}  ${where}:${frame.lineNumber + 1}:${frame.columnNumber + 1}`
}

const srcFileOf = (frame: CallFrame): string | undefined => {
  if (frame.url.includes("/node_modules/")) return undefined
  const src = frame.url.lastIndexOf("/src/")
  return src >= 0 ? frame.url.slice(src + 1) : undefined
}

const IDLE = new Set(["(idle)", "(program)"])

export const summarise = (profile: CpuProfile, top = 25): Summary => {
  const byId = new Map<number, ProfileNode>()
  const parent = new Map<number, number>()
  for (const node of profile.nodes) {
    byId.set(node.id, node)
    for (const child of node.children ?? []) parent.set(child, node.id)
  }
  // Sample i lasts until sample i + 1 (timeDeltas[i + 1], in µs).
  const selfUs = new Map<number, number>()
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i + 1] ?? 0
    const id = profile.samples[i]!
    selfUs.set(id, (selfUs.get(id) ?? 0) + dt)
  }

  const fnSelf = new Map<string, number>()
  const fnTotal = new Map<string, number>()
  const areaSelf = new Map<string, number>()
  const srcTotal = new Map<string, number>()
  let busyUs = 0
  let allUs = 0
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!
    allUs += us
    if (IDLE.has(node.callFrame.functionName) && node.callFrame.url === "") continue
    busyUs += us
    const key = keyOf(node.callFrame)
    fnSelf.set(key, (fnSelf.get(key) ?? 0) + us)
    const area = areaOf(node.callFrame)
    areaSelf.set(area, (areaSelf.get(area) ?? 0) + us)
    // Inclusive time: once per distinct function on the stack (recursion is not double counted).
    const seen = new Set<string>()
    const seenFiles = new Set<string>()
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)!.callFrame
      const k = keyOf(frame)
      if (!seen.has(k)) {
        seen.add(k)
        fnTotal.set(k, (fnTotal.get(k) ?? 0) + us)
      }
      const file = srcFileOf(frame)
      if (file !== undefined && !seenFiles.has(file)) {
        seenFiles.add(file)
        srcTotal.set(file, (srcTotal.get(file) ?? 0) + us)
      }
    }
  }

  const rows = (self: Map<string, number>, total: Map<string, number> | undefined): Array<Row> =>
    [...self.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => {
        const t = total?.get(name) ?? us
        return { name, selfMs: us / 1000, totalMs: t / 1000, selfPct: (100 * us) / busyUs, totalPct: (100 * t) / busyUs }
      })

  return {
    durationMs: allUs / 1000,
    busyMs: busyUs / 1000,
    functions: rows(fnSelf, fnTotal),
    areas: rows(areaSelf, undefined),
    srcFiles: rows(srcTotal, undefined)
  }
}

export const formatSummary = (s: Summary): string => {
  const lines: Array<string> = []
  lines.push(`profile: ${s.durationMs.toFixed(0)} ms sampled, ${s.busyMs.toFixed(0)} ms busy (not idle)`)
  lines.push("")
  lines.push("hottest functions by self time (% of busy time)")
  lines.push("   self ms   self%  total%  function  location")
  for (const r of s.functions) {
    lines.push(`${r.selfMs.toFixed(0).padStart(10)}  ${r.selfPct.toFixed(1).padStart(5)}%  ${r.totalPct.toFixed(1).padStart(5)}%  ${r.name}`)
  }
  lines.push("")
  lines.push("self time by area")
  for (const r of s.areas) lines.push(`${r.selfMs.toFixed(0).padStart(10)}  ${r.selfPct.toFixed(1).padStart(5)}%  ${r.name}`)
  lines.push("")
  lines.push("src/ files by inclusive time (the file's code and everything it calls, start-up included)")
  for (const r of s.srcFiles) lines.push(`${r.selfMs.toFixed(0).padStart(10)}  ${r.selfPct.toFixed(1).padStart(5)}%  ${r.name}`)
  return lines.join("\n")
}

/** A sampling heap profile (inspector `HeapProfiler.stopSampling`): a tree of frames with sampled bytes. */
export interface HeapProfileNode {
  readonly callFrame: CallFrame
  readonly selfSize: number
  readonly children: ReadonlyArray<HeapProfileNode>
}

export interface AllocationSummary {
  readonly totalBytes: number
  readonly requests: number
  /** Per row: `selfMs` holds KB per request (rows are shared with the CPU summary). */
  readonly functions: ReadonlyArray<Row>
  readonly areas: ReadonlyArray<Row>
}

/** Where the bytes were allocated, per request: by function and by area. */
export const summariseAllocations = (head: HeapProfileNode, requests: number, top = 25): AllocationSummary => {
  const fn = new Map<string, number>()
  const area = new Map<string, number>()
  let total = 0
  const stack: Array<HeapProfileNode> = [head]
  while (stack.length > 0) {
    const node = stack.pop()!
    if (node.selfSize > 0) {
      const k = keyOf(node.callFrame)
      fn.set(k, (fn.get(k) ?? 0) + node.selfSize)
      const a = areaOf(node.callFrame)
      area.set(a, (area.get(a) ?? 0) + node.selfSize)
      total += node.selfSize
    }
    stack.push(...node.children)
  }
  const rows = (m: Map<string, number>): Array<Row> =>
    [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, top).map(([name, bytes]) => ({
      name,
      selfMs: bytes / 1024 / Math.max(1, requests),
      totalMs: bytes / 1024 / Math.max(1, requests),
      selfPct: (100 * bytes) / total,
      totalPct: (100 * bytes) / total
    }))
  return { totalBytes: total, requests, functions: rows(fn), areas: rows(area) }
}

export const formatAllocations = (s: AllocationSummary, what = "garbage included"): string => {
  const lines: Array<string> = []
  lines.push(
    `allocations: ${(s.totalBytes / 1024 / 1024).toFixed(0)} MB sampled over ${s.requests} requests = ` +
      `${(s.totalBytes / 1024 / Math.max(1, s.requests)).toFixed(0)} KB per request (${what})`
  )
  lines.push("")
  lines.push("   KB/req  share  allocating function  location")
  for (const r of s.functions) lines.push(`${r.selfMs.toFixed(1).padStart(9)}  ${r.selfPct.toFixed(1).padStart(4)}%  ${r.name}`)
  lines.push("")
  lines.push("by area")
  for (const r of s.areas) lines.push(`${r.selfMs.toFixed(1).padStart(9)}  ${r.selfPct.toFixed(1).padStart(4)}%  ${r.name}`)
  return lines.join("\n")
}

const isMain = import.meta.url === pathToFileURL(process.argv[1] ?? "").href
if (isMain) {
  const file = process.argv[2]
  if (file === undefined) {
    process.stderr.write("usage: tsx bench/profileSummary.ts <file.cpuprofile> [top]\n")
    process.exit(2)
  }
  const top = Number(process.argv[3] ?? "25")
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile
  process.stdout.write(`${formatSummary(summarise(profile, top))}\n`)
}
