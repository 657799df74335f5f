/**
 * serveRequest without a socket: what the client receives when writing the answer itself hits a
 * bug. The client must get an answer (a 500 envelope, or a cut once the answer had begun), never
 * a connection left hanging.
 */
import { PassThrough } from "node:stream"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Logger, ManagedRuntime } from "effect"
import type { ServerResponse } from "node:http"
import { AppConfig, Settings } from "../../src/config/AppConfig.js"
import { serveRequest } from "../../src/http/app.js"
import type { ClientRequest } from "../../src/http/request.js"
import { servicesLayer } from "../../src/server.js"
import { testData } from "../support/gateway.js"

const data = testData({
  groups: [{ name: "g", platform: "openai", models: ["m"] }],
  users: [{ name: "u", balance_usd: 1 }],
  keys: [{ key: "sk-serve-request-0001", user: "u", group: "g", name: "k" }]
})

const runtime = ManagedRuntime.make(
  servicesLayer().pipe(
    Layer.provideMerge(Layer.mergeAll(AppConfig.layer(data, "test"), Settings.layer({}))),
    Layer.provide(Logger.replace(Logger.defaultLogger, Logger.make(() => {})))
  )
)

const request = (path: string): ClientRequest => ({
  id: "req-1",
  method: "GET",
  url: path,
  path,
  headers: {},
  body: new PassThrough()
})

/** A response whose first writeHead throws (the bug), recording what is written after it. */
const faultyResponse = () => {
  const written: { status?: number; body?: string | undefined; destroyed: boolean } = { destroyed: false }
  let calls = 0
  const res = {
    headersSent: false,
    writeHead(status: number) {
      if (calls++ === 0) throw new Error("a bug while writing headers")
      written.status = status
      return this
    },
    end(body?: string) {
      written.body = body
      return this
    },
    destroy() {
      written.destroyed = true
      return this
    }
  }
  return { res: res as unknown as ServerResponse, written }
}

describe("serveRequest", () => {
  it("answers 500 with the envelope when writing the answer fails before anything was sent", async () => {
    const { res, written } = faultyResponse()
    await runtime.runPromise(serveRequest(request("/health"), res))
    expect(written.status).toBe(500)
    expect(JSON.parse(written.body ?? "{}")).toEqual({
      error: {
        type: "api_error",
        code: "internal_error",
        message: "Internal error; quote request id req-1 when reporting it",
        param: null
      }
    })
  })

  it("cuts the connection when the answer had already begun", async () => {
    const { res, written } = faultyResponse()
    ;(res as unknown as { headersSent: boolean }).headersSent = true
    await runtime.runPromise(serveRequest(request("/health"), res))
    expect(written.destroyed).toBe(true)
    expect(written.status).toBeUndefined()
  })

  it.effect("answers a known route normally", () =>
    Effect.gen(function*() {
      const seen: Array<number> = []
      const res = {
        headersSent: false,
        writeHead(status: number) {
          seen.push(status)
          return this
        },
        end() {
          return this
        }
      } as unknown as ServerResponse
      yield* Effect.promise(() => runtime.runPromise(serveRequest(request("/health"), res)))
      expect(seen).toEqual([200])
    }))
})
