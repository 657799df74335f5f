/**
 * UpstreamAccounts: where the scheduler reads the accounts it picks from, when they can change
 * while the gateway runs (the SQL store's: the file's plus an operator's, reloaded on every
 * operator change; store/upstreamAccountsSql.ts). Without it the scheduler uses the loaded
 * config file's accounts, which never change.
 */
import { Context } from "effect"
import type { Account } from "../../domain/model.js"

export interface UpstreamAccountsShape {
  /** The accounts now; the same array until they change (the scheduler caches per array). */
  readonly current: () => ReadonlyArray<Account>
}

export class UpstreamAccounts extends Context.Service<UpstreamAccounts, UpstreamAccountsShape>()("modelgate/UpstreamAccounts") {}
