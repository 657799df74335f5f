/**
 * Claude Code itself (`claude -p`) as the client of the gateway's Messages door, on an
 * anthropic-platform group (passthrough to a Messages upstream) and an openai-platform group
 * (translated to a Responses upstream). Each group has two accounts, each its own scripted upstream,
 * so a session that drifts between accounts shows. A recording proxy between Claude Code and the
 * gateway keeps what Claude Code sent and what the gateway answered, for comparison and for the
 * failure messages.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { claudeAvailable, claudeBinary, runClaude, type ClaudeRunOptions, type ClaudeRunResult } from "../support/claudeCode.js"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { startRecordingProxy, type RecordedExchange, type RecordingProxy } from "../support/recordingProxy.js"
import { startScriptedUpstream, toolOutputs, type Script, type ScriptedRequest, type ScriptedUpstream } from "../support/scriptedUpstream.js"

const ANTHROPIC_KEY = "sk-test-claude-code-anthropic"
const OPENAI_KEY = "sk-test-claude-code-openai"
const ANTHROPIC_MODEL = "claude-sonnet-4-6"
const OPENAI_MODEL = "gpt-5.4"
const TOOL_OUTPUT = "gateway-ok"
const RUN_TIMEOUT_MS = 45_000
const TEST_TIMEOUT_MS = 60_000

/** Every run's prompt carries a nonce; it is how requests are traced back to the run that made them. */
const NONCE = /mgrun-[0-9a-f]{12}/
const newNonce = (): string => `mgrun-${randomUUID().replaceAll("-", "").slice(0, 12)}`
const TOOL_WORD = "use-the-bash-tool"
/** Claude Code runs the Bash call the upstream asks for only when the command is allowed up front. */
const toolArgs = { extraArgs: ["--allowedTools", "Bash(echo:*)"] }

const bodyText = (body: unknown): string => (typeof body === "string" ? body : JSON.stringify(body) ?? "")

/**
 * The model every upstream plays: asked to use the tool, it calls Bash with `echo gateway-ok`; given
 * the tool's output, it quotes it; otherwise it greets the run by its nonce and names its account.
 */
const modelFor = (account: string): Script => (request) => {
  const text = bodyText(request.body)
  const nonce = NONCE.exec(text)?.[0] ?? "no-nonce"
  const output = toolOutputs(request.body)
  // Claude Code appends a <system-reminder> to the tool's output: the command's own output is the first line.
  if (output !== undefined) return { _tag: "Text", text: `The tool said: ${output.trim().split("\n")[0] ?? ""} (${nonce})` }
  if (text.includes(TOOL_WORD)) {
    return { _tag: "ToolCall", name: "Bash", input: { command: `echo ${TOOL_OUTPUT}`, description: "Print a marker" } }
  }
  return { _tag: "Text", text: `Hello ${nonce} from ${account}` }
}

interface Account {
  readonly name: string
  readonly upstream: ScriptedUpstream
}

const header = (request: ScriptedRequest | RecordedExchange, name: string): string | undefined => {
  const headers = "requestHeaders" in request ? request.requestHeaders : request.headers
  const v = headers[name]
  return typeof v === "string" ? v : v?.[0]
}

/** What a failed run looked like from both ends, so a failure names the gateway's answer. */
const explain = (run: ClaudeRunResult, exchanges: ReadonlyArray<RecordedExchange>): string =>
  [
    `claude exit ${String(run.code)}${run.timedOut ? " (timed out)" : ""}`,
    `stdout: ${run.stdout}`,
    `stderr: ${run.stderr}`,
    ...exchanges.map((e) =>
      `${e.method} ${e.url} -> ${String(e.status)} ${JSON.stringify(e.responseHeaders ?? {})}\n${(e.responseBody ?? e.error ?? "").slice(0, 2000)}`
    )
  ].join("\n")

/** Only a missing binary (another OS or CPU: npm installs the native one of its platform) skips these. */
const unavailable = claudeAvailable ? "" : ` (skipped: no Claude Code binary at ${claudeBinary})`

