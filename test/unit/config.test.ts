/**
 * src/config/load.ts `parseConfigText`: YAML -> Schema -> cross-references. A bad file fails with
 * messages that name the field path; keys are stored hashed only.
 */
import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { type ConfigError, parseConfigText } from "../../src/config/load.js"
import type { GatewayData } from "../../src/config/resolve.js"

const GOOD = `
groups:
  - name: oa
    platform: openai
    models: [gpt-5.4]
  - name: an
    platform: anthropic
    billing: subscription
users:
  - name: alice
    balance_usd: 12.5
keys:
  - key: sk-literal-secret-key-0001
    user: alice
    group: oa
    quota_usd: 3
    expires_at: "2099-06-01T00:00:00Z"
  - key_sha256: ${"ab".repeat(32)}
    user: alice
    group: an
    name: hashed-key
accounts:
  - name: up
    platform: openai
    base_url: https://api.example.com/v1/
    api_key_env: UPSTREAM_KEY
    groups: [oa]
    model_mapping: { gpt-5.4: gpt-5.4-2026-03-01 }
`

const ENV = { UPSTREAM_KEY: "sk-upstream-from-env" }

const ok = (text: string, env: Record<string, string> = ENV): GatewayData =>
  Result.getOrThrowWith(parseConfigText(text, "test.yaml", env), (e) => new Error(e.message))

const problems = (text: string, env: Record<string, string> = ENV): ConfigError => {
  const result = parseConfigText(text, "test.yaml", env)
  if (Result.isSuccess(result)) throw new Error("expected the config to be refused")
  return result.failure
}

/** GOOD with one line replaced (the first occurrence). */
const edit = (from: string, to: string) => {
  if (!GOOD.includes(from)) throw new Error(`not in GOOD: ${from}`)
  return GOOD.replace(from, to)
}

