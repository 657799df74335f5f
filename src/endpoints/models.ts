/** GET /v1/models and GET /antigravity/models in the OpenAI list shape. */
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import { Effect } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import type { Platform } from "../domain/config.js"
import { KeyRepo } from "../services/keyRepo/KeyRepo.js"
import { Scheduler } from "../services/scheduler/Scheduler.js"
import { authenticate } from "./kit/auth.js"
import { json } from "./kit/reply.js"
import { listedModels } from "./responses/policy.js"

// A fixed timestamp: the list is configuration, not a record of when models were made.
const CREATED = 1_700_000_000

const owner: Record<Platform, string> = { openai: "openai", anthropic: "anthropic", antigravity: "antigravity" }

const modelList = (ids: ReadonlyArray<string>, platform: Platform) => ({
  object: "list",
  data: ids.map((id) => ({ id, object: "model", created: CREATED, owned_by: owner[platform] }))
})

/** Both handlers, with their services resolved once. */
export const makeModelsHandlers = Effect.gen(function*() {
  const { data } = yield* AppConfig
  const keys = yield* KeyRepo
  const scheduler = yield* Scheduler

  /** The key's group's models. */
  const models = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const principal = yield* authenticate(keys, request, { allowExpired: false })
    const accounts = yield* scheduler.accounts(principal.group)
    return json(modelList(listedModels(principal.group, accounts, data.defaultModels), principal.group.platform))
  })

  /** The alternate platform's fixed default list, whatever the key's group. */
  const antigravityModels = Effect.gen(function*() {
    yield* authenticate(keys, yield* HttpServerRequest.HttpServerRequest, { allowExpired: false })
    return json(modelList(data.defaultModels.antigravity, "antigravity"))
  })

  return { models, antigravityModels } as const
})
