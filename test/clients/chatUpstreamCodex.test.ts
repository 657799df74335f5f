/**
 * Codex CLI (`codex exec`) against an `openai_chat` group, over HTTP and over the Responses
 * WebSocket: its Responses turns reach an OpenAI-compatible Chat Completions server (the fake, on
 * the real wire format) translated, and a shell tool loop runs: the server's `exec_command` call
 * runs in Codex, the output goes back as a `tool` message, and the server's answer is Codex's.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { type AccessEntry, AccessLog } from "../../src/observability/accessLog.js"
import { type ChatAnswer, isRecord, startChatUpstream, type ChatUpstream, textOf } from "../support/chatUpstream.js"
import { codexAvailable, codexBinary, runCodex } from "../support/codex.js"
import { startGateway, type TestGateway } from "../support/gateway.js"

const KEY = "sk-test-codex-chatgroup-0001"
const MODEL = "qwen3-coder"
const TOOL_WORD = "use-the-shell-tool"
const MARKER = "codex-chat-marker"
const TEST_TIMEOUT_MS = 120_000


/** Asked to use the shell, the server calls exec_command; given output with the marker, it says so. */
const script = (body: Record<string, unknown>): ChatAnswer => {
  const messages: ReadonlyArray<unknown> = Array.isArray(body["messages"]) ? body["messages"] : []
  const last = messages.at(-1)
  if (isRecord(last) && last["role"] === "tool") {
    return { _tag: "Answer", text: textOf(last["content"]).includes(MARKER) ? `The shell printed ${MARKER}` : "The shell printed nothing" }
  }
  const asked = messages.some((m) => isRecord(m) && m["role"] === "user" && textOf(m["content"]).includes(TOOL_WORD))
  const offers = Array.isArray(body["tools"]) && body["tools"].some((t) => isRecord(t) && isRecord(t["function"]) && t["function"]["name"] === "exec_command")
  if (asked && offers) return { _tag: "Answer", text: "", calls: [{ name: "exec_command", arguments: JSON.stringify({ cmd: `echo ${MARKER}` }) }] }
  return { _tag: "Answer", text: "Hello from the chat server", reasoning: "A greeting." }
}

const unavailable = codexAvailable ? "" : ` (skipped: no Codex binary at ${codexBinary})`

describe.skipIf(!codexAvailable)(`Codex through an openai_chat group${unavailable}`, () => {
  let upstream: ChatUpstream
  let gw: TestGateway
  const logged: Array<AccessEntry> = []
  const accessLog = Layer.succeed(AccessLog, { record: (e) => Effect.sync(() => void logged.push(e)) })
  beforeAll(async () => {
    upstream = await startChatUpstream(script)
    gw = await startGateway({
      services: { accessLog },
      config: {
        groups: [{ name: "local", platform: "openai_chat", models: [MODEL] }],
        users: [{ name: "alice", balance_usd: 50, concurrency: 4 }],
        keys: [{ key: KEY, user: "alice", group: "local" }],
        accounts: [{ name: "vllm", platform: "openai_chat", base_url: `${upstream.url}/v1`, groups: ["local"], model_mapping: { [MODEL]: "Qwen/Qwen3-Coder" } }]
      }
    })
  })
  afterAll(async () => {
    await gw.close()
    await upstream.close()
  })

  for (const websocket of [false, true]) {
    const transport = websocket ? "WebSocket" : "HTTP"
    it(`${transport}: answers a prompt`, async () => {
      const run = await runCodex({ baseUrl: `${gw.url}/v1`, apiKey: KEY, prompt: "say hi", model: MODEL, websocket })
      expect(run.code, run.stderr).toBe(0)
      expect(run.stdout).toContain("Hello from the chat server")
    }, TEST_TIMEOUT_MS)

    it(`${transport}: runs a shell tool loop`, async () => {
      const before = upstream.requests.length
      const from = logged.length
      const run = await runCodex({ baseUrl: `${gw.url}/v1`, apiKey: KEY, prompt: `Please ${TOOL_WORD} to print a marker`, model: MODEL, websocket })
      // Every turn went over the transport asked for.
      const turns = logged.slice(from).filter((e) => e.method === "POST")
      expect(turns.length).toBeGreaterThanOrEqual(2)
      expect(turns.every((e) => e.facts?.door === (websocket ? "responses_ws" : "responses"))).toBe(true)
      expect(run.code, run.stderr).toBe(0)
      expect(run.stdout).toContain(`The shell printed ${MARKER}`)
      const sent = upstream.requests.slice(before).map((r) => r.body)
      expect(sent.length).toBeGreaterThanOrEqual(2)
      expect(sent.every((b) => b["model"] === "Qwen/Qwen3-Coder" && b["stream"] === true)).toBe(true)
    }, TEST_TIMEOUT_MS)
  }
})
