/**
 * Opt-in tracing, end to end: a gateway with tracing on exports its spans over OTLP/HTTP to a tiny
 * receiver in the test; each request is one server span carrying what it came to, with children
 * for policy, scheduling, the upstream attempt and the settlement, and the upstream hears the
 * attempt's span as its W3C `traceparent`. With tracing off nothing reaches the receiver.
 */
import { createServer, type Server } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, ManagedRuntime } from "effect"
import WebSocket from "ws"
import { AppConfig, Settings } from "../../src/config/AppConfig.js"
import { gatewayLayer } from "../../src/layers.js"
import { layerOtlp } from "../../src/observability/tracing.js"
import { GatewayServer } from "../../src/server/GatewayServer.js"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { fakeUpstreamConfig, fakeUpstreamEnv, testData } from "../support/gateway.js"

interface OtlpValue {
  readonly stringValue?: string
  readonly intValue?: string | number
  readonly doubleValue?: number
  readonly boolValue?: boolean
  readonly arrayValue?: { readonly values: ReadonlyArray<OtlpValue> }
}
interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: OtlpValue }>
}
interface OtlpExport {
  readonly resourceSpans: ReadonlyArray<{
    readonly resource: { readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: OtlpValue }> }
    readonly scopeSpans: ReadonlyArray<{ readonly spans: ReadonlyArray<OtlpSpan> }>
  }>
}

