/**
 * `npm run bench:streams`: only the long-lived streams scenario (bench/longStreams.ts), in about a
 * minute: the fake upstream, the bare proxy, the gateway and, unless --no-before, the "before"
 * gateway from a worktree (bench/worktree.ts), each measured in turn.
 *
 *   npm run bench:streams                          bare proxy, gateway, before (the last Effect 3 commit)
 *   npm run bench:streams -- --no-before           bare proxy and gateway
 *   npm run bench:streams -- --before main~3       another "before"
 *   BENCH_STREAMS=400 BENCH_LONG_SECONDS=15 npm run bench:streams
 *
 * Same options as `npm run bench` for the gateways (--before, --no-before, --after, BENCH_BEFORE,
 * BENCH_AFTER) and the scenario (BENCH_STREAMS, BENCH_LONG_SECONDS, BENCH_PACE_MS). Prints the
 * table (and, with a before gateway, the gateway against it with issue 24's budgets) and stores it as `longStreams` in bench/results.json, keeping the rest of that file (the
 * last full run's figures) as it is.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fail, killAll, log, makeTempDir, ROOT, startBareProxy, startFakeUpstream } from "./harness.js"
import {
  longStreamsJson,
  longStreamsSettings,
  longStreamsTable,
  longStreamsVsBefore,
  longStreamsVsBeforeTable,
  runLongStreams,
  streamTargets
} from "./longStreams.js"
import { afterRefFrom, beforeRefFrom, checkoutBefore, checkoutWorktree, startAfterGateway, startGatewayAt } from "./worktree.js"

const argv = process.argv.slice(2)

/** Puts `longStreams` into bench/results.json, leaving whatever else is there. */
const storeResults = (longStreams: Record<string, unknown>): void => {
  const path = join(ROOT, "bench", "results.json")
  const previous = existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>) : {}
  writeFileSync(path, `${JSON.stringify({ ...previous, longStreams: { date: new Date().toISOString(), ...longStreams } }, null, 2)}\n`)
}

const main = async (): Promise<void> => {
  const settings = longStreamsSettings()
  const beforeRef = beforeRefFrom(argv, process.env)
  const afterRef = afterRefFrom(argv, process.env)
  makeTempDir()
  // Worktrees first: a ref that does not exist fails the run before anything starts.
  const afterCheckout = afterRef === undefined ? undefined : checkoutWorktree(afterRef, "after")
  const beforeCheckout = checkoutBefore(beforeRef)
  const fake = await startFakeUpstream()
  const bare = await startBareProxy(fake.info.url, Math.max(256, settings.streams + 16))
  const gw = await startAfterGateway(fake.info.url, afterCheckout)
  const before = beforeCheckout === undefined ? undefined : await startGatewayAt(fake.info.url, beforeCheckout, "before")
  log(`fake ${fake.info.url}, bare proxy ${bare.info.url}, gateway ${gw.url}${before === undefined ? "" : `, before ${before.url}`}`)

  const targets = streamTargets({ url: bare.info.url, pid: bare.child.pid! }, [
    { name: "gateway", label: afterCheckout === undefined ? "gateway" : `gateway (${afterCheckout.commit})`, url: gw.url, pid: gw.pid },
    ...(before === undefined || beforeCheckout === undefined
      ? []
      : [{ name: "before", label: `before (${beforeCheckout.commit})`, url: before.url, pid: before.pid }])
  ])
  const results = await runLongStreams(fake.info.url, fake.info.events.responses, targets, settings)

  process.stdout.write(
    `\nlong-lived streams: ${settings.streams} passthrough SSE streams open at once, ${fake.info.events.responses} events ` +
      `${settings.paceMs} ms apart, each replaced as it ends; ${settings.seconds}s measured per target\n` +
      `${longStreamsTable(targets, results)}\n` +
      "(CPU µs/event = the process's CPU over the window / SSE events the clients received; " +
      "KB/stream = (RSS with the streams open - idle RSS) / open streams; 1st byte in ms)\n"
  )
  const vsBefore = longStreamsVsBefore(results)
  if (vsBefore !== undefined) process.stdout.write(`\n${longStreamsVsBeforeTable(vsBefore)}\n`)
  storeResults({
    before: beforeCheckout === undefined ? null : { ref: beforeCheckout.ref, commit: beforeCheckout.commit },
    after: afterRef ?? "checkout",
    ...longStreamsJson(settings, fake.info.events.responses, results),
    vsBefore: vsBefore ?? null
  })
  log("stored longStreams in bench/results.json")
}

main().then(() => {
  killAll()
  process.exit(0)
}, fail)
