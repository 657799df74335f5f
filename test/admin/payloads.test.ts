/**
 * What the admin API does with payloads an operator (or a script) gets wrong, over its socket on
 * SQLite and PostgreSQL: a body that is not JSON, or JSON no parser of ours should take (NaN,
 * Infinity, very deep), is 400 in the envelope; a field the endpoint does not have (a typo such as
 * `quota` for `quota_usd`) is refused naming it, not ignored.
 */
import { expect, it } from "vitest"
import { deep, expectEnvelope, json, onBothStores, send } from "./adminCalls.js"

onBothStores("admin payloads", (r) => {
  it("a body that is not JSON, or JSON with NaN, Infinity or 5,000 levels, is 400 in the envelope", async () => {
    const bodies = [
      "{bad",
      "{\"name\":\"x1\",\"balance_usd\":NaN}",
      "{\"name\":\"x2\",\"balance_usd\":Infinity}",
      "{\"name\":\"x3\",\"balance_usd\":-Infinity}",
      "{\"name\":\"x4\",\"balance_usd\":1e400}",
      deep(5_000),
      `{"name":"x5","balance_usd":${deep(5_000)}}`,
      "[".repeat(5_000) + "]".repeat(5_000),
      "",
      "null"
    ]
    for (const body of bodies) expectEnvelope(await send(r().admin, "POST", "/admin/users", body), 400, "invalid_request")
    // A client that names no JSON type (curl -d, a form, a text body) hears what to send, in the envelope.
    for (const type of ["application/x-www-form-urlencoded", "text/plain;charset=UTF-8", "multipart/form-data; boundary=x"]) {
      const a = await send(r().admin, "POST", "/admin/users", "{\"name\":\"typed\"}", type)
      expectEnvelope(a, 400, "invalid_request")
      expect(a.json.error.message).toMatch(/application\/json/)
    }
    const nested = `{"name":"x6","platform":"openai","groups":["oa"],"model_mapping":${deep(5_000)}}`
    expectEnvelope(await send(r().admin, "POST", "/admin/accounts", nested), 400, "invalid_request")
    // Nothing of it was created.
    const users = await send(r().admin, "GET", "/admin/users")
    expect(users.json.map((u: { name: string }) => u.name)).toEqual(["erin"])
  })

  it("a field the endpoint does not have is refused, named, and nothing changes", async () => {
    const typo = await json(r().admin, "POST", "/admin/keys", { user: "erin", group: "oa", name: "typo", quota: 5 })
    expectEnvelope(typo, 400, "invalid_request")
    expect(typo.json.error.param).toBe("quota")
    expect(typo.json.error.message).toBe("quota: not a field of this request (check its name)")
    expectEnvelope(await send(r().admin, "GET", "/admin/keys/typo"), 404, "key_not_found")

    const patch = await json(r().admin, "PATCH", "/admin/users/erin", { concurrency: 7, rpm: 10 })
    expectEnvelope(patch, 400, "invalid_request")
    expect(patch.json.error.param).toBe("rpm")
    expect((await send(r().admin, "GET", "/admin/users/erin")).json.concurrency).toBe(50)

    const topUp = await json(r().admin, "POST", "/admin/users/erin/topup", { amount_usd: 1, amount: 100 })
    expectEnvelope(topUp, 400, "invalid_request")
    expect(topUp.json.error.param).toBe("amount")
    expect((await send(r().admin, "GET", "/admin/users/erin")).json.balance_usd).toBe(50)

    const group = await json(r().admin, "POST", "/admin/groups", { name: "g-typo", platform: "openai", daily_limit: 5 })
    expectEnvelope(group, 400, "invalid_request")
    expect(group.json.error.param).toBe("daily_limit")

    // The fields it has still work.
    expect((await json(r().admin, "POST", "/admin/keys", { user: "erin", group: "oa", name: "typo", quota_usd: 5 })).status).toBe(201)
  })
})
