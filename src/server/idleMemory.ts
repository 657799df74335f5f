/**
 * Gives memory back to the system once the gateway has fallen quiet. V8 keeps the heap a burst of
 * traffic grew for as long as the process lives: the young generation at its largest
 * (`--max-semi-space-size=32`: 64 MB), and an old space that only a major GC would empty, which
 * an idle process never runs. Measured (docs/performance.md, "Where the memory goes"): 310-330 MB
 * RSS after a warm-up of 12,000 requests, unchanged 20 s later; 166-176 MB after one memory-reducing
 * collection (the heap 150 -> 26 MB), which took 60-160 ms (up to 600 ms with the machine's two
 * cores busy elsewhere).
 *
 * So: `quietMillis` (30 s) after the last request ended, with none in flight (a WebSocket
 * connection counts as one until it closes), one such collection, then none until traffic comes
 * and goes again (start-up counts as traffic: its own heap goes back too). The collection holds
 * the event loop, so it runs only when nothing is being served; a request arriving during it waits
 * that long. It also drops compiled code and shrinks the young generation, so the first few
 * thousand requests after it pay for JIT and regrowth (about 1.3x CPU per request): with a quiet
 * period of 10 s, the bench's gaps between phases released the heap again and again, which cost
 * 1.2-1.7x CPU per request and 6x the first byte under 200 open streams.
 *
 * The collector's entry point: V8's `gc` function, which node exposes only with `--expose-gc`.
 * It is taken once with the flag set for the moment and put back, so `globalThis.gc` stays absent.
 */
import type { EventEmitter } from "node:events"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { Clock, Duration, Effect, Schedule, type Scope } from "effect"

/** V8's `gc` with its options (node's `--expose-gc`). */
type V8Gc = (options: { readonly type: "major"; readonly execution: "sync"; readonly flavor: "last-resort" }) => void

let v8Gc: V8Gc | undefined

/** A memory-reducing collection: every full GC V8 would run before giving up, with the young generation shrunk. */
export const collectAllGarbage = (): void => {
  if (v8Gc === undefined) {
    const exposed = (globalThis as { gc?: unknown }).gc
    if (typeof exposed === "function") v8Gc = exposed as V8Gc
    else {
      setFlagsFromString("--expose-gc")
      v8Gc = runInNewContext("gc") as V8Gc
      setFlagsFromString("--no-expose-gc")
    }
  }
  v8Gc({ type: "major", execution: "sync", flavor: "last-resort" })
}

export interface IdleMemoryOptions {
  /** How long without a request before memory is given back (default 30 s). */
  readonly quietMillis?: number
  /** How often the quiet is checked (default 1 s). */
  readonly checkMillis?: number
  /** What gives memory back (default `collectAllGarbage`). */
  readonly release?: () => void
}

/**
 * Watches `server` (node's http server: its `request` and `upgrade` events) and gives memory back
 * once it has been quiet for `quietMillis`, once per quiet period, for as long as the scope is open.
 */
export const releaseMemoryWhenIdle = (
  server: EventEmitter,
  options: IdleMemoryOptions = {}
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const quietMillis = options.quietMillis ?? 30_000
    const release = options.release ?? collectAllGarbage
    let inFlight = 0
    let lastActive = yield* Clock.currentTimeMillis
    // Start-up grew the heap too: the first quiet period after it releases.
    let released = false
    const began = () => {
      inFlight++
      released = false
    }
    const clock = yield* Clock.Clock
    const ended = () => {
      inFlight--
      lastActive = clock.currentTimeMillisUnsafe()
    }
    const onRequest = (_request: unknown, response: EventEmitter) => {
      began()
      response.once("close", ended)
    }
    const onUpgrade = (_request: unknown, socket: EventEmitter) => {
      began()
      socket.once("close", ended)
    }
    server.on("request", onRequest)
    server.on("upgrade", onUpgrade)
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        server.off("request", onRequest)
        server.off("upgrade", onUpgrade)
      })
    )
    const check = Effect.flatMap(Clock.currentTimeMillis, (now) => {
      if (released || inFlight > 0 || now - lastActive < quietMillis) return Effect.void
      released = true
      return Effect.sync(release)
    })
    yield* Effect.forkScoped(Effect.repeat(check, Schedule.spaced(Duration.millis(options.checkMillis ?? 1_000))))
  })