describe("parseConfigText", () => {
  it("reads a good file into the runtime model", () => {
    const data = ok(GOOD)
    expect([...data.groups.keys()]).toEqual(["oa", "an"])
    expect(data.groups.get("an")).toMatchObject({ platform: "anthropic", billing: "subscription", moderation: "off", allowImageGeneration: false })
    expect(data.users.get("alice")).toMatchObject({ balanceMicros: 12_500_000, concurrency: 5 })
    expect(data.keys[0]).toMatchObject({ userName: "alice", groupName: "oa", status: "active", quotaMicros: 3_000_000 })
    expect(data.keys[0]?.expiresAt?.toISOString()).toBe("2099-06-01T00:00:00.000Z")
    expect(data.keys[1]).toMatchObject({ id: "hashed-key", sha256: "ab".repeat(32) })
    expect(data.accounts[0]).toMatchObject({ baseUrl: "https://api.example.com/v1", kind: "http", priority: 50 })
  })

  it("stores keys hashed: the sha256 of the literal, and the literal nowhere", () => {
    const data = ok(GOOD)
    const key = data.keys[0]
    expect(key?.sha256).toBe(createHash("sha256").update("sk-literal-secret-key-0001").digest("hex"))
    expect(key?.prefix.length).toBeLessThan(12)
    expect(JSON.stringify(key)).not.toContain("sk-literal-secret-key-0001")
    expect(JSON.stringify(data.keys)).not.toContain("secret-key")
  })

  it("keeps account secrets out of every printable form", () => {
    const data = ok(GOOD)
    const account = data.accounts[0]
    expect(JSON.stringify(account)).not.toContain("sk-upstream-from-env")
    expect(String(account?.secret)).not.toContain("sk-upstream-from-env")
  })

  it("unknown platform: names groups[0].platform", () => {
    const e = problems(edit("platform: openai", "platform: azure"))
    expect(e.problems.some((p) => p.startsWith("groups[0].platform"))).toBe(true)
    expect(e.message).toContain("test.yaml")
  })

  it("a key referencing an unknown group or user: names keys[i].group / keys[i].user", () => {
    const e = problems(edit("    group: an\n", "    group: nope\n"))
    expect(e.problems).toContain("keys[1].group: unknown group 'nope'")
    const u = problems(edit("    user: alice\n    group: oa", "    user: bob\n    group: oa"))
    expect(u.problems).toContain("keys[0].user: unknown user 'bob'")
  })

  it("an account whose api_key_env is not set: names accounts[0].api_key_env", () => {
    const e = problems(GOOD, {})
    expect(e.problems).toEqual(["accounts[0].api_key_env: environment variable UPSTREAM_KEY is not set"])
    expect(problems(GOOD, { UPSTREAM_KEY: "" }).problems[0]).toMatch(/^accounts\[0\]\.api_key_env/)
  })

  it("both key and key_sha256 (or neither): names keys[i]", () => {
    const both = problems(edit("  - key: sk-literal-secret-key-0001\n", `  - key: sk-literal-secret-key-0001\n    key_sha256: ${"cd".repeat(32)}\n`))
    expect(both.problems).toContain("keys[0]: exactly one of 'key' or 'key_sha256' is required")
    const neither = problems(edit("  - key: sk-literal-secret-key-0001\n", "  - name: nothing\n"))
    expect(neither.problems).toContain("keys[0]: exactly one of 'key' or 'key_sha256' is required")
  })

  it("type errors and unknown fields name their path", () => {
    expect(problems(edit("balance_usd: 12.5", "balance_usd: lots")).problems.some((p) => p.startsWith("users[0].balance_usd"))).toBe(true)
    expect(problems(edit("quota_usd: 3", "quota_usd: -1")).problems.some((p) => p.startsWith("keys[0].quota_usd"))).toBe(true)
    expect(problems(edit("    models: [gpt-5.4]", "    modles: [gpt-5.4]")).problems.some((p) => p.startsWith("groups[0].modles"))).toBe(true)
    expect(problems(edit("base_url: https://api.example.com/v1/", "base_url: ftp://x")).problems.some((p) => p.startsWith("accounts[0].base_url"))).toBe(true)
    expect(problems(edit("key_sha256: ", "key_sha256: XYZ")).problems.some((p) => p.startsWith("keys[1].key_sha256"))).toBe(true)
  })

  it("lists every problem at once", () => {
    const e = problems(edit("platform: openai", "platform: azure").replace("balance_usd: 12.5", "balance_usd: lots"))
    expect(e.problems.length).toBeGreaterThanOrEqual(2)
  })

  it("cross-reference problems: duplicates, unknown account groups", () => {
    const dupGroup = problems(edit("  - name: an\n    platform: anthropic", "  - name: oa\n    platform: anthropic"))
    expect(dupGroup.problems.some((p) => p.startsWith("groups[1].name"))).toBe(true)
    const accountGroup = problems(edit("    groups: [oa]", "    groups: [oa, ghost]"))
    expect(accountGroup.problems).toContain("accounts[0].groups[1]: unknown group 'ghost'")
    const dupKey = problems(edit("  - key_sha256: ", `  - key: sk-literal-secret-key-0001\n    name: k2\n    user: alice\n    group: oa\n  - key_sha256: `))
    expect(dupKey.problems.some((p) => p.startsWith("keys[1]"))).toBe(true)
  })

  it("not YAML: one clear problem", () => {
    const e = problems("groups: [unclosed\n  - : :")
    expect(e.problems[0]).toMatch(/^not valid YAML/)
  })

  it("unnamed keys get distinct ids even when their visible prefixes match", () => {
    const data = ok(`
groups: [{ name: g, platform: openai }]
users: [{ name: u }]
keys:
  - { key: sk-proj-aaaaaaaaaaaaaaaa, user: u, group: g }
  - { key: sk-proj-bbbbbbbbbbbbbbbb, user: u, group: g }
`)
    expect(data.keys[0]?.prefix).toBe(data.keys[1]?.prefix)
    expect(data.keys[0]?.id).not.toBe(data.keys[1]?.id)
    expect(data.keys.map((k) => k.id).join(" ")).not.toContain("aaaa")
  })

  it("openai_organization / openai_project: kept on an OpenAI account, absent when not set, refused elsewhere or malformed", () => {
    const data = ok(edit("    groups: [oa]\n", "    groups: [oa]\n    openai_organization: org-abc123\n    openai_project: proj_xyz\n"))
    expect(data.accounts[0]).toMatchObject({ openaiOrganization: "org-abc123", openaiProject: "proj_xyz" })
    expect(ok(GOOD).accounts[0]).not.toHaveProperty("openaiOrganization")
    expect(ok(GOOD).accounts[0]).not.toHaveProperty("openaiProject")
    const anthropic = problems(`${GOOD}  - name: claude
    platform: anthropic
    api_key_env: UPSTREAM_KEY
    groups: [an]
    openai_organization: org-abc123
`)
    expect(anthropic.problems).toEqual(["accounts[1].openai_organization: only for accounts on the openai platform"])
    const spaced = problems(edit("    groups: [oa]\n", "    groups: [oa]\n    openai_project: proj xyz\n"))
    expect(spaced.problems.some((p) => p.startsWith("accounts[0].openai_project"))).toBe(true)
  })
})
