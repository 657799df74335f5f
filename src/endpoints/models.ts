/**
 * GET /v1/models and GET /antigravity/models: one list that both the OpenAI shape
 * (`object`, `created`, `owned_by`) and Anthropic's (`type`, `display_name`, `created_at`, and a
 * single page: `has_more: false` with its `first_id` / `last_id`) read, so the openai and the
 * Anthropic SDKs each parse it with the other's fields ignored. Anthropic's paging parameters
 * (`limit`, `after_id`, `before_id`) are ignored: the list is short, and `has_more: false` ends the
 * SDK's iteration after this one page.
 *
 * GET /v1/models/{id}: one model of the key's group (what the list names), in the shape of the SDK
 * that asks: Anthropic's (`type`, `display_name`, `created_at`) when the request carries
 * `anthropic-version`, as the Anthropic SDK's always does, else OpenAI's (`object`, `created`,
 * `owned_by`). Any other id is 404 `model_not_found`.
 */
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import { Effect } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import type { Platform } from "../domain/config.js"
import { KeyRepo } from "../services/keyRepo/KeyRepo.js"
import { Scheduler } from "../services/scheduler/Scheduler.js"
import { ModelNotFound } from "../domain/errors.js"
import { authenticate } from "./kit/auth.js"
import { json } from "./kit/reply.js"
import { pathOf } from "./kit/request.js"
import { listedModels } from "../domain/modelList.js"

// A fixed timestamp: the list is configuration, not a record of when models were made.
const CREATED = 1_700_000_000
const CREATED_AT = new Date(CREATED * 1000).toISOString()

const owner: Record<Platform, string> = { openai: "openai", anthropic: "anthropic", antigravity: "antigravity", openai_chat: "openai_chat" }

const openaiModel = (id: string, platform: Platform) => ({ id, object: "model", created: CREATED, owned_by: owner[platform] })
const anthropicModel = (id: string) => ({ id, type: "model", display_name: id, created_at: CREATED_AT })

const modelList = (ids: ReadonlyArray<string>, platform: Platform) => ({
  object: "list",
  data: ids.map((id) => ({ ...openaiModel(id, platform), ...anthropicModel(id) })),
  has_more: false,
  first_id: ids[0] ?? null,
  last_id: ids[ids.length - 1] ?? null
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

  /** One of them, by the path's last segment (`/v1/models/{id}`). */
  const model = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const id = modelIdOf(pathOf(request.url))
    const principal = yield* authenticate(keys, request, { allowExpired: false })
    const accounts = yield* scheduler.accounts(principal.group)
    if (id === undefined || !listedModels(principal.group, accounts, data.defaultModels).includes(id)) {
      return yield* new ModelNotFound({ model: id ?? "" })
    }
    return json(request.headers["anthropic-version"] !== undefined ? anthropicModel(id) : openaiModel(id, principal.group.platform))
  })

  /** The alternate platform's fixed default list, whatever the key's group. */
  const antigravityModels = Effect.gen(function*() {
    yield* authenticate(keys, yield* HttpServerRequest.HttpServerRequest, { allowExpired: false })
    return json(modelList(data.defaultModels.antigravity, "antigravity"))
  })

  return { models, model, antigravityModels } as const
})

/** The model id in a `/v1/models/{id}` path, decoded once; undefined when it does not decode. */
const modelIdOf = (path: string): string | undefined => {
  try {
    return decodeURIComponent(path.split("/")[3] ?? "")
  } catch {
    return undefined
  }
}
