/** GET /v1/models and GET /antigravity/models in the OpenAI list shape. */
import { Effect } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import type { Platform } from "../domain/config.js"
import { listedModels } from "../responses/policy.js"
import { Scheduler } from "../services/Scheduler.js"
import { authenticate } from "./auth.js"
import { json } from "./reply.js"
import type { ClientRequest } from "./request.js"

// A fixed timestamp: the list is configuration, not a record of when models were made.
const CREATED = 1_700_000_000

const owner: Record<Platform, string> = { openai: "openai", anthropic: "anthropic", antigravity: "antigravity" }

const modelList = (ids: ReadonlyArray<string>, platform: Platform) => ({
  object: "list",
  data: ids.map((id) => ({ id, object: "model", created: CREATED, owned_by: owner[platform] }))
})

export const modelsHandler = (request: ClientRequest) => Effect.gen(function*() {
  const principal = yield* authenticate(request, { allowExpired: false })
  const { data } = yield* AppConfig
  const accounts = yield* (yield* Scheduler).accounts(principal.group)
  return json(modelList(listedModels(principal.group, accounts, data.defaultModels), principal.group.platform))
})

/** The alternate platform's fixed default list, whatever the key's group. */
export const antigravityModelsHandler = (request: ClientRequest) => Effect.gen(function*() {
  yield* authenticate(request, { allowExpired: false })
  const { data } = yield* AppConfig
  return json(modelList(data.defaultModels.antigravity, "antigravity"))
})
