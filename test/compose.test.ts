/**
 * The README promises: a user swaps one service (a KeyRepo, an Upstream) for their own in a few
 * lines and the rest of the gateway keeps working on the defaults; and mounts the gateway inside
 * their own effect/http app, beside their routes and under their middleware (`HttpMiddleware.cors`
 * included: its headers reach the client, on the gateway's answers too).
 */
import { NodeHttpClient, NodeHttpServer } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { HttpBody, HttpClient, HttpMiddleware, HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import OpenAI from "openai"
import { HttpClientUpstream } from "../examples/httpClientUpstream.js"
import { sha256Hex } from "../src/config/resolve.js"
import type { Principal } from "../src/domain/model.js"
import { AppConfig, KeyRepo, makeGatewayApp, servicesLayer, Settings } from "../src/index.js"
import { startFakeUpstream } from "./support/fakeUpstream.js"
import { fakeUpstreamConfig, fakeUpstreamEnv, startGateway, testData } from "./support/gateway.js"

const config = {
  groups: [{ name: "g", platform: "openai" }],
  users: [{ name: "u", balance_usd: 5 }],
  keys: [{ key: "sk-config-key-000", user: "u", group: "g" }],
  accounts: [{ name: "sim", platform: "openai", kind: "simulator", groups: ["g"] }]
}

describe("composing your own layers", () => {
  it("serves with a user-supplied KeyRepo in place of the default", async () => {
    const data = testData(config)
    const base = data.keys[0]!
    const principal: Principal = {
      key: { ...base, id: "external", sha256: sha256Hex("sk-from-my-own-store"), prefix: "sk-from…" },
      user: data.users.get("u")!,
      group: data.groups.get("g")!
    }
    const looked: Array<string> = []
    const MyKeyRepo = Layer.succeed(KeyRepo)({
      findByHash: (sha256) =>
        Effect.sync(() => {
          looked.push(sha256)
          return sha256 === principal.key.sha256 ? Option.some(principal) : Option.none()
        })
    })
    const gw = await startGateway({ config, services: { keyRepo: MyKeyRepo } })
    try {
      const ok = await fetch(`${gw.url}/v1/responses`, {
        method: "POST",
        headers: { authorization: "Bearer sk-from-my-own-store", "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-5.4", input: "hi" })
      })
      expect(ok.status).toBe(200)
      expect(((await ok.json()) as { object: string }).object).toBe("response")
      // The key from the config file is unknown to the replacement store.
      const refused = await fetch(`${gw.url}/v1/models`, { headers: { authorization: "Bearer sk-config-key-000" } })
      expect(refused.status).toBe(401)
      expect(looked).toContain(sha256Hex("sk-config-key-000"))
      expect(looked.some((h) => h.includes("sk-"))).toBe(false) // only hashes reach the store
    } finally {
      await gw.close()
    }
  })
})

describe("your own Upstream layer (examples/httpClientUpstream.ts, README)", () => {
  it("serves both platforms, JSON and streams, as the openai SDK reads them", async () => {
    const upstream = await startFakeUpstream()
    const gw = await startGateway({
      config: fakeUpstreamConfig(upstream.url),
      env: fakeUpstreamEnv,
      services: { upstream: HttpClientUpstream.pipe(Layer.provide(NodeHttpClient.layerUndici)) }
    })
    try {
      for (const [key, model] of [["sk-test-openai-0001", "gpt-5.4"], ["sk-test-anthropic-0001", "claude-sonnet-4-6"]] as const) {
        const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 })
        const json = await client.responses.create({ model, input: "hello through my own upstream" })
        expect({ model: json.model, status: json.status }).toEqual({ model, status: "completed" })
        expect(json.output_text.length).toBeGreaterThan(0)
        const stream = client.responses.stream({ model, input: "stream through my own upstream" })
        const final = await stream.finalResponse()
        expect({ model: final.model, status: final.status }).toEqual({ model, status: "completed" })
        expect(final.output_text.length).toBeGreaterThan(0)
      }
      // The requests reached the fake through the user's client, with the account's credentials.
      const seen = upstream.requests.map((r) => [r.path, r.headers["authorization"] ?? r.headers["x-api-key"]])
      expect(seen).toContainEqual(["/v1/responses", "Bearer sk-upstream-openai"])
      expect(seen).toContainEqual(["/v1/messages", "sk-ant-upstream"])
    } finally {
      await gw.close()
      await upstream.close()
    }
  })
})

