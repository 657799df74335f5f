/**
 * A balance may not pass the largest amount kept exactly (2^53 - 1 µ$) by top-ups, one at a time or
 * in parallel: 400 balance_too_large naming the amounts, nothing written. Over the admin API, on
 * SQLite and PostgreSQL.
 */
import { expect, it } from "vitest"
import { expectEnvelope, json, MAX_USD, onBothStores, send } from "./adminCalls.js"

onBothStores("the balance cap", (r) => {
  it("a top-up may take a balance to 2^53 - 1 µ$ and not past it; the refusal changes nothing", async () => {
    expect((await json(r().admin, "POST", "/admin/users", { name: "rich", balance_usd: "9007199200" })).status).toBe(201)
    const toMax = await json(r().admin, "POST", "/admin/users/rich/topup", { amount_usd: "54.740991" })
    expect(toMax.status).toBe(200)
    expect(toMax.json.balance_usd).toBe(Number(MAX_USD))
    for (const amount of ["0.000001", MAX_USD]) {
      const over = await json(r().admin, "POST", "/admin/users/rich/topup", { amount_usd: amount })
      expectEnvelope(over, 400, "balance_too_large")
      expect(over.json.error.param).toBe("amount_usd")
      expect(over.json.error.message).toContain(MAX_USD)
    }
    expect((await send(r().admin, "GET", "/admin/users/rich")).json.balance_usd).toBe(Number(MAX_USD))
    const audit = await send(r().admin, "GET", "/admin/audit?target=rich")
    expect(audit.json.map((a: { action: string }) => a.action)).toEqual(["user.topup", "user.create"])
    // Setting a balance is bounded by the amount itself; lower again, top-ups work.
    expect((await json(r().admin, "PUT", "/admin/users/rich/balance", { amount_usd: "10" })).json.balance_usd).toBe(10)
    expect((await json(r().admin, "POST", "/admin/users/rich/topup", { amount_usd: "1" })).json.balance_usd).toBe(11)
  })

  it("parallel top-ups that each fit but together do not: the balance never passes 2^53 - 1 µ$", async () => {
    expect((await json(r().admin, "POST", "/admin/users", { name: "racer", balance_usd: "9007199000" })).status).toBe(201)
    // Each adds 100 USD: two fit (to 9007199200), the third would pass the largest amount.
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => json(r().admin, "POST", "/admin/users/racer/topup", { amount_usd: "100" }))
    )
    expect(answers.filter((a) => a.status === 200)).toHaveLength(2)
    for (const a of answers.filter((a) => a.status !== 200)) expectEnvelope(a, 400, "balance_too_large")
    expect((await send(r().admin, "GET", "/admin/users/racer")).json.balance_usd).toBe(9007199200)
  })
})
