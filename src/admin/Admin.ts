/**
 * Admin: what an operator can do to users, keys and usage, as one service. The admin API and the
 * CLI both call it, so a change is validated, audited and announced the same way wherever it
 * comes from. Each change runs in one transaction with its audit row (store/admin/*), then the
 * live store's caches are dropped, so the next request sees it; reads of usage first wait for the
 * settlements already accepted (`LiveStore`).
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AccountKeySettings } from "../config/AppConfig.js"
import type { AdminConflict, AdminInvalid, AdminNotFound } from "../domain/adminErrors.js"
import type { StoreError } from "../domain/errors.js"
import type { Micros } from "../domain/model.js"
import { type Actor, type AuditRow, listAudit, recordAudit } from "../store/admin/audit.js"
import { storeErrorsBut } from "../store/admin/tx.js"
import * as Accounts from "../store/admin/accounts.js"
import { createGroup, type GroupChange, type GroupRow, listGroups, type NewGroup, updateGroup } from "../store/admin/groups.js"
import * as Keys from "../store/admin/keys.js"
import * as Prices from "../store/admin/prices.js"
import * as Subs from "../store/admin/subscriptions.js"
import { usageBreakdown, type UsageQuery, type UsageRow } from "../store/admin/usage.js"
import * as Users from "../store/admin/users.js"
import { storeTimeoutFor, withinStoreTimeout } from "../store/statementDeadline.js"
import { changeBalanceWithinRange } from "./balanceCap.js"
import { LiveStore } from "./LiveStore.js"

type Op<A, E = never> = Effect.Effect<A, E | StoreError>

export interface AdminShape {
  /** Who this service's changes are recorded as in the audit trail ("admin-api", "cli"). */
  readonly actor: Actor
  readonly listUsers: Op<ReadonlyArray<Users.UserRow>>
  readonly getUser: (name: string) => Op<Users.UserRow, AdminNotFound>
  readonly createUser: (user: Users.NewUser) => Op<Users.UserRow, AdminConflict>
  readonly updateUser: (name: string, change: Users.UserChange) => Op<Users.UserRow, AdminNotFound>
  readonly setUserDisabled: (name: string, disabled: boolean) => Op<Users.UserRow, AdminNotFound>
  /** Returns the new balance; a top-up past the largest exact amount (2^53 - 1 µ$) is refused (balance_too_large). */
  readonly changeBalance: (
    name: string,
    change: { readonly mode: "add" | "set"; readonly amountMicros: Micros; readonly note?: string | undefined }
  ) => Op<Micros, AdminNotFound | AdminInvalid>
  readonly listGroups: Op<ReadonlyArray<GroupRow>>
  readonly createGroup: (group: NewGroup) => Op<GroupRow, AdminConflict>
  readonly updateGroup: (name: string, change: GroupChange) => Op<GroupRow, AdminNotFound | AdminConflict>
  readonly listKeys: (filter: Parameters<typeof Keys.listKeys>[0]) => Op<ReadonlyArray<Keys.KeyRow>>
  readonly getKey: (id: string) => Op<Keys.KeyRow, AdminNotFound>
  readonly createKey: (key: Keys.NewKey) => Op<Keys.IssuedKey, AdminInvalid | AdminConflict>
  readonly updateKey: (id: string, change: Keys.KeyChange) => Op<Keys.KeyRow, AdminNotFound | AdminConflict>
  readonly disableKey: (id: string) => Op<Keys.KeyRow, AdminNotFound>
  readonly enableKey: (id: string) => Op<Keys.KeyRow, AdminNotFound | AdminConflict>
  readonly rotateKey: (id: string) => Op<Keys.IssuedKey, AdminNotFound | AdminConflict>
  readonly deleteKey: (id: string) => Op<void, AdminNotFound | AdminConflict>
  readonly listSubscriptions: (filter: { readonly user?: string | undefined; readonly group?: string | undefined }) => Op<ReadonlyArray<Subs.SubscriptionRow>>
  readonly putSubscription: (user: string, group: string, change: Subs.SubscriptionChange) => Op<Subs.SubscriptionRow, AdminNotFound | AdminInvalid | AdminConflict>
  /** Every account in the database, disabled ones too; where each key comes from, never the key. */
  readonly listAccounts: Op<ReadonlyArray<Accounts.AccountRow>>
  readonly createAccount: (account: Accounts.NewAccount) => Op<void, AdminInvalid | AdminConflict>
  readonly updateAccount: (name: string, change: Accounts.AccountChange) => Op<void, AdminNotFound | AdminInvalid | AdminConflict>
  readonly removeAccount: (name: string) => Op<void, AdminNotFound | AdminConflict>
  /** Stored account keys sealed again under MODELGATE_SECRET_KEY (opened with it or MODELGATE_SECRET_KEY_PREVIOUS). */
  readonly rotateAccountKeys: Op<Accounts.Rotation, AdminInvalid>
  readonly listPrices: Op<ReadonlyArray<Prices.PriceRow>>
  readonly putPrice: (model: string, price: Prices.NewPrice) => Op<Prices.PriceRow, AdminInvalid | AdminConflict>
  readonly deletePrice: (model: string) => Op<void, AdminNotFound | AdminConflict>
  readonly usage: (query: UsageQuery) => Op<ReadonlyArray<UsageRow>>
  readonly audit: (query: { readonly limit: number; readonly target?: string | undefined }) => Op<ReadonlyArray<AuditRow>>
  /** Records an operator action on state that lives outside the database (an account reinstated). */
  readonly record: (action: string, target: string, detail?: Record<string, unknown>) => Op<void>
}

