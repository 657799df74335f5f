/**
 * A price is set for a model name (or a prefix ending in *) and nothing else: not a formula, not
 * text with spaces, quotes or control characters, at most 100 characters. Over the admin API, on SQLite
 * and PostgreSQL. A group's model list follows the same rule.
 */
import { expect, it } from "vitest"
import { expectEnvelope, json, onBothStores, send } from "./adminCalls.js"

onBothStores("price names", (r) => {
  it("a price is set for a model name or a prefix ending in *, like the names models go by", async () => {
    const price = { input: 1, output: 2 }
    for (const model of ["gpt-5.4", "gpt-5*", "claude-sonnet-4-5@20250929", "openai/gpt-4o", "ft:gpt-4o-mini:org:custom:abc123", "x".repeat(100)]) {
      const put = await json(r().admin, "PUT", `/admin/prices/${encodeURIComponent(model)}`, price)
      expect({ model, status: put.status }).toEqual({ model, status: 200 })
    }
    const refused = [
      "=HYPERLINK(\"http://evil\")",
      "+1",
      "-1",
      "@SUM(1)",
      "*",
      "gpt**",
      "gpt*-mini",
      "a b",
      "tab\there",
      "line\nbreak",
      "quote\"d",
      "naïve"
    ]
    for (const model of refused) {
      const put = await json(r().admin, "PUT", `/admin/prices/${encodeURIComponent(model)}`, price)
      expect({ model, status: put.status, code: put.json?.error?.code }).toEqual({ model, status: 400, code: "invalid_model" })
      expectEnvelope(put, 400, "invalid_model")
      expect(put.json.error.param).toBe("model")
    }
    const listed = (await send(r().admin, "GET", "/admin/prices")).json.map((p: { model: string }) => p.model)
    for (const model of refused) expect(listed).not.toContain(model)
  })

  it("a group's models are model names by the same rule", async () => {
    const ok = await json(r().admin, "POST", "/admin/groups", { name: "named", platform: "openai", models: ["gpt-5.4", "openai/gpt-4o"] })
    expect(ok.status).toBe(201)
    for (const model of ["=HYPERLINK(\"http://evil\")", "gpt 5", "gpt-5*"]) {
      const refused = await json(r().admin, "PATCH", "/admin/groups/named", { models: [model] })
      expectEnvelope(refused, 400, "invalid_request")
      expect(refused.json.error.param).toBe("models.0")
    }
    expect((await send(r().admin, "GET", "/admin/groups")).json.find((g: { name: string }) => g.name === "named").models)
      .toEqual(["gpt-5.4", "openai/gpt-4o"])
  })
})
