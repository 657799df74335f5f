/**
 * Helpers for the Responses WebSocket tests: a gateway (on the platform's NodeHttpServer) in front
 * of a fake upstream, and a low-level client on the `ws`
 * package that keeps every frame it got (text parsed as JSON, binary flagged), the close code, and
 * the HTTP answer of a refused handshake.
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import WebSocket from "ws"
import { AppConfig, Settings, type SettingsShape } from "../../src/config/AppConfig.js"
import type { GatewayData } from "../../src/config/resolve.js"
import { gatewayLayer, type ServiceOverrides, type Services } from "../../src/layers.js"
import { GatewayServer } from "../../src/server/GatewayServer.js"
import { call } from "../http/helpers.js"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { fakeUpstreamConfig, fakeUpstreamEnv, testData } from "../support/gateway.js"
import { assertOpenResponses, eventIssues } from "../support/openResponses.js"

export const OA_KEY = "sk-test-openai-0001"
export const AN_KEY = "sk-test-anthropic-0001"

/** The two upstream platforms: the passthrough group `oa` and the translated group `an`. */
export const PLATFORMS = [
  { platform: "openai", key: OA_KEY, model: "gpt-5.4" },
  { platform: "anthropic", key: AN_KEY, model: "claude-sonnet-4-5" }
] as const

/**
 * The HttpServers the suites run on: the platform's NodeHttpServer (the lean server they also ran
 * on under Effect 3 is gone).
 */
export type ServerKind = "platform"
export const SERVERS: ReadonlyArray<ServerKind> = ["platform"]

export interface WsGateway {
  readonly url: string
  readonly wsUrl: string
  readonly data: GatewayData
  readonly upstream: FakeUpstream
  readonly runtime: ManagedRuntime.ManagedRuntime<Services | GatewayServer, unknown>
  readonly close: () => Promise<void>
}

/** A fake upstream and a gateway in front of it (fakeUpstreamConfig unless `config` says otherwise). */
export const startWsGateway = async (options: {
  readonly server?: ServerKind
  readonly config?: (upstreamUrl: string) => unknown
  readonly settings?: Partial<SettingsShape>
  readonly services?: ServiceOverrides
} = {}): Promise<WsGateway> => {
  const upstream = await startFakeUpstream()
  const data = testData((options.config ?? fakeUpstreamConfig)(upstream.url), fakeUpstreamEnv)
  const runtime = ManagedRuntime.make(
    gatewayLayer(options.services, { port: 0, host: "127.0.0.1" }).pipe(
      Layer.provide(Layer.mergeAll(AppConfig.layer(data, "test"), Settings.layer(options.settings)))
    )
  )
  const url = (await runtime.runPromise(Effect.service(GatewayServer))).url
  return {
    url,
    wsUrl: url.replace(/^http/, "ws"),
    data,
    upstream,
    runtime,
    close: async () => {
      await runtime.dispose()
      await upstream.close()
    }
  }
}

export type Frame = Record<string, unknown> & { readonly type: string }

export interface Received {
  readonly binary: boolean
  readonly text: string
  /** The text parsed as JSON (undefined for binary frames or text that is not JSON). */
  readonly json: Frame | undefined
  readonly at: number
}

export interface Refused {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly text: string
  readonly json: unknown
}

export const TERMINAL = ["response.completed", "response.failed", "response.incomplete", "error"]

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}

/**
 * A WebSocket client that records everything. `turn` sends one message and reads up to the terminal
 * event; `next` reads frame by frame from a cursor.
 */
export class WsClient {
  readonly received: Array<Received> = []
  closeInfo: { readonly code: number; readonly reason: string; readonly at: number } | undefined
  private cursor = 0
  private wake: Array<() => void> = []
  readonly closed: Promise<{ readonly code: number; readonly reason: string }>

  private constructor(readonly socket: WebSocket) {
    socket.on("message", (data, isBinary) => {
      const text = isBinary ? "" : Buffer.isBuffer(data) ? data.toString("utf8") : Buffer.from(data as ArrayBuffer).toString("utf8")
      this.received.push({ binary: isBinary, text, json: isBinary ? undefined : parse(text) as Frame | undefined, at: Date.now() })
      this.notify()
    })
    this.closed = new Promise((resolve) => {
      socket.on("close", (code, reason) => {
        this.closeInfo = { code, reason: reason.toString("utf8"), at: Date.now() }
        this.notify()
        resolve({ code, reason: reason.toString("utf8") })
      })
    })
    socket.on("error", () => undefined)
  }

  private notify(): void {
    const waiting = this.wake
    this.wake = []
    for (const w of waiting) w()
  }

