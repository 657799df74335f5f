/**
 * Claude Code (`claude -p`) against an `openai_chat` group: its Messages requests reach an
 * OpenAI-compatible Chat Completions server (the fake, on the real wire format) translated through
 * Responses, and a Bash tool loop runs: the server's tool call becomes Claude Code's tool_use, the
 * tool's output goes back as a `tool` message, and the server's answer to it is what Claude prints.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { type ChatAnswer, isRecord, startChatUpstream, type ChatUpstream, textOf } from "../support/chatUpstream.js"
import { claudeAvailable, claudeBinary, runClaude } from "../support/claudeCode.js"
import { startGateway, type TestGateway } from "../support/gateway.js"

const KEY = "sk-test-claude-chatgroup-0001"
const MODEL = "claude-sonnet-4-6"
const TOOL_WORD = "use-the-bash-tool"
const MARKER = "chat-server-marker"
const TEST_TIMEOUT_MS = 120_000


/** The model the server plays: asked to use the tool, it calls Bash; given its output, it quotes the first line. */
const script = (body: Record<string, unknown>): ChatAnswer => {
  const messages: ReadonlyArray<unknown> = Array.isArray(body["messages"]) ? body["messages"] : []
  const last = messages.at(-1)
  if (isRecord(last) && last["role"] === "tool") return { _tag: "Answer", text: `The tool said: ${textOf(last["content"]).trim().split("\n")[0] ?? ""}` }
  const asked = messages.some((m) => isRecord(m) && m["role"] === "user" && textOf(m["content"]).includes(TOOL_WORD))
  const offersBash = Array.isArray(body["tools"]) && body["tools"].some((t) => isRecord(t) && isRecord(t["function"]) && t["function"]["name"] === "Bash")
  if (asked && offersBash) {
    return { _tag: "Answer", text: "", calls: [{ name: "Bash", arguments: JSON.stringify({ command: `echo ${MARKER}`, description: "Print a marker" }) }] }
  }
  return { _tag: "Answer", text: "Hello from the chat server", reasoning: "A greeting." }
}

const unavailable = claudeAvailable ? "" : ` (skipped: no Claude Code binary at ${claudeBinary})`

describe.skipIf(!claudeAvailable)(`Claude Code through an openai_chat group${unavailable}`, () => {
  let upstream: ChatUpstream
  let gw: TestGateway
  beforeAll(async () => {
    upstream = await startChatUpstream(script)
    gw = await startGateway({
      config: {
        groups: [{ name: "local", platform: "openai_chat", models: [MODEL] }],
        users: [{ name: "alice", balance_usd: 50, concurrency: 4 }],
        keys: [{ key: KEY, user: "alice", group: "local" }],
        accounts: [{ name: "ollama", platform: "openai_chat", base_url: `${upstream.url}/v1`, groups: ["local"], model_mapping: { [MODEL]: "qwen3:32b" } }]
      }
    })
  })
  afterAll(async () => {
    await gw.close()
    await upstream.close()
  })

  it("answers a prompt", async () => {
    const run = await runClaude({ baseUrl: gw.url, apiKey: KEY, prompt: "say hi", model: MODEL })
    expect(run.code, run.stderr + run.stdout).toBe(0)
    expect(run.stdout).toContain("Hello from the chat server")
  }, TEST_TIMEOUT_MS)

  it("runs a Bash tool loop: the server's call runs, its output goes back as a tool message", async () => {
    const before = upstream.requests.length
    const run = await runClaude({
      baseUrl: gw.url,
      apiKey: KEY,
      prompt: `Please ${TOOL_WORD} to print a marker`,
      model: MODEL,
      extraArgs: ["--allowedTools", "Bash(echo:*)"]
    })
    expect(run.code, run.stderr + run.stdout).toBe(0)
    expect(run.stdout).toContain(`The tool said: ${MARKER}`)
    const sent = upstream.requests.slice(before).map((r) => r.body)
    const toolMessages = sent.flatMap((b) => (Array.isArray(b["messages"]) ? b["messages"] : [])).filter((m) => isRecord(m) && m["role"] === "tool")
    expect(toolMessages.some((m) => isRecord(m) && textOf(m["content"]).includes(MARKER))).toBe(true)
    expect(sent.every((b) => b["model"] === "qwen3:32b")).toBe(true)
  }, TEST_TIMEOUT_MS)
})
