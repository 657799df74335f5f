/**
 * A gateway and the admin API on one SQL Store, as `npm start` wires them, on 127.0.0.1 ports,
 * with simulator accounts: for the admin suites and the dashboard's browser tests.
 */
import { ConfigProvider, Effect, Layer, Logger, ManagedRuntime, Redacted } from "effect"
import { AdminServer } from "../../src/admin/AdminServer.js"
import { LiveStore } from "../../src/admin/LiveStore.js"
import { type AccountKeySettingsShape, accountKeySettingsLayer, AppConfig, Settings } from "../../src/config/AppConfig.js"
import { adminOn, gatewayLayer } from "../../src/layers.js"
import { GatewayServer } from "../../src/server/GatewayServer.js"
import * as SchedulerInProcess from "../../src/services/scheduler/inProcess.js"
import { sqlServices } from "../../src/store/Database.js"
import type { StoreOptions } from "../../src/store/Store.js"
import type { DatabaseTarget } from "../../src/store/target.js"
import { testData } from "./gateway.js"

export const ADMIN_TOKEN = "test-admin-token-0123456789"

export const adminGatewayConfig = {
  groups: [
    { name: "oa", platform: "openai" },
    { name: "an", platform: "anthropic" },
    { name: "team-sub", platform: "openai", billing: "subscription", daily_limit_usd: 5 }
  ],
  users: [{ name: "erin", balance_usd: 50, concurrency: 50 }],
  keys: [{ key: "sk-admin-config-key-0001", user: "erin", group: "oa", name: "from-file" }],
  prices: [{ model: "gpt-5.4-mini", input: 1, output: 2 }],
  accounts: [
    { name: "sim-oa", platform: "openai", kind: "simulator", groups: ["oa", "team-sub"], concurrency: 50 },
    { name: "sim-an", platform: "anthropic", kind: "simulator", groups: ["an"], concurrency: 50 }
  ]
}

export interface GatewayWithAdmin {
  readonly gateway: string
  readonly admin: string
  readonly close: () => Promise<void>
}

// Each running gateway's platform services (NodeServices' Terminal) listen for stdin's end, and the
// admin suites keep a dozen gateways running at once: past Node's leak warning at 10 listeners.
process.stdin.setMaxListeners(32)

export interface StartOptions {
  /** MODELGATE_SECRET_KEY and ADMIN_ACCOUNT_ENV_PREFIX as the gateway would read them (default: none). */
  readonly keys?: Partial<AccountKeySettingsShape>
  /** Every log line (JSON), in place of the console's. */
  readonly log?: (line: string) => void
  /** Environment variables the gateway sees besides the process's. */
  readonly env?: Record<string, string>
}

export const startWithAdmin = async (
  db: { readonly target: DatabaseTarget; readonly store?: Partial<StoreOptions> },
  { env, keys = {}, log }: StartOptions = {}
): Promise<GatewayWithAdmin> => {
  const sql = sqlServices(db.target, { reportOrphans: false, ...db.store })
  // The admin server reads the gateway's Scheduler (account health), as in npm start.
  const layer = AdminServer.layer({ port: 0, host: "127.0.0.1", token: Redacted.make(ADMIN_TOKEN) }).pipe(
    Layer.provide(adminOn(sql.store, LiveStore.layer)),
    Layer.provideMerge(gatewayLayer({
      keyRepo: sql.keyRepo,
      quota: sql.quota,
      scheduler: SchedulerInProcess.layer.pipe(Layer.provide(sql.upstreamAccounts))
    }))
  ).pipe(
    Layer.provide(AppConfig.layer(testData(adminGatewayConfig), "test")),
    Layer.provide(Settings.layer({})),
    Layer.provide(accountKeySettingsLayer(keys)),
    Layer.provide(log === undefined ? Layer.empty : Logger.layer([Logger.map(Logger.formatJson, log)])),
    Layer.provide(env === undefined ? Layer.empty : ConfigProvider.layer(ConfigProvider.fromEnvRecord({ ...process.env, ...env })))
  )
  const runtime = ManagedRuntime.make(layer)
  const gateway = (await runtime.runPromise(Effect.service(GatewayServer))).url
  const admin = (await runtime.runPromise(Effect.service(AdminServer))).url
  return { gateway, admin, close: () => runtime.dispose() }
}

/** One non-streaming public request with `key`: the status it got (the body is read and dropped). */
export const respond = async (gateway: string, key: string, model = "gpt-5.4"): Promise<number> => {
  const res = await fetch(`${gateway}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, input: "hello from a test" })
  })
  await res.text()
  return res.status
}
