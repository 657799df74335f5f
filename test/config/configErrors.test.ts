/**
 * A config file's mistakes, all at once: the schema's (every misspelt field with the name it was
 * meant to be, a near-miss value with the one it was meant to be) and, when the file is whole but
 * for misspelt fields, the cross-reference problems of the same file; `nearest` picks the
 * suggestion.
 */
import { Result } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { parseConfigText } from "../../src/config/load.js"
import { editDistance, nearest } from "../../src/config/suggest.js"

const problemsOf = (text: string, env: Record<string, string> = {}) => {
  const result = parseConfigText(text, "x.yaml", env)
  if (Result.isSuccess(result)) throw new Error("expected the config to be refused")
  return result.failure
}

describe("config file problems", () => {
  it("misspelt fields and broken references come in one report, in file order then references", () => {
    const e = problemsOf(`
groups:
  - name: team
    platform: openai
    moderaton: observe
users:
  - name: alice
keys:
  - key: sk-team-alice-0000000001
    user: alice
    group: teem
accounts:
  - name: up
    platform: openai
    api_key_env: UP_KEY
    groups: [team]
    concurency: 4
`)
    expect(e.problems).toEqual([
      "groups[0].moderaton: unknown field 'moderaton'; did you mean 'moderation'?",
      "accounts[0].concurency: unknown field 'concurency'; did you mean 'concurrency'?",
      "keys[0].group: unknown group 'teem'",
      "accounts[0].api_key_env: environment variable UP_KEY is not set"
    ])
    expect(e.message).toBe(`invalid configuration in x.yaml (4 problems):\n  - ${e.problems.join("\n  - ")}`)
  })

  it("values the schema refuses and broken references come in one report too", () => {
    const e = problemsOf(`
groups:
  - name: team
    platform: opneai
users:
  - name: alice
    balance_usd: lots
keys:
  - key: sk-team-alice-0000000001
    user: bob
    group: team
accounts:
  - name: up
    platform: openai
    kind: simulatr
    groups: [team, ghost]
subscriptions:
  - user: alice
    group: gold
`)
    expect(e.problems).toEqual([
      `groups[0].platform: Expected "openai" | "anthropic" | "antigravity" | "openai_chat", got "opneai"; did you mean 'openai'?`,
      'users[0].balance_usd: Expected number | undefined, got "lots"',
      `accounts[0].kind: Expected "http" | "simulator", got "simulatr"; did you mean 'simulator'?`,
      "keys[0].user: unknown user 'bob'",
      "accounts[0].groups[1]: unknown group 'ghost'",
      "subscriptions[0].group: unknown group 'gold'"
    ])
  })

  it("a field with no near name lists the fields allowed there", () => {
    const e = problemsOf("groups: []\nusers: [{ name: alice, colour: blue }]\nkeys: []\naccounts: []\n")
    expect(e.problems).toEqual(["users[0].colour: unknown field 'colour' (the fields here: name, balance_usd, concurrency, rpm_limit, tpm_limit)"])
  })

  it("a misspelt top-level section is named too", () => {
    const e = problemsOf("groups: []\nusers: []\nkeys: []\naccounts: []\nsubscriptons: []\n")
    expect(e.problems).toEqual(["subscriptons: unknown field 'subscriptons'; did you mean 'subscriptions'?"])
  })
})

describe("nearest", () => {
  const fields = ["name", "platform", "priority", "concurrency", "groups", "model_mapping", "base_url", "api_key_env", "kind"]

  it("suggests the name one slip away: a letter missing, added, changed, or two swapped", () => {
    expect(nearest("prority", fields)).toBe("priority")
    expect(nearest("priorrity", fields)).toBe("priority")
    expect(nearest("prioirty", fields)).toBe("priority")
    expect(nearest("concurency", fields)).toBe("concurrency")
    expect(nearest("Info", ["Trace", "Debug", "Info"])).toBe("Info")
    expect(nearest("info", ["Trace", "Debug", "Info"])).toBe("Info")
  })

  it("suggests nothing for a name far from all, or equally near two", () => {
    expect(nearest("colour", fields)).toBeUndefined()
    expect(nearest("kin", ["kind", "king"])).toBeUndefined()
  })

  it("a known name is its own suggestion; a suggestion is always a known name within the allowed edits", () => {
    fc.assert(
      fc.property(fc.constantFrom(...fields), fc.string({ maxLength: 12 }), (field, typed) => {
        expect(nearest(field, fields)).toBe(field)
        const guess = nearest(typed, fields)
        if (guess !== undefined) {
          expect(fields).toContain(guess)
          expect(editDistance(typed.toLowerCase(), guess)).toBeLessThanOrEqual(Math.min(3, Math.max(1, Math.floor(typed.length / 3))))
        }
      })
    )
  })

  it("edit distance is a distance: symmetric, zero only for equal strings, a swap is one edit", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 }), (a, b) => {
        expect(editDistance(a, b)).toBe(editDistance(b, a))
        expect(editDistance(a, b) === 0).toBe(a === b)
      })
    )
    expect(editDistance("ab", "ba")).toBe(1)
  })
})
