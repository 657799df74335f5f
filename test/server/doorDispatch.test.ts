/**
 * The gateway app runs the doors itself (src/server/router.ts `doorFor`), so that a door's record
 * comes back as a value; every other request goes through the router. The two must agree: a request
 * the app dispatches to a door is one the router would have routed to that door, and a request the
 * app leaves to the router never reaches a door there. Checked over awkward paths and methods.
 */
import { Effect, Exit, Layer, Scope } from "effect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { describe, expect, it } from "vitest"
import { AppConfig, Settings } from "../../src/config/AppConfig.js"
import type { DoorProgram } from "../../src/endpoints/kit/door.js"
import { servicesLayer } from "../../src/layers.js"
import { type Doors, doorFor, makeRouterWith, routeName } from "../../src/server/router.js"
import { fakeUpstreamConfig, fakeUpstreamEnv, testData } from "../support/gateway.js"

/** A door that answers with its own name. */
const marker = (name: string): DoorProgram =>
  Effect.succeed({ response: HttpServerResponse.text(name), record: { door: "responses", keyId: "k", group: "g" } })

const doors: Doors = {
  responses: marker("responses"),
  messages: marker("messages"),
  countTokens: marker("count_tokens"),
  responsesUpgrade: marker("upgrade")
}
const names = new Map<DoorProgram | undefined, string>([
  [doors.responses, "responses"],
  [doors.messages, "messages"],
  [doors.countTokens, "count_tokens"],
  [doors.responsesUpgrade, "upgrade"],
  [undefined, "not a door"]
])

const PATHS = [
  "/v1/responses",
  "/v1/responses/",
  "/v1/responses/compact",
  "/v1/responses/a/b/c",
  "/v1/responses//x",
  "/v1/responses/%E0%80%80",
  "/v1/responses%2Fcompact",
  "/v1/responses/a%20b",
  "/v1/responsesx",
  "/V1/responses",
  "//v1/responses",
  "/v1//responses/compact/",
  "/V1/Messages/Count_Tokens",
  "/v1//messages",
  "/responses",
  "/responses/compact",
  "/backend-api/codex/responses",
  "/backend-api/codex/responses/compact",
  "/v1/messages",
  "/v1/messages/",
  "/v1/messages/count_tokens",
  "/v1/messages/count_tokens/",
  "/v1/messages/other",
  "/v1/messagesx",
  "/v1/models",
  "/v1/usage",
  "/health"
]
const METHODS = ["POST", "GET", "PUT"]

describe("the app's door dispatch and the router", () => {
  it("agree on which requests a door serves, and which door", async () => {
    const data = testData(fakeUpstreamConfig("http://127.0.0.1:9"), fakeUpstreamEnv)
    const layer = servicesLayer({}).pipe(Layer.provideMerge(Layer.mergeAll(AppConfig.layer(data, "test"), Settings.layer({}))))
    const disagreements = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const router = yield* makeRouterWith({ doors })
      const found: Array<string> = []
      for (const method of METHODS) {
        for (const path of PATHS) {
          const request = HttpServerRequest.fromWeb(new Request(`http://gateway${path}`, {
            method,
            headers: { upgrade: "websocket", connection: "upgrade" },
            ...(method === "GET" ? {} : { body: "{}" })
          }))
          const scope = yield* Scope.make()
          const routed = yield* router.pipe(
            Effect.provideService(HttpServerRequest.HttpServerRequest, request),
            Effect.provideService(Scope.Scope, scope),
            Effect.map((response) => response.body._tag === "Uint8Array" ? new TextDecoder().decode(response.body.body) : "not a door"),
            Effect.orElseSucceed(() => "not a door")
          )
          yield* Scope.close(scope, Exit.void)
          const dispatched = names.get(doorFor(doors, method, path))
          // The router's other routes answer too: only its doors' names count.
          const routedDoor = [...names.values()].includes(routed) ? routed : "not a door"
          if (dispatched !== routedDoor) found.push(`${method} ${path}: app ${dispatched}, router ${routedDoor}`)
        }
      }
      return found
    })).pipe(Effect.provide(layer)))
    expect(disagreements).toEqual([])
  })

  it("names a door's requests by that door (metrics label, and the Messages door's error shape)", () => {
    const door: Record<string, string> = { responses: "responses", messages: "messages", count_tokens: "messages" }
    const misnamed = PATHS.flatMap((path) => {
      const name = names.get(doorFor(doors, "POST", path))
      const expected = name === undefined ? undefined : door[name]
      return expected === undefined || routeName(path) === expected ? [] : [`${path}: ${routeName(path)}, not ${expected}`]
    })
    expect(misnamed).toEqual([])
  })
})
