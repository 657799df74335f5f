/**
 * UpstreamAccounts: where the scheduler reads the accounts it picks from, when they can change
 * while the gateway runs (the SQL store's: the file's plus an operator's, reloaded on every
 * operator change; store/upstreamAccountsSql.ts). Without it the scheduler uses the loaded
 * config file's accounts, which never change.
 */
import { Context, Layer } from "effect"
import type { Account } from "../../domain/model.js"

export interface UpstreamAccountsShape {
  /** The accounts now. Read on every pick: return a fresh array or the same one, as suits you. */
  readonly current: () => ReadonlyArray<Account>
}

export class UpstreamAccounts extends Context.Service<UpstreamAccounts, UpstreamAccountsShape>()("modelgate/UpstreamAccounts") {
  /** Whatever `current` returns now (a fixed list, or a function a test changes as it goes). */
  static readonly layerTest = (accounts: ReadonlyArray<Account> | (() => ReadonlyArray<Account>)): Layer.Layer<UpstreamAccounts> =>
    Layer.succeed(UpstreamAccounts, { current: typeof accounts === "function" ? accounts : () => accounts })
}