const make = Effect.fnUntraced(function*(actor: Actor) {
  const ctx = yield* Effect.context<SqlClient.SqlClient>()
  const live = yield* LiveStore
  // The settlements in flight and the operation wait on the store one after the other: bounded
  // as one, a stalled database answers 503 within the store timeout, not one per wait.
  const bounded = withinStoreTimeout(yield* storeTimeoutFor(Context.get(ctx, SqlClient.SqlClient)))
  // MODELGATE_SECRET_KEY and ADMIN_ACCOUNT_ENV_PREFIX: what an account's key may be stored as.
  const keySettings = yield* AccountKeySettings
  // Reads include every settlement accepted so far (spend, last use, usage rows).
  const read = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) => bounded(Effect.andThen(live.flush, Effect.provide(effect, ctx)))
  // Caches are dropped once a change is committed; a failed change changed nothing.
  const change = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
    Effect.tap(read(effect), () => live.forget)
  return {
    actor,
    listUsers: read(Users.listUsers),
    getUser: (name) => read(Users.getUser(name)),
    createUser: (user) => change(Users.createUser(actor, user)),
    updateUser: (name, c) => change(Users.updateUser(actor, name, c)),
    changeBalance: (name, c) => change(changeBalanceWithinRange(actor, name, c)),
    setUserDisabled: (name, disabled) => change(Users.setUserDisabled(actor, name, disabled)),
    listGroups: read(listGroups),
    createGroup: (group) => change(createGroup(actor, group)),
    updateGroup: (name, c) => change(updateGroup(actor, name, c)),
    listKeys: (filter) => read(Keys.listKeys(filter)),
    getKey: (id) => read(Keys.getKey(id)),
    createKey: (key) => change(Keys.createKey(actor, key)),
    updateKey: (id, c) => change(Keys.updateKey(actor, id, c)),
    disableKey: (id) => change(Keys.disableKey(actor, id)),
    enableKey: (id) => change(Keys.enableKey(actor, id)),
    rotateKey: (id) => change(Keys.rotateKey(actor, id)),
    deleteKey: (id) => change(Keys.deleteKey(actor, id)),
    listSubscriptions: (filter) => read(Subs.listSubscriptions(filter)),
    putSubscription: (user, group, c) => change(Subs.putSubscription(actor, user, group, c)),
    listAccounts: read(Accounts.listAccounts),
    createAccount: (account) => change(Accounts.createAccount(actor, keySettings, account)),
    updateAccount: (name, c) => change(Accounts.updateAccount(actor, keySettings, name, c)),
    removeAccount: (name) => change(Accounts.removeAccount(actor, name)),
    rotateAccountKeys: change(Accounts.rotateAccountKeys(actor, keySettings)),
    listPrices: read(Prices.listPrices),
    putPrice: (model, price) => change(Prices.putPrice(actor, model, price)),
    deletePrice: (model) => change(Prices.deletePrice(actor, model)),
    usage: (query) => read(usageBreakdown(query)),
    audit: (query) => read(listAudit(query)),
    record: (action, target, detail) =>
      bounded(Effect.provide(recordAudit(actor, action, target, detail), ctx)).pipe(storeErrorsBut("recording the change failed"))
  } satisfies AdminShape
})

export class Admin extends Context.Service<Admin, AdminShape>()("modelgate/Admin") {
  /** Over the SQL store; `actor` is what the audit trail records as the author ("admin-api", "cli"). */
  static readonly layer = (actor: Actor): Layer.Layer<Admin, StoreError, SqlClient.SqlClient | LiveStore> =>
    Layer.effect(Admin, make(actor))
}