describe.skipIf(!claudeAvailable)(`Claude Code through the gateway's Messages door${unavailable}`, () => {
  let anthropicAccounts: ReadonlyArray<Account>
  let openaiAccounts: ReadonlyArray<Account>
  let gw: TestGateway
  let proxy: RecordingProxy

  beforeAll(async () => {
    const account = async (name: string): Promise<Account> => ({ name, upstream: await startScriptedUpstream(modelFor(name)) })
    anthropicAccounts = [await account("anthropic-1"), await account("anthropic-2")]
    openaiAccounts = [await account("openai-1"), await account("openai-2")]
    gw = await startGateway({
      config: {
        groups: [
          { name: "cc-an", platform: "anthropic" },
          { name: "cc-oa", platform: "openai", models: [OPENAI_MODEL] }
        ],
        users: [{ name: "cc", balance_usd: 50, concurrency: 8 }],
        keys: [
          { key: ANTHROPIC_KEY, user: "cc", group: "cc-an", name: "cc-an-key" },
          { key: OPENAI_KEY, user: "cc", group: "cc-oa", name: "cc-oa-key" }
        ],
        accounts: [
          ...anthropicAccounts.map((a) => ({
            name: a.name,
            platform: "anthropic",
            base_url: a.upstream.url,
            api_key_env: "CC_ANTHROPIC_UPSTREAM_KEY",
            groups: ["cc-an"]
          })),
          ...openaiAccounts.map((a) => ({
            name: a.name,
            platform: "openai",
            base_url: `${a.upstream.url}/v1`,
            api_key_env: "CC_OPENAI_UPSTREAM_KEY",
            groups: ["cc-oa"]
          }))
        ]
      },
      env: { CC_ANTHROPIC_UPSTREAM_KEY: "sk-ant-upstream-cc", CC_OPENAI_UPSTREAM_KEY: "sk-openai-upstream-cc" }
    })
    proxy = await startRecordingProxy(gw.url)
  })

  afterAll(async () => {
    await proxy.close()
    await gw.close()
    for (const a of [...anthropicAccounts, ...openaiAccounts]) await a.upstream.close()
  })

  interface Run {
    readonly result: ClaudeRunResult
    readonly nonce: string
    /** What Claude Code sent to the gateway and what it answered, for this run only. */
    readonly exchanges: ReadonlyArray<RecordedExchange>
    /** Upstream requests of this run, with the account that received each. */
    readonly upstreamRequests: ReadonlyArray<{ readonly account: string; readonly request: ScriptedRequest }>
  }

  const claude = async (
    group: "anthropic" | "openai",
    prompt: string,
    extra: Partial<Pick<ClaudeRunOptions, "extraArgs" | "apiKey">> = {}
  ): Promise<Run> => {
    const nonce = newNonce()
    const result = await runClaude({
      baseUrl: proxy.url,
      ...(group === "anthropic" ? { apiKey: ANTHROPIC_KEY } : { authToken: OPENAI_KEY }),
      model: group === "anthropic" ? ANTHROPIC_MODEL : OPENAI_MODEL,
      prompt: `${prompt} (${nonce})`,
      timeoutMs: RUN_TIMEOUT_MS,
      ...extra
    })
    const accounts = group === "anthropic" ? anthropicAccounts : openaiAccounts
    return {
      result,
      nonce,
      exchanges: proxy.exchanges.filter((e) => e.requestBody.includes(nonce)),
      upstreamRequests: accounts.flatMap((a) =>
        a.upstream.requests.filter((r) => bodyText(r.body).includes(nonce)).map((request) => ({ account: a.name, request }))
      )
    }
  }

  const expectAnswered = (run: Run, text: string): void => {
    expect(run.result.stdout, explain(run.result, run.exchanges)).toContain(text)
    expect(run.result.code, explain(run.result, run.exchanges)).toBe(0)
  }

  it("anthropic group: prints the upstream's answer; anthropic-beta and anthropic-version reach the upstream as sent", async () => {
    const run = await claude("anthropic", "say hi")
    expectAnswered(run, `Hello ${run.nonce} from anthropic-`)
    const sent = run.exchanges.find((e) => e.url.startsWith("/v1/messages"))
    const received = run.upstreamRequests[0]?.request
    expect(sent).toBeDefined()
    expect(received?.path).toBe("/v1/messages")
    if (sent === undefined || received === undefined) return
    expect(header(sent, "anthropic-beta")).toMatch(/claude-code-/)
    expect(header(received, "anthropic-beta")).toBe(header(sent, "anthropic-beta"))
    expect(header(received, "anthropic-version")).toBe(header(sent, "anthropic-version"))
    // The account's own credential upstream, never the gateway key Claude Code holds.
    expect(header(received, "x-api-key")).toBe("sk-ant-upstream-cc")
  }, TEST_TIMEOUT_MS)

  it("anthropic group: Claude Code's x-claude-code-session-id reaches the upstream as sent", async () => {
    const run = await claude("anthropic", "say hi")
    expectAnswered(run, `Hello ${run.nonce}`)
    const sent = run.exchanges.map((e) => header(e, "x-claude-code-session-id"))
    expect(sent[0]).toMatch(/^[0-9a-f-]{36}$/)
    expect(run.upstreamRequests.map((r) => header(r.request, "x-claude-code-session-id"))).toEqual(sent)
  }, TEST_TIMEOUT_MS)

  it("openai group: prints the Responses upstream's answer, translated", async () => {
    const run = await claude("openai", "say hi")
    expectAnswered(run, `Hello ${run.nonce} from openai-`)
    const received = run.upstreamRequests[0]?.request
    expect(received?.path).toBe("/v1/responses")
    expect(header(received!, "authorization")).toBe("Bearer sk-openai-upstream-cc")
  }, TEST_TIMEOUT_MS)

  it("a key the gateway does not know: Claude Code reports an invalid API key and exits 1; no upstream is asked", async () => {
    const run = await claude("anthropic", "say hi", { apiKey: "sk-test-claude-code-unknown" })
    expect(run.exchanges.map((e) => e.status), explain(run.result, run.exchanges)).toEqual([401])
    expect(run.result.stdout).toMatch(/invalid api key/i)
    expect(run.result.code).toBe(1)
    expect(run.upstreamRequests).toEqual([])
  }, TEST_TIMEOUT_MS)

  for (const group of ["anthropic", "openai"] as const) {
    it(`${group} group: a Bash tool round trip runs the tool and sends its output back upstream`, async () => {
      const run = await claude(group, `Please ${TOOL_WORD} to print a marker`, toolArgs)
      expectAnswered(run, `The tool said: ${TOOL_OUTPUT} (${run.nonce})`)
      expect(run.upstreamRequests.length, explain(run.result, run.exchanges)).toBeGreaterThanOrEqual(2)
      const last = run.upstreamRequests[run.upstreamRequests.length - 1]!.request
      expect(toolOutputs(last.body)).toContain(TOOL_OUTPUT)
    }, TEST_TIMEOUT_MS)
  }

  for (const group of ["anthropic", "openai"] as const) {
    it(`${group} group: every request of one run stays on one account, under one session id`, async () => {
      // Two multi-request runs: each keeps to its account whichever account each one lands on.
      const runs = [
        await claude(group, `Please ${TOOL_WORD} once`, toolArgs),
        await claude(group, `Please ${TOOL_WORD} again`, toolArgs)
      ]
      for (const run of runs) {
        expectAnswered(run, `The tool said: ${TOOL_OUTPUT}`)
        expect(run.upstreamRequests.length).toBeGreaterThanOrEqual(2)
        expect(new Set(run.upstreamRequests.map((r) => r.account)).size, explain(run.result, run.exchanges)).toBe(1)
        expect(new Set(run.exchanges.map((e) => header(e, "x-claude-code-session-id"))).size).toBe(1)
      }
      const [first, second] = runs
      expect(header(first!.exchanges[0]!, "x-claude-code-session-id")).not.toBe(header(second!.exchanges[0]!, "x-claude-code-session-id"))
    }, TEST_TIMEOUT_MS * 2)
  }
})