/** An OTLP/HTTP receiver: keeps every span POSTed to /v1/traces. */
const startReceiver = async () => {
  const spans: Array<OtlpSpan> = []
  const services: Array<string> = []
  const server: Server = createServer((req, res) => {
    let body = ""
    req.on("data", (c: Buffer) => (body += c.toString()))
    req.on("end", () => {
      if (req.url === "/v1/traces" && req.method === "POST") {
        const data = JSON.parse(body) as OtlpExport
        for (const rs of data.resourceSpans) {
          const name = rs.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue
          if (name !== undefined) services.push(name)
          for (const ss of rs.scopeSpans) spans.push(...ss.spans)
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    services,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

type AttrValue = string | number | boolean | ReadonlyArray<AttrValue> | undefined

const valueOf = (v: OtlpValue): AttrValue => {
  if (v.stringValue !== undefined) return v.stringValue
  if (v.intValue !== undefined) return Number(v.intValue)
  if (v.arrayValue !== undefined) return v.arrayValue.values.map(valueOf)
  return v.doubleValue ?? v.boolValue
}

const attr = (span: OtlpSpan | undefined, key: string): AttrValue => {
  const v = span?.attributes.find((a) => a.key === key)?.value
  return v === undefined ? undefined : valueOf(v)
}

const OPENAI_KEY = "sk-test-openai-0001"
const ANTHROPIC_KEY = "sk-test-anthropic-0001"

const post = (url: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body)
  })

const startTraced = async (upstream: FakeUpstream, receiverUrl: string, tracing: boolean) => {
  const data = testData(fakeUpstreamConfig(upstream.url), fakeUpstreamEnv)
  const runtime = ManagedRuntime.make(
    gatewayLayer({}, { port: 0, host: "127.0.0.1", tracing }).pipe(
      Layer.provide(layerOtlp({ url: receiverUrl, serviceName: "modelgate-test", exportIntervalMillis: 50 })),
      Layer.provide(Layer.mergeAll(AppConfig.layer(data, "test"), Settings.layer({})))
    )
  )
  const url = (await runtime.runPromise(Effect.service(GatewayServer))).url
  return { url, runtime }
}

describe("tracing on, exported over OTLP", () => {
  let upstream: FakeUpstream
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  beforeAll(async () => {
    upstream = await startFakeUpstream()
    receiver = await startReceiver()
    const gateway = await startTraced(upstream, receiver.url, true)
    const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
    const json = await post(gateway.url, OPENAI_KEY, { model: "gpt-5.4", input: "hi" }, {
      traceparent: `00-${clientTrace}-00f067aa0ba902b7-01`
    })
    expect(json.status).toBe(200)
    await json.text()
    const stream = await post(gateway.url, ANTHROPIC_KEY, { model: "claude-sonnet-4-5", input: "hi", stream: true })
    expect(stream.status).toBe(200)
    expect(await stream.text()).toContain("response.completed")
    // One WebSocket turn: a span of its own, under the connection's.
    const ws = new WebSocket(`${gateway.url.replace(/^http/, "ws")}/v1/responses`, { headers: { authorization: `Bearer ${OPENAI_KEY}` } })
    await new Promise((resolve, reject) => {
      ws.once("open", resolve)
      ws.once("error", reject)
    })
    await new Promise<void>((resolve) => {
      ws.on("message", (data: Buffer) => {
        if (String(data).includes("\"response.completed\"")) resolve()
      })
      ws.send(JSON.stringify({ type: "response.create", model: "gpt-5.4", input: "hi over ws" }))
    })
    ws.close()
    await new Promise((resolve) => ws.once("close", resolve))
    // Closing the runtime sends what is pending.
    await gateway.runtime.dispose()
  })
  afterAll(async () => {
    await upstream.close()
    await receiver.close()
  })

  const requestSpans = () => receiver.spans.filter((s) => s.name === "POST /v1/responses")
  const childrenOf = (root: OtlpSpan) => receiver.spans.filter((s) => s.parentSpanId === root.spanId)

  it("makes one server span per request with what it came to", () => {
    expect(receiver.services).toContain("modelgate-test")
    const roots = requestSpans()
    expect(roots).toHaveLength(2)
    const openai = roots.find((s) => attr(s, "modelgate.group") === "oa")
    expect(openai?.kind).toBe(2) // SERVER
    expect(attr(openai, "http.route")).toBe("/v1/responses")
    expect(attr(openai, "http.response.status_code")).toBe(200)
    expect(attr(openai, "gen_ai.request.model")).toBe("gpt-5.4")
    expect(attr(openai, "modelgate.account")).toBe("fake-openai")
    expect(attr(openai, "modelgate.key")).toBe("oa-key")
    expect(Number(attr(openai, "gen_ai.usage.input_tokens"))).toBeGreaterThan(0)
    expect(Number(attr(openai, "gen_ai.usage.output_tokens"))).toBeGreaterThan(0)
    expect(Number(attr(openai, "modelgate.cost_usd"))).toBeGreaterThan(0)
    const anthropic = roots.find((s) => attr(s, "modelgate.group") === "an")
    expect(attr(anthropic, "modelgate.account")).toBe("fake-anthropic")
    expect(Number(attr(anthropic, "gen_ai.usage.output_tokens"))).toBeGreaterThan(0)
  })

  it("makes a span per WebSocket turn, under the connection's, with the turn's steps as its children", () => {
    const turn = receiver.spans.find((s) => s.name === "WS response.create")
    expect(turn?.kind).toBe(2) // SERVER
    expect(attr(turn, "modelgate.group")).toBe("oa")
    expect(attr(turn, "gen_ai.operation.name")).toBe("chat")
    expect(attr(turn, "gen_ai.response.model")).toBe("gpt-5.4-2026-03-01")
    expect(attr(turn, "http.response.status_code")).toBe(200)
    expect(Number(attr(turn, "gen_ai.usage.output_tokens"))).toBeGreaterThan(0)
    const connection = receiver.spans.find((s) => s.spanId === turn?.parentSpanId)
    expect(connection?.name).toBe("GET /v1/responses")
    expect(childrenOf(turn!).map((s) => s.name).sort()).toEqual([
      "gateway.key_slot",
      "gateway.policy",
      "gateway.scheduling",
      "gateway.settlement",
      "gateway.upstream_attempt"
    ])
  })

  it("continues the client's trace", () => {
    const openai = requestSpans().find((s) => attr(s, "modelgate.group") === "oa")
    expect(openai?.traceId).toBe("4bf92f3577b34da6a3ce929d0e0e4736")
    expect(openai?.parentSpanId).toBe("00f067aa0ba902b7")
  })

  it("has child spans for policy, key slot, scheduling, the upstream attempt and the settlement", () => {
    expect(requestSpans()).toHaveLength(2)
    for (const root of requestSpans()) {
      const names = childrenOf(root).map((s) => s.name).sort()
      expect(names).toEqual([
        "gateway.key_slot",
        "gateway.policy",
        "gateway.scheduling",
        "gateway.settlement",
        "gateway.upstream_attempt"
      ])
      const attempt = childrenOf(root).find((s) => s.name === "gateway.upstream_attempt")
      expect(attempt?.kind).toBe(3) // CLIENT
      expect(attr(attempt, "http.response.status_code")).toBe(200)
    }
  })

  it("sends the upstream attempt's span as W3C traceparent", () => {
    const attempts = receiver.spans.filter((s) => s.name === "gateway.upstream_attempt")
    const sent = upstream.requests.map((r) => r.headers["traceparent"])
    expect(sent).toHaveLength(3) // two HTTP requests and one WebSocket turn
    for (const header of sent) {
      const [version, traceId, spanId, flags] = String(header).split("-")
      expect(version).toBe("00")
      expect(flags).toBe("01")
      expect(attempts.some((a) => a.traceId === traceId && a.spanId === spanId)).toBe(true)
    }
  })
})

/**
 * Every renderer of a turn (each door, on each platform, JSON and stream) reports what the turn
 * came to as OpenTelemetry's GenAI semantic conventions name it, on the request's span; each
 * upstream attempt's client span names the provider, the model asked and the host called.
 */
describe("GenAI semantic conventions", () => {
  let upstream: FakeUpstream
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  /** Each case's request carries a trace id of its own: its span is found by it. */
  const cases = [
    { trace: "a1", door: "responses", key: OPENAI_KEY, model: "gpt-5.4", stream: false },
    { trace: "a2", door: "responses", key: OPENAI_KEY, model: "gpt-5.4", stream: true },
    { trace: "a3", door: "responses", key: ANTHROPIC_KEY, model: "claude-sonnet-4-5", stream: false },
    { trace: "a4", door: "responses", key: ANTHROPIC_KEY, model: "claude-sonnet-4-5", stream: true },
    { trace: "b1", door: "messages", key: OPENAI_KEY, model: "gpt-5.4", stream: false },
    { trace: "b2", door: "messages", key: OPENAI_KEY, model: "gpt-5.4", stream: true },
    { trace: "b3", door: "messages", key: ANTHROPIC_KEY, model: "claude-sonnet-4-5", stream: false },
    { trace: "b4", door: "messages", key: ANTHROPIC_KEY, model: "claude-sonnet-4-5", stream: true }
  ] as const
  const traceId = (trace: string) => trace.padEnd(32, "0")
  // A system prompt marked for the prompt cache: the fake Anthropic reports it read from the cache.
  const system = [{ type: "text", text: "You are a careful assistant. ".repeat(20), cache_control: { type: "ephemeral" } }]

  beforeAll(async () => {
    upstream = await startFakeUpstream()
    receiver = await startReceiver()
    const gateway = await startTraced(upstream, receiver.url, true)
    for (const c of cases) {
      const body = c.door === "responses"
        ? { model: c.model, input: "hi", stream: c.stream }
        : { model: c.model, max_tokens: 256, system, messages: [{ role: "user", content: "hi" }], stream: c.stream }
      const res = await fetch(`${gateway.url}/v1/${c.door}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${c.key}`,
          "content-type": "application/json",
          "anthropic-version": "2023-06-01",
          traceparent: `00-${traceId(c.trace)}-00f067aa0ba902b7-01`
        },
        body: JSON.stringify(body)
      })
      expect(res.status).toBe(200)
      await res.text()
    }
    await gateway.runtime.dispose()
  })
  afterAll(async () => {
    await upstream.close()
    await receiver.close()
  })

  const rootOf = (trace: string) => receiver.spans.find((s) => s.traceId === traceId(trace) && s.parentSpanId === "00f067aa0ba902b7")

  it.each(cases)("$door door, $model, stream $stream: the request's span carries the gen_ai.* attributes", (c) => {
    const span = rootOf(c.trace)
    const openai = c.key === OPENAI_KEY
    expect(span?.name).toBe(`POST /v1/${c.door}`)
    expect(attr(span, "gen_ai.operation.name")).toBe("chat")
    expect(attr(span, "gen_ai.provider.name")).toBe(openai ? "openai" : "anthropic")
    expect(attr(span, "gen_ai.request.model")).toBe(c.model)
    // The provider's words: the model that answered (the account maps gpt-5.4), its own id.
    expect(attr(span, "gen_ai.response.model")).toBe(openai ? "gpt-5.4-2026-03-01" : "claude-sonnet-4-5")
    expect(attr(span, "gen_ai.response.id")).toMatch(openai ? /^resp_/ : /^msg_/)
    expect(attr(span, "gen_ai.response.finish_reasons")).toEqual([openai ? "completed" : "end_turn"])
    expect(attr(span, "gen_ai.usage.input_tokens")).toBeGreaterThan(0)
    expect(attr(span, "gen_ai.usage.output_tokens")).toBeGreaterThan(0)
    expect(attr(span, "gen_ai.usage.cache_creation.input_tokens")).toBe(0)
    const cacheRead = attr(span, "gen_ai.usage.cache_read.input_tokens")
    if (c.door === "messages" && !openai) {
      expect(cacheRead).toBeGreaterThan(0)
      expect(cacheRead).toBeLessThan(Number(attr(span, "gen_ai.usage.input_tokens")))
    } else {
      expect(cacheRead).toBe(0)
    }
  })

  it.each(cases)("$door door, $model, stream $stream: the upstream attempt names the provider, the model asked and the host", (c) => {
    const root = rootOf(c.trace)
    const attempt = receiver.spans.find((s) => s.parentSpanId === root?.spanId && s.name === "gateway.upstream_attempt")
    const openai = c.key === OPENAI_KEY
    expect(attempt?.kind).toBe(3) // CLIENT
    expect(attr(attempt, "gen_ai.provider.name")).toBe(openai ? "openai" : "anthropic")
    expect(attr(attempt, "gen_ai.request.model")).toBe(openai ? "gpt-5.4-2026-03-01" : "claude-sonnet-4-5")
    expect(attr(attempt, "server.address")).toBe("127.0.0.1")
    expect(attr(attempt, "server.port")).toBe(Number(new URL(upstream.url).port))
  })
})

describe("tracing off", () => {
  it("exports nothing and sends no traceparent upstream", async () => {
    const upstream = await startFakeUpstream()
    const receiver = await startReceiver()
    try {
      const gateway = await startTraced(upstream, receiver.url, false)
      const res = await post(gateway.url, OPENAI_KEY, { model: "gpt-5.4", input: "hi" })
      expect(res.status).toBe(200)
      await res.text()
      await gateway.runtime.dispose()
      expect(receiver.spans).toEqual([])
      expect(upstream.requests[0]?.headers["traceparent"]).toBeUndefined()
    } finally {
      await upstream.close()
      await receiver.close()
    }
  })
})
