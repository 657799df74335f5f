/**
 * The process's own figures on /metrics, under the names prom-client's default metrics use (so the
 * usual Node.js dashboards and alerts read them as they are): CPU time, resident memory, the V8
 * heap, the event loop's delay, open file descriptors (Linux). Read when /metrics is scraped, as
 * Prometheus text appended to the Effect metrics': nothing runs on the request path. The event
 * loop's delay is sampled by Node itself (perf_hooks.monitorEventLoopDelay, every 10 ms as
 * prom-client does) and its histogram starts afresh at each scrape, so its figures cover the time
 * since the previous one.
 */
import { readdirSync, readFileSync } from "node:fs"
import { type ELDHistogram, monitorEventLoopDelay } from "node:perf_hooks"
import { Effect, type Scope } from "effect"

const NANOS_PER_SECOND = 1e9

/** The event loop's delay, sampled while the scope that started it is open. */
export interface EventLoopMonitor {
  readonly histogram: ELDHistogram
}

/** Samples the event loop's delay until the scope closes (the router's: as long as /metrics is served). */
export const monitorEventLoop: Effect.Effect<EventLoopMonitor, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => {
    const histogram = monitorEventLoopDelay({ resolution: 10 })
    histogram.enable()
    return { histogram }
  }),
  ({ histogram }) => Effect.sync(() => histogram.disable())
)

const family = (name: string, type: "counter" | "gauge", help: string, value: number): string =>
  `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${name} ${value}\n`

/** When the process started, in seconds since the epoch. */
const startTimeSeconds = Math.round(performance.timeOrigin / 1000)

/** The soft limit on open files (`Max open files` in /proc/self/limits), read once; undefined where there is none. */
const readMaxOpenFiles = (): number | undefined => {
  try {
    const line = readFileSync("/proc/self/limits", "utf8").split("\n").find((l) => l.startsWith("Max open files"))
    const soft = line === undefined ? Number.NaN : Number(line.slice("Max open files".length).trim().split(/\s+/)[0])
    return Number.isFinite(soft) ? soft : undefined
  } catch {
    return undefined
  }
}
let maxOpenFiles: { readonly value: number | undefined } | undefined

/** Open file descriptors: the entries of /proc/self/fd, less the one listing them; undefined off Linux. */
const openFds = (): number | undefined => {
  if (process.platform !== "linux") return undefined
  try {
    return readdirSync("/proc/self/fd").length - 1
  } catch {
    return undefined
  }
}

/** How late a callback queued now runs: the loop's delay at this moment (prom-client's `nodejs_eventloop_lag_seconds`). */
const currentLag: Effect.Effect<number> = Effect.callback<number>((resume) => {
  const queued = process.hrtime.bigint()
  setImmediate(() => resume(Effect.succeed(Number(process.hrtime.bigint() - queued) / NANOS_PER_SECOND)))
})

const lagFamilies = (histogram: ELDHistogram, lag: number): string => {
  const seconds = (nanos: number) => nanos / NANOS_PER_SECOND
  // No sample yet (a scrape within 10 ms of the last): the figures read as 0, not as Node's sentinels.
  const sampled = histogram.count > 0
  const of = (read: () => number) => (sampled ? seconds(read()) : 0)
  const out = [
    family("nodejs_eventloop_lag_seconds", "gauge", "Lag of event loop in seconds.", lag),
    family("nodejs_eventloop_lag_min_seconds", "gauge", "The minimum recorded event loop delay.", of(() => histogram.min)),
    family("nodejs_eventloop_lag_max_seconds", "gauge", "The maximum recorded event loop delay.", of(() => histogram.max)),
    family("nodejs_eventloop_lag_mean_seconds", "gauge", "The mean of the recorded event loop delays.", of(() => histogram.mean)),
    family("nodejs_eventloop_lag_stddev_seconds", "gauge", "The standard deviation of the recorded event loop delays.", of(() => histogram.stddev)),
    family("nodejs_eventloop_lag_p50_seconds", "gauge", "The 50th percentile of the recorded event loop delays.", of(() => histogram.percentile(50))),
    family("nodejs_eventloop_lag_p90_seconds", "gauge", "The 90th percentile of the recorded event loop delays.", of(() => histogram.percentile(90))),
    family("nodejs_eventloop_lag_p99_seconds", "gauge", "The 99th percentile of the recorded event loop delays.", of(() => histogram.percentile(99)))
  ]
  histogram.reset()
  return out.join("")
}

/** The process figures as Prometheus text (version 0.0.4), read now. */
export const processMetricsText = (monitor: EventLoopMonitor): Effect.Effect<string> =>
  Effect.map(currentLag, (lag) => {
    const cpu = process.cpuUsage()
    const memory = process.memoryUsage()
    const user = cpu.user / 1e6
    const system = cpu.system / 1e6
    let text = family("process_cpu_user_seconds_total", "counter", "Total user CPU time spent in seconds.", user) +
      family("process_cpu_system_seconds_total", "counter", "Total system CPU time spent in seconds.", system) +
      family("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", user + system) +
      family("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.", startTimeSeconds) +
      family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", memory.rss) +
      family("nodejs_heap_size_total_bytes", "gauge", "Process heap size from Node.js in bytes.", memory.heapTotal) +
      family("nodejs_heap_size_used_bytes", "gauge", "Process heap size used from Node.js in bytes.", memory.heapUsed) +
      family("nodejs_external_memory_bytes", "gauge", "Node.js external memory size in bytes.", memory.external)
    const open = openFds()
    if (open !== undefined) text += family("process_open_fds", "gauge", "Number of open file descriptors.", open)
    maxOpenFiles ??= { value: open === undefined ? undefined : readMaxOpenFiles() }
    const max = maxOpenFiles.value
    if (max !== undefined) text += family("process_max_fds", "gauge", "Maximum number of open file descriptors.", max)
    return text + lagFamilies(monitor.histogram, lag)
  })
