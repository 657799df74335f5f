/**
 * The admin listener's access log (src/admin/callLog.ts, AccessLog's `admin request` line): one
 * line per call, accepted or refused (401 bad token, 400 payload, 404), with the route's template,
 * the status and code, the actor the audit trail knows (`admin-api` once the token was accepted,
 * `anonymous` otherwise) and the operator's own `x-admin-actor` name, sanitised; and never the
 * admin token, wherever the caller put it.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Logger, ManagedRuntime, Redacted } from "effect"
import fc from "fast-check"
import { AdminServer } from "../../src/admin/AdminServer.js"
import { sanitiseOperator } from "../../src/admin/callLog.js"
import { LiveStore } from "../../src/admin/LiveStore.js"
import { AppConfig, Settings } from "../../src/config/AppConfig.js"
import { adminOn, gatewayLayer } from "../../src/layers.js"
import { type AdminAccessEntry, AccessLog, adminAccessLine, recordAdminCall } from "../../src/observability/accessLog.js"
import { formatLine } from "../../src/observability/logger.js"
import { GatewayServer } from "../../src/server/GatewayServer.js"
import * as SchedulerInProcess from "../../src/services/scheduler/inProcess.js"
import { sqlServices } from "../../src/store/Database.js"
import { waitFor } from "../http/helpers.js"
import { type Backend, sqliteBackend } from "../store/harness.js"
import { ADMIN_TOKEN, adminGatewayConfig, respond } from "../support/adminGateway.js"
import { testData } from "../support/gateway.js"

interface Line {
  readonly message: string
  readonly logLevel: string
  readonly annotations: Record<string, unknown>
}

describe("admin API calls in the access log (the stdout writer's lines)", () => {
  let backend: Backend
  let runtime: ManagedRuntime.ManagedRuntime<AdminServer | GatewayServer, unknown>
  let admin: string
  let gateway: string
  const written: Array<string> = []
  const lines = () => written.map((l) => JSON.parse(l) as Line)
  const adminLines = () => lines().filter((l) => l.message === "admin request")

  beforeAll(async () => {
    backend = sqliteBackend()
    const sql = sqlServices((await backend.fresh()).target, { reportOrphans: false })
    // As test/support/adminGateway.ts wires it (and npm start), with the access log captured.
    const layer = AdminServer.layer({ port: 0, host: "127.0.0.1", token: Redacted.make(ADMIN_TOKEN) }).pipe(
      Layer.provide(adminOn(sql.store, LiveStore.layer)),
      Layer.provideMerge(gatewayLayer({
        keyRepo: sql.keyRepo,
        quota: sql.quota,
        scheduler: SchedulerInProcess.layer.pipe(Layer.provide(sql.upstreamAccounts)),
        accessLog: AccessLog.layerWriter((line) => written.push(line))
      }))
    ).pipe(Layer.provide(AppConfig.layer(testData(adminGatewayConfig), "test")), Layer.provide(Settings.layer({})))
    runtime = ManagedRuntime.make(layer)
    gateway = (await runtime.runPromise(Effect.service(GatewayServer))).url
    admin = (await runtime.runPromise(Effect.service(AdminServer))).url
  }, 60_000)
  afterAll(async () => {
    await runtime?.dispose()
    await backend?.cleanup()
  })

  const call = async (
    method: string,
    path: string,
    options: { readonly token?: string; readonly actor?: string; readonly body?: unknown } = {}
  ) => {
    const headers: Record<string, string> = { authorization: `Bearer ${options.token ?? ADMIN_TOKEN}` }
    if (options.actor !== undefined) headers["x-admin-actor"] = options.actor
    if (options.body !== undefined) headers["content-type"] = "application/json"
    const res = await fetch(`${admin}${path}`, {
      method,
      headers,
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) })
    })
    await res.text()
    const id = res.headers.get("x-request-id")
    expect(id).toMatch(/^[0-9a-f-]{36}$/)
    const mine = adminLines().filter((l) => l.annotations["request_id"] === id)
    // Written before the answer is sent: there is exactly one by the time the client has it.
    expect(mine).toHaveLength(1)
    expect(mine[0]?.logLevel).toBe("INFO")
    return { status: res.status, line: mine[0]!.annotations }
  }

  /** Nothing anywhere in what was written carries the token or the header that brings it. */
  const expectNoToken = () => {
    const all = written.join("")
    expect(all).not.toContain(ADMIN_TOKEN)
    expect(all.toLowerCase()).not.toContain("authorization")
    expect(all.toLowerCase()).not.toContain("bearer")
  }

  it("an accepted call: the route's template, 200 ok, the audit trail's actor and the operator's sanitised name", async () => {
    const { status, line } = await call("GET", "/admin/users/erin?x=1", { actor: " Alice Smith \"boss\"\t/ops " })
    expect(status).toBe(200)
    expect(line).toMatchObject({
      method: "GET",
      path: "/admin/users/erin",
      route: "/admin/users/:name",
      status: 200,
      code: "ok",
      actor: "admin-api",
      operator: "Alice_Smith_boss_ops"
    })
    expect(typeof line["duration_ms"]).toBe("number")
    // Its actor is the one its changes are audited under.
    const created = await call("POST", "/admin/users", { body: { name: "frank" } })
    expect(created).toMatchObject({ status: 201, line: { route: "/admin/users", status: 201, code: "ok", actor: "admin-api" } })
    expect(created.line).not.toHaveProperty("operator")
    const audit = await fetch(`${admin}/admin/audit?target=frank`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    const rows = (await audit.json()) as ReadonlyArray<{ actor: string }>
    expect(rows.map((r) => r.actor)).toEqual(["admin-api"])
    expectNoToken()
  })

  it("a wrong token: 401 invalid_admin_token, by an anonymous caller, and neither token is logged", async () => {
    const wrong = "wrong-admin-token-abcdefghijkl"
    const { status, line } = await call("GET", "/admin/users", { token: wrong, actor: "mallory" })
    expect(status).toBe(401)
    expect(line).toMatchObject({ route: "/admin/users", status: 401, code: "invalid_admin_token", actor: "anonymous", operator: "mallory" })
    expect(written.join("")).not.toContain(wrong)
    expectNoToken()
  })

  it("a payload that does not decode: 400 invalid_request on its route", async () => {
    const { status, line } = await call("POST", "/admin/users", { body: { name: "frank", quota: 5 } })
    expect(status).toBe(400)
    expect(line).toMatchObject({ method: "POST", route: "/admin/users", status: 400, code: "invalid_request", actor: "admin-api" })
    expectNoToken()
  })

  it("404s: a name that does not exist, and a path with no route", async () => {
    const missing = await call("PATCH", "/admin/users/nobody", { body: { concurrency: 2 } })
    expect(missing).toMatchObject({ status: 404, line: { route: "/admin/users/:name", path: "/admin/users/nobody", code: "user_not_found" } })
    const noRoute = await call("GET", "/admin/nothing-here")
    expect(noRoute).toMatchObject({ status: 404, line: { route: "/*", path: "/admin/nothing-here", code: "route_not_found" } })
  })

  it("a token typed into the path or into x-admin-actor is redacted", async () => {
    const inPath = await call("GET", `/admin/users/${ADMIN_TOKEN}`)
    expect(inPath.status).toBe(404)
    expect(inPath.line).toMatchObject({ path: "[redacted]", route: "/admin/users/:name" })
    const inActor = await call("GET", "/admin/users", { actor: `ops ${ADMIN_TOKEN}` })
    expect(inActor).toMatchObject({ status: 200, line: { actor: "admin-api", operator: "[redacted]" } })
    expectNoToken()
  })

  it("the gateway's own lines are unchanged: `request`, without an actor", async () => {
    expect(await respond(gateway, "sk-admin-config-key-0001")).toBe(200)
    // The gateway's line follows the answer's settlement.
    await waitFor(() => lines().some((l) => l.message === "request"))
    const gatewayLines = lines().filter((l) => l.message === "request")
    expect(gatewayLines).toHaveLength(1)
    expect(gatewayLines[0]?.annotations).toMatchObject({ path: "/v1/responses", status: 200, key: "from-file" })
    expect(gatewayLines[0]?.annotations).not.toHaveProperty("actor")
    expect(gatewayLines[0]?.annotations).not.toHaveProperty("route")
    expectNoToken()
  })
})

