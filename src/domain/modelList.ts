/** The models a group lists (GET /v1/models), whatever door asks. */
import type { Platform } from "./config.js"
import type { Account, Group } from "./model.js"

/** An image model (`gpt-image-*`): calling one is image generation. */
export const isImageModel = (model: string): boolean => model.trim().toLowerCase().startsWith("gpt-image-")

/**
 * /v1/models: the group's configured list, else the union of its accounts' model mappings, else the
 * platform's default list.
 */
export const listedModels = (
  group: Group,
  accounts: ReadonlyArray<Account>,
  defaults: Readonly<Record<Platform, ReadonlyArray<string>>>
): ReadonlyArray<string> => {
  // Only what the key can call: no image model for a group that may not generate images.
  const callable = (models: ReadonlyArray<string>) =>
    group.allowImageGeneration ? models : models.filter((m) => !isImageModel(m))
  if (group.models !== undefined && group.models.length > 0) return callable(group.models)
  const mapped = new Set<string>()
  for (const a of accounts) for (const m of Object.keys(a.modelMapping ?? {})) mapped.add(m)
  if (mapped.size > 0) return callable([...mapped].sort())
  return callable(defaults[group.platform])
}