  private changed(timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs)
      this.wake.push(() => {
        clearTimeout(timer)
        resolve(true)
      })
    })
  }

  /** Opens a connection; rejects with the HTTP answer (a `Refused`) when the server does not upgrade. */
  static connect(url: string, headers: Record<string, string> = {}): Promise<WsClient> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url, { headers, perMessageDeflate: false })
      socket.once("unexpected-response", (_req, res) => {
        const parts: Array<Buffer> = []
        res.on("data", (c: Buffer) => parts.push(c))
        res.on("end", () => {
          const text = Buffer.concat(parts).toString("utf8")
          reject(Object.assign(new Error(`refused: ${res.statusCode}`), {
            refused: { status: res.statusCode ?? 0, headers: res.headers, text, json: parse(text) } satisfies Refused
          }))
          socket.terminate()
        })
      })
      socket.once("open", () => resolve(new WsClient(socket)))
      socket.once("error", (e) => reject(e))
    })
  }

  /** The refusal a handshake got (fails when it was accepted). */
  static async refusal(url: string, headers: Record<string, string> = {}): Promise<Refused> {
    try {
      const client = await WsClient.connect(url, headers)
      client.socket.terminate()
      throw new Error("the handshake was accepted")
    } catch (e) {
      const refused = (e as { refused?: Refused }).refused
      if (refused === undefined) throw e
      return refused
    }
  }

  static withKey(gw: { readonly wsUrl: string }, key: string, path = "/v1/responses", headers: Record<string, string> = {}) {
    return WsClient.connect(`${gw.wsUrl}${path}`, { authorization: `Bearer ${key}`, ...headers })
  }

  send(message: unknown): void {
    this.socket.send(typeof message === "string" || Buffer.isBuffer(message) ? message : JSON.stringify(message))
  }

  /** The next frame after the cursor (undefined after `timeoutMs` without one, or once closed). */
  async next(timeoutMs = 5_000): Promise<Received | undefined> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const frame = this.received[this.cursor]
      if (frame !== undefined) {
        this.cursor++
        // Every event the gateway sends is checked against the Open Responses schema as it is read.
        if (frame.json !== undefined && frame.json.type !== "keepalive") {
          assertOpenResponses(eventIssues(frame.json, "websocket"), `WebSocket frame #${this.cursor - 1}`)
        }
        return frame
      }
      if (this.closeInfo !== undefined) return undefined
      const left = deadline - Date.now()
      if (left <= 0) return undefined
      await this.changed(left)
    }
  }

  /** Frames (JSON) up to and including the next terminal event; keep-alive frames are kept in `keepAlives`. */
  async readTurn(timeoutMs = 10_000): Promise<{ events: Array<Frame>; keepAlives: number }> {
    const deadline = Date.now() + timeoutMs
    const events: Array<Frame> = []
    let keepAlives = 0
    for (;;) {
      const frame = await this.next(Math.max(1, deadline - Date.now()))
      if (frame === undefined) {
        throw new Error(
          `no terminal event (closed: ${JSON.stringify(this.closeInfo)}); got ${events.map((e) => e.type).join(", ")}`
        )
      }
      if (frame.json === undefined) throw new Error(`a frame that is not JSON: ${frame.binary ? "<binary>" : frame.text}`)
      if (frame.json.type === "keepalive") {
        keepAlives++
        continue
      }
      events.push(frame.json)
      if (TERMINAL.includes(frame.json.type)) return { events, keepAlives }
    }
  }

  /** Sends `response.create` with `body` and reads its events. */
  async turn(body: Record<string, unknown>, timeoutMs = 10_000): Promise<Array<Frame>> {
    this.send({ type: "response.create", ...body })
    return (await this.readTurn(timeoutMs)).events
  }

  /** Nothing more arrives within `ms`. */
  async quiet(ms: number): Promise<boolean> {
    return (await this.next(ms)) === undefined
  }

  close(code = 1000): Promise<{ readonly code: number; readonly reason: string }> {
    if (this.closeInfo === undefined) this.socket.close(code)
    return this.closed
  }
}

/** The `response` object of a lifecycle event. */
export const responseOf = (event: Frame | undefined): Record<string, unknown> & { id: string; output: Array<Record<string, unknown>> } =>
  (event?.["response"] ?? {}) as Record<string, unknown> & { id: string; output: Array<Record<string, unknown>> }

/** The items of a turn's `response.output_item.done` events (what a Codex client keeps). */
export const outputItems = (events: ReadonlyArray<Frame>): Array<Record<string, unknown>> =>
  events.filter((e) => e.type === "response.output_item.done").map((e) => e["item"] as Record<string, unknown>)

/** The text of a turn's assistant messages. */
export const outputText = (events: ReadonlyArray<Frame>): string =>
  outputItems(events)
    .filter((i) => i["type"] === "message")
    .flatMap((i) => (i["content"] as Array<{ text?: string }>).map((c) => c.text ?? ""))
    .join("")

export interface UsageTotals {
  readonly requests: number
  readonly input_tokens: number
  readonly output_tokens: number
  readonly total_tokens: number
  readonly cost: number
}

/** The key's `/v1/usage` totals. */
export const usageTotals = async (base: string, key: string): Promise<UsageTotals> => {
  const res = await call(base, "/v1/usage", { key })
  if (res.status !== 200) throw new Error(`/v1/usage: ${res.status} ${res.text}`)
  return (res.json as { usage: { total: UsageTotals } }).usage.total
}

/** Sends a streaming POST /v1/responses and returns its SSE events (data payloads). */
export const httpStream = async (base: string, key: string, body: Record<string, unknown>): Promise<Array<Frame>> => {
  const res = await fetch(`${base}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ ...body, stream: true })
  })
  if (res.status !== 200) throw new Error(`POST /v1/responses: ${res.status} ${await res.text()}`)
  const text = await res.text()
  return text
    .split("\n\n")
    .map((block) => block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n"))
    .filter((data) => data !== "" && data !== "[DONE]")
    .map((data, i) => {
      const event = JSON.parse(data) as Frame
      assertOpenResponses(eventIssues(event), `SSE event #${i}`)
      return event
    })
}
