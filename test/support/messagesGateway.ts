/**
 * A gateway for the Messages door tests, on the scripted upstream (messagesUpstream.ts), with the
 * same layout for both platforms so a test runs as a describe.each over them:
 * - group `<p>` (one account), `<p>-pair` (two accounts, for sticky sessions), `<p>-cut` and
 *   `<p>-busy` (one account each, for failures that may cool their account down);
 * - keys `sk-msg-<p>-<purpose>`, one purpose per test concern, so usage totals never mix (`rpm`:
 *   rpm_limit 1, `solo`: concurrency 1);
 * - price overrides with a cache-read price far below the input price, so a test can tell a
 *   cache read billed as one from one billed as input.
 */
import Anthropic from "@anthropic-ai/sdk"
import type { SettingsShape } from "../../src/config/AppConfig.js"
import { startGateway, type TestGateway } from "./gateway.js"
import { type MessagesUpstream, startMessagesUpstream } from "./messagesUpstream.js"

export interface Door {
  readonly platform: "anthropic" | "openai"
  /** Group-name prefix: `an` or `oa`. */
  readonly p: "an" | "oa"
  readonly model: string
  /** Whether the group passes Messages through (Anthropic) rather than translating it. */
  readonly passthrough: boolean
  /** A model the group's main account maps to another upstream name. */
  readonly mapped: { readonly requested: string; readonly upstream: string }
}

export const DOORS: ReadonlyArray<Door> = [
  {
    platform: "anthropic",
    p: "an",
    model: "claude-sonnet-4-6",
    passthrough: true,
    mapped: { requested: "claude-haiku-4-5", upstream: "claude-haiku-4-5-20251001" }
  },
  {
    platform: "openai",
    p: "oa",
    model: "gpt-5.4",
    passthrough: false,
    mapped: { requested: "gpt-5.4-mini", upstream: "gpt-5.4-mini-2026-03-01" }
  }
]

export type Purpose = "main" | "rpm" | "solo" | "usage" | "abort" | "count" | "pair" | "cut" | "busy"

const GROUP_OF: Readonly<Record<Purpose, "" | "-pair" | "-cut" | "-busy">> = {
  main: "",
  rpm: "",
  solo: "",
  usage: "",
  abort: "",
  count: "",
  pair: "-pair",
  cut: "-cut",
  busy: "-busy"
}

export const keyFor = (door: Door, purpose: Purpose): string => `sk-msg-${door.p}-${purpose}`

/** The credential an account sends upstream (what the scripted upstream records). */
export const accountCredential = (door: Door, account: string): string => `sk-up-${door.p}-${account}`

/** USD per million tokens: the cache-read price is a tenth of the input price. */
export const PRICE = { input: 10, output: 20, cache_read: 1, cache_write: 12.5 } as const

/** The cost in USD /v1/usage should show for usage in the gateway's meaning (input includes cache). */
export const expectedCost = (u: { input: number; cacheRead: number; cacheWrite: number; output: number }): number =>
  ((u.input - u.cacheRead - u.cacheWrite) * PRICE.input + u.cacheRead * PRICE.cache_read + u.cacheWrite * PRICE.cache_write +
    u.output * PRICE.output) / 1e6

const envName = (door: Door, account: string): string => `MSG_${door.p}_${account}`.toUpperCase().replace(/-/g, "_")

