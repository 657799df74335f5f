/**
 * The configuration and options the scheduler suite runs on (no test-runner imports, so a child
 * process can build a scheduler from it too).
 */
import type { GatewayData } from "../../src/config/resolve.js"
import type { Principal } from "../../src/domain/model.js"
import type { SchedulerTestOptions } from "../../src/services/scheduler/Scheduler.js"
import { testData } from "../support/gateway.js"

export const suiteConfig = {
  groups: [{ name: "g", platform: "openai" }, { name: "solo", platform: "openai" }],
  users: [{ name: "u", concurrency: 2 }, { name: "v", concurrency: 3 }],
  keys: [
    { key: "sk-suite-user-0001", user: "u", group: "g", name: "k-user" },
    { key: "sk-suite-user-0002", user: "u", group: "g", name: "k-user-2" },
    { key: "sk-suite-own-0001", user: "v", group: "g", name: "k-own", concurrency: 1 }
  ],
  accounts: [
    { name: "a1", platform: "openai", kind: "simulator", groups: ["g"], priority: 10, concurrency: 2 },
    { name: "a2", platform: "openai", kind: "simulator", groups: ["g"], priority: 10, concurrency: 2 },
    { name: "a3", platform: "openai", kind: "simulator", groups: ["g"], priority: 20, concurrency: 1 },
    {
      name: "m",
      platform: "openai",
      kind: "simulator",
      groups: ["g"],
      priority: 5,
      concurrency: 1,
      model_mapping: { special: "special-2026" }
    },
    { name: "s1", platform: "openai", kind: "simulator", groups: ["solo"], concurrency: 1 }
  ]
}

export const suiteData = testData(suiteConfig)

export const suiteOptions: SchedulerTestOptions = {
  slotWaitMillis: 400,
  slotQueueLimit: 1,
  scheduling: {
    accountQueueLimit: 1,
    serverErrorThreshold: 3,
    serverErrorWindowSeconds: 60,
    serverErrorSeconds: 60,
    overloadSeconds: 60,
    rateLimitDefaultSeconds: 60,
    stickyTtlSeconds: 60
  }
}

export const principalOf = (data: GatewayData, keyName: string): Principal => {
  const key = data.keys.find((k) => k.id === keyName)
  const user = key && data.users.get(key.userName)
  const group = key && data.groups.get(key.groupName)
  if (!key || !user || !group) throw new Error(`no principal ${keyName}`)
  return { key, user, group }
}

