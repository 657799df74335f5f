/**
 * src/domain/forwardHeaders.ts: which client headers go upstream, per wire format, without HTTP.
 * The socket-level check (the upstream really receives them, and never the client's credentials)
 * is test/http/forwardHeaders.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  ANTHROPIC_BETAS,
  anthropicForwardedHeaders,
  openaiAccountHeaders,
  openaiForwardedHeaders
} from "../../src/domain/forwardHeaders.js"
import type { Account } from "../../src/domain/model.js"

/** What a client may send: its credentials, both betas, OpenAI's routing headers, and noise. */
const everything = {
  authorization: "Bearer sk-client-key",
  "x-api-key": "sk-client-key",
  "x-goog-api-key": "sk-client-key",
  "openai-beta": "responses=experimental",
  "anthropic-beta": "interleaved-thinking-2025-05-14",
  "anthropic-version": "2099-01-01",
  "openai-organization": "org-client",
  "openai-project": "proj_client",
  session_id: "s-1",
  cookie: "a=b",
  "x-forwarded-for": "10.0.0.1",
  "content-type": "application/json"
}

const account = (over: Partial<Account> = {}): Account => ({
  name: "a",
  platform: "openai",
  kind: "http",
  baseUrl: "https://api.example.com/v1",
  secret: undefined,
  groups: ["g"],
  priority: 50,
  concurrency: 10,
  modelMapping: undefined,
  ...over
})

describe("openaiForwardedHeaders (OpenAI Responses upstream)", () => {
  it("forwards OpenAI-Beta only: never credentials, anthropic-beta, the client's organization or project, or anything else", () => {
    expect(openaiForwardedHeaders(everything)).toEqual({ "openai-beta": "responses=experimental" })
  })

  it("nothing to forward is undefined (no object made)", () => {
    expect(openaiForwardedHeaders({})).toBeUndefined()
    expect(openaiForwardedHeaders({ authorization: "Bearer x", "anthropic-beta": "context-1m-2025-08-07" })).toBeUndefined()
  })

  it("keeps a list as sent (trimmed); repeated headers are joined", () => {
    expect(openaiForwardedHeaders({ "openai-beta": "  responses=v1, assistants=v2 " })).toEqual({ "openai-beta": "responses=v1, assistants=v2" })
    expect(openaiForwardedHeaders({ "openai-beta": ["responses=v1", "assistants=v2"] })).toEqual({ "openai-beta": "responses=v1, assistants=v2" })
  })

  it("drops a value that is empty, not printable ASCII, or over 1024 characters", () => {
    expect(openaiForwardedHeaders({ "openai-beta": "   " })).toBeUndefined()
    expect(openaiForwardedHeaders({ "openai-beta": "responses=v1\u0000" })).toBeUndefined()
    expect(openaiForwardedHeaders({ "openai-beta": "responses=v1\ttabbed" })).toBeUndefined()
    expect(openaiForwardedHeaders({ "openai-beta": "réponses=v1" })).toBeUndefined()
    expect(openaiForwardedHeaders({ "openai-beta": "x".repeat(1025) })).toBeUndefined()
    expect(openaiForwardedHeaders({ "openai-beta": "x".repeat(1024) })).toEqual({ "openai-beta": "x".repeat(1024) })
  })
})

describe("anthropicForwardedHeaders (Anthropic Messages upstream)", () => {
  it("forwards an allowed anthropic-beta only: never credentials, the client's anthropic-version, OpenAI-Beta or anything else", () => {
    expect(anthropicForwardedHeaders(everything)).toEqual({ "anthropic-beta": "interleaved-thinking-2025-05-14" })
  })

  it("keeps the allowed names of a list, in the client's order, once each; drops the others", () => {
    const sent = "computer-use-2025-01-24, context-1m-2025-08-07,oauth-2025-04-20,Interleaved-Thinking-2025-05-14, context-1m-2025-08-07"
    expect(anthropicForwardedHeaders({ "anthropic-beta": sent })).toEqual({
      "anthropic-beta": "context-1m-2025-08-07,interleaved-thinking-2025-05-14"
    })
    expect(anthropicForwardedHeaders({ "anthropic-beta": ["fine-grained-tool-streaming-2025-05-14", "files-api-2025-04-14"] }))
      .toEqual({ "anthropic-beta": "fine-grained-tool-streaming-2025-05-14" })
  })

  it("no allowed name left (or none sent) is no header at all", () => {
    expect(anthropicForwardedHeaders({})).toBeUndefined()
    expect(anthropicForwardedHeaders({ "openai-beta": "responses=v1" })).toBeUndefined()
    expect(anthropicForwardedHeaders({ "anthropic-beta": "oauth-2025-04-20,computer-use-2025-01-24,mcp-client-2025-04-04" })).toBeUndefined()
    expect(anthropicForwardedHeaders({ "anthropic-beta": " , ," })).toBeUndefined()
  })

  it("every allowed name passes on its own (the list is the contract the docs state)", () => {
    expect([...ANTHROPIC_BETAS].sort()).toEqual([
      "context-1m-2025-08-07",
      "fine-grained-tool-streaming-2025-05-14",
      "interleaved-thinking-2025-05-14",
      "output-128k-2025-02-19",
      "structured-outputs-2025-11-13",
      "token-efficient-tools-2025-02-19"
    ])
    for (const name of ANTHROPIC_BETAS) expect(anthropicForwardedHeaders({ "anthropic-beta": name })).toEqual({ "anthropic-beta": name })
  })
})

describe("openaiAccountHeaders (the account's configured organization and project)", () => {
  it("sends what the account is configured with, and nothing when it is not", () => {
    expect(openaiAccountHeaders(account({ openaiOrganization: "org-1", openaiProject: "proj_1" })))
      .toEqual({ "openai-organization": "org-1", "openai-project": "proj_1" })
    expect(openaiAccountHeaders(account({ openaiProject: "proj_1" }))).toEqual({ "openai-project": "proj_1" })
    expect(openaiAccountHeaders(account())).toEqual({})
  })

  it("never for an account on another platform", () => {
    expect(openaiAccountHeaders(account({ platform: "anthropic", openaiOrganization: "org-1" }))).toEqual({})
  })
})
