/**
 * The admin API as a script calls it, for the admin suites: raw bodies with any content type, the
 * envelope checked, one gateway per suite on SQLite and (when reachable) PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect } from "vitest"
import { type Backend, postgresBackend, postgresReachable, sqliteBackend } from "../store/harness.js"
import { ADMIN_TOKEN, type GatewayWithAdmin, startWithAdmin } from "../support/adminGateway.js"

export interface Answer {
  readonly status: number
  readonly contentType: string | null
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- test reads of JSON answers
  readonly json: any
}

export const send = async (
  base: string,
  method: string,
  path: string,
  body?: string,
  contentType: string | null = "application/json"
): Promise<Answer> => {
  const headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` }
  if (contentType !== null) headers["content-type"] = contentType
  const res = await fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body }) })
  const text = await res.text()
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = { unparsed: text }
  }
  return { status: res.status, contentType: res.headers.get("content-type"), json }
}

export const json = (base: string, method: string, path: string, body: unknown) => send(base, method, path, JSON.stringify(body))

export const expectEnvelope = (a: Answer, status: number, code: string) => {
  expect({ status: a.status, code: a.json?.error?.code }).toEqual({ status, code })
  expect(a.contentType).toContain("application/json")
  expect(typeof a.json.error.message).toBe("string")
  expect(typeof a.json.error.type).toBe("string")
}

export const deep = (depth: number) => "{\"a\":".repeat(depth) + "1" + "}".repeat(depth)

/** 2^53 - 1 µ$ in USD, as a decimal string. */
export const MAX_USD = "9007199254.740991"

/**
 * `suite` on SQLite and, when reachable, PostgreSQL, each with a gateway and its admin API on a
 * fresh database (adminGateway.ts's config: user erin with 50 USD, groups oa, an, team-sub).
 */
export const onBothStores = (title: string, suite: (running: () => GatewayWithAdmin) => void) => {
  const run = (makeBackend: () => Backend) => {
    let backend: Backend
    let r: GatewayWithAdmin
    beforeAll(async () => {
      backend = makeBackend()
      r = await startWithAdmin(await backend.fresh())
    }, 60_000)
    afterAll(async () => {
      await r?.close()
      await backend?.cleanup()
    })
    suite(() => r)
  }
  describe(`${title} on SQLite`, () => run(sqliteBackend))
  describe.skipIf(!pgReachable)(`${title} on PostgreSQL`, () => run(postgresBackend))
}

const pgReachable = await postgresReachable()
