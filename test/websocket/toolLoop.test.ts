/**
 * Issue 19's "done when": a Codex-style multi-turn tool loop over the Responses WebSocket, chained by
 * previous_response_id and sending only the new items, produces the same final answers and the same
 * usage totals as the same conversation over HTTP with the full input each time, on both platforms
 * (the passthrough group and the Messages translation) and both HttpServers. The WebSocket side is
 * driven by the openai SDK's own client (`ResponsesWS`); the upstream must hear the whole expanded
 * conversation on every turn, byte for byte what the HTTP client sent it.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import OpenAI from "openai"
import { ResponsesWS } from "openai/resources/responses/ws"
import { checkResponsesStream } from "../support/responsesGrammar.js"
import { fakeUpstreamConfig } from "../support/gateway.js"
import { type Frame, httpStream, outputItems, outputText, responseOf, SERVERS, startWsGateway, TERMINAL, usageTotals, type WsGateway } from "./helpers.js"

const KEYS = {
  openai: { ws: "sk-test-ws-oa-0001", http: "sk-test-http-oa-0001", group: "oa", model: "gpt-5.4" },
  anthropic: { ws: "sk-test-ws-an-0001", http: "sk-test-http-an-0001", group: "an", model: "claude-sonnet-4-5" }
} as const

const config = (upstreamUrl: string) => {
  const base = fakeUpstreamConfig(upstreamUrl)
  return {
    ...base,
    keys: [
      ...base.keys,
      ...Object.values(KEYS).flatMap((k) => [
        { key: k.ws, user: "alice", group: k.group, name: `${k.group}-ws` },
        { key: k.http, user: "alice", group: k.group, name: `${k.group}-http` }
      ])
    ]
  }
}

const tools = [{
  type: "function",
  name: "read_file",
  description: "Read a file of the workspace",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"], additionalProperties: false },
  strict: true
}]

/** What Codex resends on every message (§2.1): model, instructions, tools, settings. */
const settings = (model: string) => ({
  model,
  instructions: "You are a coding agent. Use tools when you need them.",
  tools,
  tool_choice: "auto",
  parallel_tool_calls: false,
  store: false
})

const user = (text: string) => ({ type: "message", role: "user", content: [{ type: "input_text", text }] })

/** The new items of each step: a question, the tool's answer, another question, its tool answer. */
const step = (i: number, callId: string | undefined): Array<Record<string, unknown>> => {
  switch (i) {
    case 0:
      return [user("What does src/main.ts export?")]
    case 2:
      return [user("And what about src/util.ts?")]
    default:
      if (callId === undefined) throw new Error(`step ${i}: no function_call to answer`)
      return [{ type: "function_call_output", call_id: callId, output: `file contents #${i}: export const answer = ${i * 21}` }]
  }
}

const STEPS = 4

/** One create over the SDK's WebSocket client, up to its terminal event. */
const wsTurn = (ws: ResponsesWS, body: Record<string, unknown>): Promise<Array<Frame>> =>
  new Promise((resolve, reject) => {
    const events: Array<Frame> = []
    const timer = setTimeout(() => reject(new Error(`no terminal event; got ${events.map((e) => e.type).join(", ")}`)), 10_000)
    const onEvent = (event: unknown) => {
      const e = event as Frame
      events.push(e)
      if (TERMINAL.includes(e.type)) {
        clearTimeout(timer)
        ws.off("event", onEvent)
        resolve(events)
      }
    }
    ws.on("event", onEvent)
    ws.send({ type: "response.create", ...body } as Parameters<ResponsesWS["send"]>[0])
  })

const lastCallId = (items: ReadonlyArray<Record<string, unknown>>): string | undefined => {
  const call = items.filter((i) => i["type"] === "function_call").at(-1)
  return typeof call?.["call_id"] === "string" ? call["call_id"] : undefined
}

