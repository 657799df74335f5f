/** KeyRepo over the SQL store: hashed keys in the database, looked up through a short in-process cache. */
import { Effect, Layer } from "effect"
import { KeyRepo } from "../services/keyRepo/KeyRepo.js"
import { Store } from "./Store.js"

export const layer = Layer.effect(KeyRepo, Effect.map(Store, (store) => KeyRepo.of({ findByHash: store.findPrincipal })))