describe("the admin line's writers", () => {
  const entry: AdminAccessEntry = {
    requestId: "5f0e8e8c-0000-4000-8000-000000000009",
    method: "PATCH",
    path: "/admin/users/zoë \"q\"",
    route: "/admin/users/:name",
    status: 404,
    code: "user_not_found",
    durationMs: 3,
    actor: "admin-api",
    operator: "alice"
  }
  const viaLogger = (log: typeof AccessLog.Service): string => {
    const out: Array<string> = []
    Effect.runSync(recordAdminCall(log, entry).pipe(Effect.provide(Logger.layer([Logger.make((o) => out.push(formatLine(o)))]))))
    expect(out).toHaveLength(1)
    return out[0]!
  }

  it("stdout's line is the logger's line, valid JSON for awkward text; an AccessLog without recordAdmin logs through the logger", () => {
    const direct = JSON.parse(adminAccessLine(entry, new Date("2026-01-02T03:04:05.000Z"))) as Record<string, unknown>
    const logged = JSON.parse(viaLogger(Effect.runSync(Effect.service(AccessLog).pipe(Effect.provide(AccessLog.layerLogger))))) as Record<string, unknown>
    expect(direct).toEqual({ ...logged, timestamp: "2026-01-02T03:04:05.000Z" })
    expect(direct).toMatchObject({
      message: "admin request",
      annotations: { path: entry.path, route: entry.route, status: 404, actor: "admin-api", operator: "alice" }
    })
    // An embedder's AccessLog written before admin lines existed still gets them, through its logger.
    const older = JSON.parse(viaLogger({ record: () => Effect.void })) as Record<string, unknown>
    expect({ ...older, timestamp: "-" }).toEqual({ ...logged, timestamp: "-" })
  })

  it("layerTest hands admin entries over as values when asked", () => {
    const entries: Array<never> = []
    const adminEntries: Array<AdminAccessEntry> = []
    Effect.runSync(AccessLog.use((log) => recordAdminCall(log, entry)).pipe(Effect.provide(AccessLog.layerTest(entries, adminEntries))))
    expect(adminEntries).toEqual([entry])
    expect(entries).toEqual([])
  })

  it("x-admin-actor, sanitised: only letters, digits and _.@-, at most 64, or nothing", () => {
    fc.assert(fc.property(fc.string({ maxLength: 300 }), (header) => {
      const out = sanitiseOperator(header)
      if (out !== undefined) expect(out).toMatch(/^[A-Za-z0-9_.@-]{1,64}$/)
      if (/^[A-Za-z0-9_.@-]{1,64}$/.test(header) && /[A-Za-z0-9]/.test(header)) expect(out).toBe(header)
    }))
    expect(sanitiseOperator(undefined)).toBeUndefined()
    expect(sanitiseOperator(" \n\t ")).toBeUndefined()
  })
})
