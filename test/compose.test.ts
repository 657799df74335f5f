/**
 * The README promise: a user swaps one service (here KeyRepo) for their own in a few lines, and the
 * rest of the gateway keeps working on the defaults.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { sha256Hex } from "../src/config/resolve.js"
import type { Principal } from "../src/domain/model.js"
import { KeyRepo } from "../src/index.js"
import { startGateway, testData } from "./support/gateway.js"

const config = {
  groups: [{ name: "g", platform: "openai" }],
  users: [{ name: "u", balance_usd: 5 }],
  keys: [{ key: "sk-config-key-000", user: "u", group: "g" }],
  accounts: [{ name: "sim", platform: "openai", kind: "simulator", groups: ["g"] }]
}

describe("composing your own layers", () => {
  it("serves with a user-supplied KeyRepo in place of the default", async () => {
    const data = testData(config)
    const base = data.keys[0]!
    const principal: Principal = {
      key: { ...base, id: "external", sha256: sha256Hex("sk-from-my-own-store"), prefix: "sk-from…" },
      user: data.users.get("u")!,
      group: data.groups.get("g")!
    }
    const looked: Array<string> = []
    const MyKeyRepo = Layer.succeed(KeyRepo, {
      findByHash: (sha256) =>
        Effect.sync(() => {
          looked.push(sha256)
          return sha256 === principal.key.sha256 ? Option.some(principal) : Option.none()
        })
    })
    const gw = await startGateway({ config, services: { keyRepo: MyKeyRepo } })
    try {
      const ok = await fetch(`${gw.url}/v1/responses`, {
        method: "POST",
        headers: { authorization: "Bearer sk-from-my-own-store", "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-5.4", input: "hi" })
      })
      expect(ok.status).toBe(200)
      expect(((await ok.json()) as { object: string }).object).toBe("response")
      // The key from the config file is unknown to the replacement store.
      const refused = await fetch(`${gw.url}/v1/models`, { headers: { authorization: "Bearer sk-config-key-000" } })
      expect(refused.status).toBe(401)
      expect(looked).toContain(sha256Hex("sk-config-key-000"))
      expect(looked.some((h) => h.includes("sk-"))).toBe(false) // only hashes reach the store
    } finally {
      await gw.close()
    }
  })
})