describe.skipIf(!claudeAvailable)(`Claude Code against a scripted upstream directly (the harness itself)${unavailable}`, () => {
  let upstream: ScriptedUpstream
  beforeAll(async () => {
    upstream = await startScriptedUpstream(modelFor("stand-in"))
  })
  afterAll(() => upstream.close())

  it("prints the answer and exits 0, in a fresh HOME, with the key as x-api-key", async () => {
    const nonce = newNonce()
    const result = await runClaude({ baseUrl: upstream.url, apiKey: "sk-direct", prompt: `say hi (${nonce})`, model: ANTHROPIC_MODEL, timeoutMs: RUN_TIMEOUT_MS })
    expect(result.stdout, result.stderr).toContain(`Hello ${nonce} from stand-in`)
    expect(result.code).toBe(0)
    const sent = upstream.requests.filter((r) => bodyText(r.body).includes(nonce))
    expect(sent.map((r) => `${r.method} ${r.path}?${r.query}`)).toEqual(["POST /v1/messages?beta=true"])
    // Nothing else either: no models list, no count_tokens, no profile look-up.
    expect(upstream.requests.every((r) => r.method === "POST" && r.path === "/v1/messages")).toBe(true)
    expect(header(sent[0]!, "x-api-key")).toBe("sk-direct")
  }, TEST_TIMEOUT_MS)

  it("runs an allowed Bash tool and answers from its output", async () => {
    const nonce = newNonce()
    const result = await runClaude({
      baseUrl: upstream.url,
      authToken: "sk-direct-bearer",
      prompt: `Please ${TOOL_WORD} (${nonce})`,
      model: ANTHROPIC_MODEL,
      timeoutMs: RUN_TIMEOUT_MS,
      ...toolArgs
    })
    expect(result.stdout, result.stderr).toContain(`The tool said: ${TOOL_OUTPUT} (${nonce})`)
    expect(result.code).toBe(0)
    const sent = upstream.requests.filter((r) => bodyText(r.body).includes(nonce))
    expect(sent).toHaveLength(2)
    expect(header(sent[0]!, "authorization")).toBe("Bearer sk-direct-bearer")
  }, TEST_TIMEOUT_MS)
})