export const messagesConfig = (upstreamUrl: string) => {
  const groups: Array<Record<string, unknown>> = []
  const keys: Array<Record<string, unknown>> = []
  const accounts: Array<Record<string, unknown>> = []
  const env: Record<string, string> = {}
  for (const door of DOORS) {
    const models = [door.model, door.mapped.requested]
    for (const suffix of ["", "-pair", "-cut", "-busy"]) groups.push({ name: `${door.p}${suffix}`, platform: door.platform, models })
    const account = (name: string, group: string, mapping?: Record<string, string>) => {
      env[envName(door, name)] = accountCredential(door, name)
      accounts.push({
        name: `${door.p}-${name}`,
        platform: door.platform,
        base_url: door.platform === "anthropic" ? upstreamUrl : `${upstreamUrl}/v1`,
        api_key_env: envName(door, name),
        groups: [group],
        ...(mapping === undefined ? {} : { model_mapping: mapping })
      })
    }
    account("main", door.p, { [door.model]: door.model, [door.mapped.requested]: door.mapped.upstream })
    account("pair-a", `${door.p}-pair`)
    account("pair-b", `${door.p}-pair`)
    account("cut", `${door.p}-cut`)
    account("busy", `${door.p}-busy`)
    for (const purpose of Object.keys(GROUP_OF) as Array<Purpose>) {
      keys.push({
        key: keyFor(door, purpose),
        user: "alice",
        group: `${door.p}${GROUP_OF[purpose]}`,
        name: `${door.p}-${purpose}`,
        ...(purpose === "rpm" ? { rpm_limit: 1 } : purpose === "solo" ? { concurrency: 1 } : {})
      })
    }
  }
  const prices = DOORS.map((d) => ({ model: d.model, ...PRICE }))
  return { config: { groups, users: [{ name: "alice", balance_usd: 100, concurrency: 16 }], keys, accounts, prices }, env }
}

export interface MessagesSetup {
  readonly upstream: MessagesUpstream
  readonly gw: TestGateway
  readonly close: () => Promise<void>
}

export const startMessagesGateway = async (settings: Partial<SettingsShape> = {}): Promise<MessagesSetup> => {
  const upstream = await startMessagesUpstream()
  const { config, env } = messagesConfig(upstream.url)
  const gw = await startGateway({ config, env, settings })
  return {
    upstream,
    gw,
    close: async () => {
      await gw.close()
      await upstream.close()
    }
  }
}

/** The real SDK against the gateway, no retries (a retry would hide which answer came first). */
export const sdk = (gw: TestGateway, key: string, options: { readonly headers?: Record<string, string> } = {}): Anthropic =>
  new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0, ...(options.headers === undefined ? {} : { defaultHeaders: options.headers }) })

export interface UsageTotals {
  readonly requests: number
  readonly input_tokens: number
  readonly output_tokens: number
  readonly cache_read_tokens: number
  readonly cache_creation_tokens: number
  readonly total_tokens: number
  readonly cost: number
}

/** The key's all-time totals from GET /v1/usage. */
export const usageTotals = async (gw: TestGateway, key: string): Promise<UsageTotals> => {
  const res = await fetch(`${gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })
  if (res.status !== 200) throw new Error(`GET /v1/usage: ${res.status} ${await res.text()}`)
  return ((await res.json()) as { usage: { total: UsageTotals } }).usage.total
}

export interface SseFrame {
  readonly event: string | undefined
  readonly data: Record<string, unknown>
}

/** An SSE body split into frames (`event:` line and the JSON of its `data:` line). */
export const sseFrames = (text: string): Array<SseFrame> =>
  text.split("\n\n").filter((f) => f.trim() !== "").map((frame) => {
    const event = /^event: ?(.*)$/m.exec(frame)?.[1]
    const data = frame.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n")
    return { event, data: JSON.parse(data) as Record<string, unknown> }
  })

/** POST a Messages body (a string goes as it is) with Anthropic's headers, as a raw client would. */
export const postMessages = (
  gw: TestGateway,
  key: string,
  body: unknown,
  options: { readonly path?: string; readonly headers?: Record<string, string>; readonly signal?: AbortSignal } = {}
): Promise<Response> =>
  fetch(`${gw.url}${options.path ?? "/v1/messages"}`, {
    method: "POST",
    headers: { "x-api-key": key, "anthropic-version": "2023-06-01", "content-type": "application/json", ...options.headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...(options.signal === undefined ? {} : { signal: options.signal })
  })