describe.each(SERVERS)("a Codex-style tool loop over WebSocket equals the same loop over HTTP (%s server)", (server) => {
  let gw: WsGateway
  beforeAll(async () => {
    gw = await startWsGateway({ server, config })
  })
  afterAll(() => gw.close())

  for (const [platform, k] of Object.entries(KEYS)) {
    it(`${platform}: same answers, same upstream bodies, same usage`, async () => {
      // Over HTTP: the client keeps the history and sends all of it every time.
      const httpAnswers: Array<Array<Record<string, unknown>>> = []
      const httpUpstream: Array<unknown> = []
      let history: Array<Record<string, unknown>> = []
      for (let i = 0; i < STEPS; i++) {
        history = [...history, ...step(i, lastCallId(httpAnswers.at(-1) ?? []))]
        const from = gw.upstream.requests.length
        const events = await httpStream(gw.url, k.http, { ...settings(k.model), input: history })
        expect(events.at(-1)?.type).toBe("response.completed")
        expect(gw.upstream.requests.length).toBe(from + 1)
        httpUpstream.push(gw.upstream.requests.at(-1)?.body)
        const items = outputItems(events)
        httpAnswers.push(items)
        history = [...history, ...items]
      }
      // The loop did what a tool loop does: call, answer, call, answer.
      expect(httpAnswers.map((items) => items.map((i) => i["type"]))).toEqual([
        ["function_call"],
        ["message"],
        ["function_call"],
        ["message"]
      ])

      // Over WebSocket: a warm-up, then each turn sends only its new items and chains.
      const client = new OpenAI({ apiKey: k.ws, baseURL: `${gw.url}/v1` })
      const ws = new ResponsesWS(client)
      ws.on("error", () => undefined) // error frames are asserted from the events
      const wsAnswers: Array<Array<Record<string, unknown>>> = []
      const wsUpstream: Array<unknown> = []
      try {
        const warm = await wsTurn(ws, { ...settings(k.model), input: [], generate: false })
        expect(warm.map((e) => e.type)).toEqual(["response.created", "response.completed"])
        let previous = responseOf(warm.at(-1)).id
        for (let i = 0; i < STEPS; i++) {
          const from = gw.upstream.requests.length
          const events = await wsTurn(ws, {
            ...settings(k.model),
            input: step(i, lastCallId(wsAnswers.at(-1) ?? [])),
            previous_response_id: previous
          })
          expect(events.at(-1)?.type).toBe("response.completed")
          expect(checkResponsesStream(events)).toEqual([])
          expect(gw.upstream.requests.length).toBe(from + 1)
          wsUpstream.push(gw.upstream.requests.at(-1)?.body)
          wsAnswers.push(outputItems(events))
          const completed = responseOf(events.at(-1))
          // The completed response's output is what the output_item.done events carried.
          expect(completed.output).toEqual(outputItems(events))
          previous = completed.id
        }
      } finally {
        ws.close()
      }

      // The upstream heard the same full conversation each time, the WS-only fields left out; each
      // loop's turns name one prompt cache (the connection's session, the conversation's prefix).
      const cacheKeys = (bodies: ReadonlyArray<unknown>) => new Set(bodies.map((b) => (b as Record<string, unknown>)["prompt_cache_key"]))
      const withoutCacheKey = (bodies: ReadonlyArray<unknown>) =>
        bodies.map((b) => Object.fromEntries(Object.entries(b as Record<string, unknown>).filter(([k]) => k !== "prompt_cache_key")))
      expect(withoutCacheKey(wsUpstream)).toEqual(withoutCacheKey(httpUpstream))
      if (platform === "openai") {
        expect(cacheKeys(wsUpstream).size).toBe(1)
        expect(cacheKeys(httpUpstream).size).toBe(1)
      }
      for (const body of wsUpstream) {
        const sent = JSON.stringify(body)
        expect(sent).not.toContain("previous_response_id")
        expect(sent).not.toContain("\"generate\"")
        expect(sent).not.toContain("response.create")
      }
      // Same answers: the text and the tool calls (name, arguments, call id).
      const shape = (answers: Array<Array<Record<string, unknown>>>) =>
        answers.map((items) =>
          items.map((i) =>
            i["type"] === "function_call"
              ? { type: i["type"], name: i["name"], arguments: i["arguments"], call_id: i["call_id"] }
              : { type: i["type"], text: outputText([{ type: "response.output_item.done", item: i }]) }
          )
        )
      expect(shape(wsAnswers)).toEqual(shape(httpAnswers))
      expect(outputText([{ type: "response.output_item.done", item: wsAnswers.at(-1)?.[0] }])).toContain("file contents #3")

      // Same usage: requests, tokens and cost.
      const wsUsage = await usageTotals(gw.url, k.ws)
      const httpUsage = await usageTotals(gw.url, k.http)
      expect(wsUsage.requests).toBe(STEPS)
      expect(wsUsage).toEqual(httpUsage)
    })
  }
})
