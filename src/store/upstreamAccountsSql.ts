/** UpstreamAccounts over the SQL store: the file's accounts and an operator's, reloaded with every operator change. */
import { Effect, Layer } from "effect"
import { UpstreamAccounts } from "../services/scheduler/UpstreamAccounts.js"
import { Store } from "./Store.js"

export const layer = Layer.effect(UpstreamAccounts, Effect.map(Store, (store) => ({ current: store.accounts })))
