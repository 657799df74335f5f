/**
 * POST /responses/compact on an Anthropic group, as Codex and the openai SDK use it: the upstream
 * model summarises the conversation in one Messages call, the client gets the spec's compacted
 * response (`response.compaction`: the user messages, then one compaction item), the call is billed
 * like any turn, and the window sent back as the next turn's input reaches the upstream with the
 * summary in it. Against the local fake Anthropic upstream (the simulator's answers, real wire format).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import OpenAI from "openai"
import { simulateMessages } from "../../src/services/upstream/simulator/messages.js"
import { COMPACTION_PROMPT } from "../../src/translate/compaction.js"
import { COMPACTED_PREAMBLE } from "../../src/translate/history.js"
import type { FakeUpstream } from "../support/fakeUpstream.js"
import { startWithFakeUpstream, type TestGateway } from "../support/gateway.js"
import { usageTotals } from "../support/messagesGateway.js"
import { waitFor } from "../http/helpers.js"
import { WsClient } from "../websocket/helpers.js"

const KEY = "sk-test-anthropic-0001"
const MODEL = "claude-sonnet-4-6"

type Json = Record<string, unknown>

/** A Codex session's history: its developer and user context, a tool round trip, an answer. */
const HISTORY = [
  { type: "message", role: "developer", content: [{ type: "input_text", text: "You are Codex, a coding agent." }] },
  { type: "message", role: "user", content: [{ type: "input_text", text: "Rename the launch checklist to LAUNCH.md" }] },
  { type: "function_call", call_id: "call_mv", name: "shell", arguments: "{\"command\":[\"git\",\"mv\",\"checklist.md\",\"LAUNCH.md\"]}" },
  { type: "function_call_output", call_id: "call_mv", output: "renamed" },
  { type: "message", role: "assistant", content: [{ type: "output_text", text: "Renamed checklist.md to LAUNCH.md." }] },
  { type: "message", role: "user", content: [{ type: "input_text", text: "Now add a rollback section" }] }
]

const SHELL_TOOL = {
  type: "function",
  name: "shell",
  description: "Runs a command",
  strict: false,
  parameters: { type: "object", properties: { command: { type: "array", items: { type: "string" } } }, required: ["command"] }
}

/** Codex's compact body (codex-api `CompactionInput` and the fields it adds): no stream. */
const codexCompactBody = {
  model: MODEL,
  instructions: "You are Codex.",
  input: HISTORY,
  tools: [SHELL_TOOL],
  parallel_tool_calls: false,
  reasoning: { effort: "high", summary: "auto" }
}

