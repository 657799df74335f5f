/**
 * An upstream that returns an image_generation_call nobody asked for: a group without the image
 * capability never receives it (JSON or stream, checked by the openai SDK's strict parser), a group
 * with it receives the answer as sent.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import OpenAI from "openai"
import { Upstream } from "../../src/services/upstream/Upstream.js"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { imageAnswer, sseText } from "../support/imageAnswer.js"

const encoder = new TextEncoder()
const answer = (model: string) => imageAnswer(model)

const imageUpstream = Upstream.layerTest((_account, request) =>
  Effect.sync(() => {
    const { json, events } = answer((JSON.parse(request.body) as { model: string }).model)
    return request.stream
      ? {
        status: 200,
        headers: { "content-type": "text/event-stream" },
        body: Stream.fromIterable(events.map((e) => encoder.encode(sseText([e]))))
      }
      : { status: 200, headers: { "content-type": "application/json" }, body: Stream.succeed(encoder.encode(JSON.stringify(json))) }
  })
)

describe("image items an upstream returns unasked", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({
      services: { upstream: imageUpstream },
      config: {
        groups: [
          { name: "plain", platform: "openai" },
          { name: "artists", platform: "openai", allow_image_generation: true }
        ],
        users: [{ name: "u", balance_usd: 5 }],
        keys: [
          { key: "sk-plain-000000", user: "u", group: "plain" },
          { key: "sk-artist-00000", user: "u", group: "artists" }
        ],
        accounts: [{ name: "up", platform: "openai", kind: "simulator", groups: ["plain", "artists"] }]
      }
    })
  })
  afterAll(() => gw.close())

  const client = (apiKey: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey, maxRetries: 0 })

  it("are removed from a JSON answer for a group without the capability", async () => {
    const res = await client("sk-plain-000000").responses.create({ model: "gpt-5.4", input: "hi" })
    expect(res.output.map((o) => o.type)).toEqual(["message", "message"])
    expect(res.output_text).toBe("Here you go. Done.")
  })

  it("are removed from a stream, which the SDK's strict parser still accepts", async () => {
    const types: Array<string> = []
    const stream = client("sk-plain-000000").responses.stream({ model: "gpt-5.4", input: "hi" })
    stream.on("event", (e) => types.push(e.type))
    const final = await stream.finalResponse()
    expect(final.output.map((o) => o.type)).toEqual(["message", "message"])
    expect(types.some((t) => t.includes("image_generation"))).toBe(false)
  })

  it("reach a group that may generate images", async () => {
    const res = await client("sk-artist-00000").responses.create({ model: "gpt-5.4", input: "hi" })
    expect(res.output.map((o) => o.type)).toEqual(["message", "image_generation_call", "message"])
  })
})
