/**
 * The Upstream `npm start` uses: HTTP (undici keep-alive pool) for `kind: http` accounts, the
 * simulator for `kind: simulator` accounts (the demo). At the drain deadline, HTTP stream bodies
 * still open end, so that no silent upstream holds the shutdown up.
 */
import { Effect, Layer } from "effect"
import { Settings } from "../../config/AppConfig.js"
import { Lifecycle } from "../lifecycle/Lifecycle.js"
import { DrainSignal } from "../lifecycle/live.js"
import { makeHttpUpstream } from "./http.js"
import { simulatorUpstream } from "./simulator.js"
import { Upstream } from "./Upstream.js"

export const layer = Layer.effect(
  Upstream,
  Effect.gen(function*() {
    const settings = yield* Settings
    const lifecycle = yield* Lifecycle
    // One fiber for the whole upstream waits for the deadline; the open bodies watch a local
    // signal it fires (a callback each, not a fiber each).
    const deadline = new DrainSignal()
    yield* Effect.forkScoped(Effect.andThen(lifecycle.drainDeadline, Effect.sync(() => deadline.fire())))
    const http = yield* makeHttpUpstream(settings, (callback) => deadline.watch(callback))
    return Upstream.of({
      send: (account, request) =>
        account.kind === "simulator" ? simulatorUpstream.send(account, request) : http.send(account, request)
    })
  })
)