describe("POST /responses/compact on an anthropic group", () => {
  let upstream: FakeUpstream
  let gw: TestGateway
  let client: OpenAI
  let close: () => Promise<void>
  beforeAll(async () => {
    ;({ upstream, gw, close } = await startWithFakeUpstream())
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY, maxRetries: 0 })
  })
  afterAll(() => close())

  const compact = async (body: Json, path = "/v1/responses/compact") => {
    const res = await fetch(`${gw.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    return { status: res.status, type: res.headers.get("content-type"), body: (await res.json()) as Json }
  }

  it("answers the spec's compacted response, made by one summarising Messages call", async () => {
    const before = upstream.requests.length
    const { body, status, type } = await compact(codexCompactBody, "/backend-api/codex/responses/compact")
    expect(status).toBe(200)
    expect(type).toMatch(/^application\/json/)
    // CompactResource: id, object, output, created_at and usage, all required.
    expect(Object.keys(body).sort()).toEqual(["created_at", "id", "object", "output", "usage"])
    expect(body["object"]).toBe("response.compaction")
    expect(body["id"]).toMatch(/^resp_/)
    expect(Number.isInteger(body["created_at"])).toBe(true)
    const output = body["output"] as Array<Json>
    // The user messages, in order, then a single compaction item.
    expect(output.slice(0, -1).map((m) => [m["type"], m["role"], (m["content"] as Array<Json>)[0]?.["text"]])).toEqual([
      ["message", "user", "Rename the launch checklist to LAUNCH.md"],
      ["message", "user", "Now add a rollback section"]
    ])
    const item = output.at(-1)!
    expect(Object.keys(item).sort()).toEqual(["encrypted_content", "id", "type"])
    expect(item["type"]).toBe("compaction")
    expect(item["id"]).toMatch(/^cmp_/)
    expect(typeof item["encrypted_content"]).toBe("string")
    const usage = body["usage"] as { input_tokens: number; output_tokens: number; total_tokens: number; input_tokens_details: Json; output_tokens_details: Json }
    expect(usage.input_tokens).toBeGreaterThan(0)
    expect(usage.output_tokens).toBeGreaterThan(0)
    expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens)
    expect(Number.isInteger(usage.input_tokens_details["cached_tokens"])).toBe(true)
    expect(usage.output_tokens_details["reasoning_tokens"]).toBe(0)

    // One upstream call: the conversation, then the request for a summary; JSON, no thinking, no tool call.
    expect(upstream.requests.length).toBe(before + 1)
    const sent = upstream.requests.at(-1)!
    expect(sent.path).toBe("/v1/messages")
    const messages = (sent.body as { messages: Array<{ role: string; content: Array<Json> }> }).messages
    expect(sent.body).toMatchObject({ model: MODEL, stream: false, max_tokens: 8192, tool_choice: { type: "none" }, system: [{ type: "text", text: "You are Codex." }, { type: "text", text: "You are Codex, a coding agent." }] })
    expect(sent.body).not.toHaveProperty("thinking")
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user"])
    expect(messages[1]!.content[0]).toMatchObject({ type: "tool_use", name: "shell" })
    expect(messages.at(-1)!.content.map((b) => b["text"])).toEqual(["Now add a rollback section", COMPACTION_PROMPT])
  })

  it("the openai SDK's responses.compact() reads it, and a stream: true body is still answered in JSON", async () => {
    const compacted = await client.responses.compact({ model: MODEL, input: "Summarise our launch checklist" })
    expect(compacted.object).toBe("response.compaction")
    expect(compacted.output.map((o) => o.type)).toEqual(["message", "compaction"])
    const streamed = await compact({ model: MODEL, input: "hello", stream: true })
    expect([streamed.status, streamed.type, streamed.body["object"]]).toEqual([200, "application/json", "response.compaction"])
  })

  it("is billed like any call: one request with the usage the answer reported", async () => {
    const before = await usageTotals(gw, KEY)
    const { body } = await compact({ model: MODEL, input: HISTORY })
    const usage = body["usage"] as { input_tokens: number; output_tokens: number }
    await waitFor(async () => (await usageTotals(gw, KEY)).requests >= before.requests + 1)
    const after = await usageTotals(gw, KEY)
    expect(after.requests - before.requests).toBe(1)
    expect(after.input_tokens - before.input_tokens).toBe(usage.input_tokens)
    expect(after.output_tokens - before.output_tokens).toBe(usage.output_tokens)
    expect(after.cost).toBeGreaterThan(before.cost)
  })

  it("Codex's round trip: the window sent back as input reaches the upstream with the model's summary", async () => {
    const { body } = await compact(codexCompactBody)
    const summaryCall = upstream.requests.at(-1)!
    // What the fake upstream's model wrote as the summary (the simulator is deterministic).
    const written = (simulateMessages(summaryCall.body as Json).json["content"] as Array<Json>)
      .flatMap((b) => b["type"] === "text" ? [b["text"] as string] : []).join("")
    expect(written).not.toBe("")
    const window = body["output"] as Array<Json>

    // Codex's next turn: its window, then the new user message; over JSON, SSE and the WebSocket.
    const next = [...window, { type: "message", role: "user", content: [{ type: "input_text", text: "Go on with the rollback" }] }]
    const input = next as unknown as OpenAI.Responses.ResponseInput
    const answer = await client.responses.create({ model: MODEL, instructions: "You are Codex.", input })
    expect(answer.status).toBe("completed")
    const streamed = await client.responses.stream({ model: MODEL, input }).finalResponse()
    expect(streamed.status).toBe("completed")
    // And over the WebSocket Codex prefers: a full create after a compaction, the window as input.
    const ws = await WsClient.withKey({ wsUrl: gw.url.replace(/^http/, "ws") }, KEY)
    try {
      const events = await ws.turn({ type: "response.create", model: MODEL, input: next })
      expect(events.at(-1)?.type).toBe("response.completed")
    } finally {
      await ws.close()
    }
    for (const sent of upstream.requests.slice(-3)) {
      const messages = (sent.body as { messages: Array<{ role: string; content: Array<Json> }> }).messages
      expect(messages).toHaveLength(1)
      expect(messages[0]!.role).toBe("user")
      expect(messages[0]!.content.map((b) => b["text"])).toEqual([
        "Rename the launch checklist to LAUNCH.md",
        "Now add a rollback section",
        COMPACTED_PREAMBLE + written,
        "Go on with the rollback"
      ])
    }

    // Compacting again: the earlier summary is part of what is summarised, and the new window has one item.
    const again = await compact({ model: MODEL, input: next })
    const resummarised = JSON.stringify(upstream.requests.at(-1)!.body)
    expect(resummarised).toContain(JSON.stringify(COMPACTED_PREAMBLE + written).slice(1, -1))
    expect((again.body["output"] as Array<Json>).filter((o) => o["type"] === "compaction")).toHaveLength(1)
  })

  it("a compaction item that is not ours (an OpenAI group's ciphertext) is refused, before any upstream call", async () => {
    const before = upstream.requests.length
    const refused: unknown = await client.responses.create({
      model: MODEL,
      input: [
        { type: "compaction", encrypted_content: "gAAAAABforeign-ciphertext" } as unknown as OpenAI.Responses.ResponseInputItem,
        { role: "user", content: "Carry on" }
      ]
    }).then(() => undefined, (e: unknown) => e)
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError)
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).message).toContain("compaction")
    expect(upstream.requests.length).toBe(before)
  })
})
