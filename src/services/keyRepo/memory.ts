/** KeyRepo in memory: the keys of the loaded configuration, as they were at start. */
import { Effect, Layer } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import { fromPrincipals, KeyRepo, principalsOf } from "./KeyRepo.js"

export const layer = Layer.effect(KeyRepo, Effect.map(AppConfig, (c) => fromPrincipals(principalsOf(c.data))))