describe("mounting the gateway in your own platform app", () => {
  const stamp = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.map(app, HttpServerResponse.setHeader("x-served-by", "host-app"))
  /** A user's app: a route of theirs, the gateway under /gateway, their own middleware over both. */
  const UserRoutes = HttpRouter.use((router) =>
    Effect.gen(function*() {
      const gateway = yield* makeGatewayApp
      yield* router.add("GET", "/hello", HttpServerResponse.text("hello from the host app"))
      yield* router.prefixed("/gateway").add("*", "/*", gateway)
    })
  )
  const UserApp = Effect.map(HttpRouter.toHttpEffect(UserRoutes), stamp)
  const ORIGIN = "https://app.example"
  const data = testData(config)
  const ServerLive = Layer.unwrap(
    Effect.map(UserApp, (app) => HttpServer.serve(app, HttpMiddleware.cors({ allowedOrigins: [ORIGIN], exposedHeaders: ["x-request-id"] })))
  ).pipe(
    Layer.provideMerge(NodeHttpServer.layerTest),
    Layer.provide(servicesLayer()),
    Layer.provide(Layer.mergeAll(AppConfig.layer(data, "test"), Settings.layer({})))
  )

  it.layer(ServerLive)((it) => {
    it.effect("answers the gateway's routes under the prefix, the host's beside them, through the host's middleware", () =>
      Effect.gen(function*() {
        const client = yield* HttpClient.HttpClient
        const hello = yield* client.get("/hello")
        expect(yield* hello.text).toBe("hello from the host app")
        expect(hello.headers["x-served-by"]).toBe("host-app")

        const models = yield* client.get("/gateway/v1/models", { headers: { authorization: "Bearer sk-config-key-000" } })
        expect(models.status).toBe(200)
        expect(models.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/)
        expect(models.headers["x-served-by"]).toBe("host-app")
        const list = (yield* models.json) as { object: string; data: ReadonlyArray<{ id: string }> }
        expect(list.object).toBe("list")

        const answer = yield* client.post("/gateway/v1/responses", {
          headers: { authorization: "Bearer sk-config-key-000" },
          body: HttpBody.jsonUnsafe({ model: "gpt-5.4", input: "hi", stream: true })
        })
        expect(answer.headers["content-type"]).toBe("text/event-stream")
        const text = yield* answer.text
        expect(text).toContain("event: response.completed")

        // The gateway's envelope covers its own unknown routes and wrong methods under the prefix.
        const missing = yield* client.get("/gateway/v1/nope")
        expect(missing.status).toBe(404)
        expect(yield* missing.json).toMatchObject({ error: { type: "not_found_error", code: "route_not_found" } })
        const wrong = yield* client.del("/gateway/v1/models")
        expect(wrong.status).toBe(405)
        expect(yield* wrong.json).toMatchObject({ error: { code: "method_not_allowed" } })
      }))

    it.effect("HttpMiddleware.cors's headers reach the client on the gateway's answers (JSON, SSE, envelope) and preflights", () =>
      Effect.gen(function*() {
        const client = yield* HttpClient.HttpClient
        const origin = { origin: ORIGIN }
        const cors = (headers: Readonly<Record<string, string | undefined>>) => ({
          allow: headers["access-control-allow-origin"],
          expose: headers["access-control-expose-headers"]
        })
        const expected = { allow: ORIGIN, expose: "x-request-id" }

        const models = yield* client.get("/gateway/v1/models", { headers: { ...origin, authorization: "Bearer sk-config-key-000" } })
        expect(models.status).toBe(200)
        expect(cors(models.headers)).toEqual(expected)

        const answer = yield* client.post("/gateway/v1/responses", {
          headers: { ...origin, authorization: "Bearer sk-config-key-000" },
          body: HttpBody.jsonUnsafe({ model: "gpt-5.4", input: "hi", stream: true })
        })
        expect(answer.headers["content-type"]).toBe("text/event-stream")
        expect(cors(answer.headers)).toEqual(expected)
        expect(yield* answer.text).toContain("event: response.completed")

        const refused = yield* client.get("/gateway/v1/models", { headers: origin })
        expect(refused.status).toBe(401)
        expect(cors(refused.headers)).toEqual(expected)
        expect(refused.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/)

        const preflight = yield* client.options("/gateway/v1/responses", {
          headers: { ...origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type" }
        })
        expect(preflight.status).toBe(204)
        expect(preflight.headers["access-control-allow-origin"]).toBe(ORIGIN)
        expect(preflight.headers["access-control-allow-methods"]).toContain("POST")
        expect(preflight.headers["access-control-allow-headers"]).toBe("authorization,content-type")
      }))
  })
})
