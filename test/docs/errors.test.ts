/**
 * docs/errors.md is the error catalogue clients and operators read: every code the source can
 * produce must be in it, every code in its tables must still exist, and where the code decides the
 * status and type on its own (the envelope mapping, the Messages door's overload), the row must say
 * the same.
 */
import { readdirSync, readFileSync } from "node:fs"
import { resolve } from "node:path"
import { describe, expect, it } from "vitest"
import { anthropicErrorOf } from "../../src/domain/anthropicError.js"
import { envelopeOf, internalError, methodNotAllowed, routeNotFound, storeUnavailable } from "../../src/domain/envelope.js"
import {
  InsufficientQuota,
  InvalidRequest,
  ModelNotFound,
  NoAvailableAccount,
  PermissionDenied,
  RateLimited,
  RequestTooLarge,
  StoreError,
  Unauthenticated,
  UpstreamFailed
} from "../../src/domain/errors.js"
import { scanCodes, sourceFiles } from "./errorCodes.js"

const ROOT = resolve(import.meta.dirname, "../..")
const doc = readFileSync(resolve(ROOT, "docs/errors.md"), "utf8")
const files = sourceFiles(ROOT)
const scan = scanCodes(files)

interface Row {
  readonly codes: ReadonlyArray<string>
  readonly status: string
  readonly type: string
}

/** Table rows whose first cell names codes: `| \`a\`, \`b\` | status | type | ... |`. */
const rows: ReadonlyArray<Row> = doc.split("\n").flatMap((line) => {
  const cells = line.split("|").slice(1, -1).map((c) => c.trim())
  const codes = [...(cells[0] ?? "").matchAll(/`([a-z][a-z0-9_]*)`/g)].map((m) => m[1]!)
  return codes.length === 0 || !/^`/.test(cells[0] ?? "") ? [] : [{ codes, status: cells[1] ?? "", type: cells[2] ?? "" }]
})
const documented = new Set(rows.flatMap((r) => r.codes))

describe("docs/errors.md", () => {
  it("the scan finds the codes of every kind of source it reads", () => {
    // One code of each pattern errorCodes.ts reads, so a pattern that stops matching is noticed.
    for (const code of ["missing_model", "invalid_stream_type", "client_closed_request", "upstream_connect_timeout",
      "api_key_disabled", "invalid_prompt", "upstream_invalid_request", "weekly_limit_exceeded", "server_error"]) {
      expect(scan.codes, code).toContain(code)
    }
    expect(scan.unexpanded).toEqual([])
  })

  it("lists every code the source can produce", () => {
    const missing = [...scan.codes].filter((code) => !documented.has(code)).sort()
    expect(missing, "codes in src/ that docs/errors.md does not list in a table").toEqual([])
  })

  it("lists no code the source no longer produces", () => {
    const stale = [...documented].filter((code) => !scan.codes.has(code)).sort()
    expect(stale, "codes in docs/errors.md that src/ no longer produces").toEqual([])
  })

  it("gives the status and type the envelope mapping gives", () => {
    const envelopes = [
      envelopeOf(new InvalidRequest({ code: "invalid_json", message: "m" })),
      envelopeOf(new RequestTooLarge({ limitBytes: 1 })),
      envelopeOf(new Unauthenticated({ code: "missing_api_key", message: "m" })),
      envelopeOf(new PermissionDenied({ code: "api_key_expired", message: "m" })),
      envelopeOf(new ModelNotFound({ model: "x" })),
      envelopeOf(new InsufficientQuota({ code: "insufficient_balance", message: "m" })),
      envelopeOf(new RateLimited({ code: "concurrency_limit_exceeded", message: "m" })),
      envelopeOf(new NoAvailableAccount({ message: "m" })),
      envelopeOf(new UpstreamFailed({ status: 0, code: "upstream_unreachable", message: "m" })),
      envelopeOf(new UpstreamFailed({ status: 429, code: "upstream_rate_limited", message: "m" })),
      envelopeOf(new StoreError({ message: "m" })),
      storeUnavailable,
      routeNotFound("GET", "/x"),
      methodNotAllowed("GET", "/v1/responses", ["POST"]),
      internalError("req_1")
    ]
    for (const e of envelopes) {
      const row = rows.find((r) => r.codes.includes(e.code))
      expect(row, e.code).toBeDefined()
      expect(row!.status.startsWith(String(e.status)), `${e.code}: status ${e.status}, documented ${row!.status}`).toBe(true)
      expect(row!.type.startsWith(`\`${e.type}\``), `${e.code}: type ${e.type}, documented ${row!.type}`).toBe(true)
    }
  })

  it("gives the Messages door's overload status and type where the code changes them", () => {
    for (const e of [
      envelopeOf(new NoAvailableAccount({ message: "m" })),
      envelopeOf(new UpstreamFailed({ status: 529, code: "upstream_overloaded", message: "m" }))
    ]) {
      const answer = anthropicErrorOf(e, "req_1")
      const row = rows.find((r) => r.codes.includes(e.code))!
      expect(row.status, e.code).toContain(`Messages: ${answer.status}`)
      expect(row.type, e.code).toContain(`Messages: \`${answer.body.error.type}\``)
    }
  })

  it("is what README points to, and README and docs/ name no file outside the repository", () => {
    const readme = readFileSync(resolve(ROOT, "README.md"), "utf8")
    expect(readme).toContain("(docs/errors.md)")
    const docs = readdirSync(resolve(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)
    for (const path of ["README.md", ...docs]) {
      const text = readFileSync(resolve(ROOT, path), "utf8")
      expect(text.includes("DESIGN.md") ? path : undefined, `${path} names DESIGN.md, which users never see`).toBeUndefined()
    }
  })
})
