/**
 * `modelgate <group> <command>`, declared with effect/cli: each command's options and arguments
 * are parsed and validated (with help per command) before anything touches the database. Changes
 * go through the Admin service the admin API uses: validated, audited, and announced to running
 * gateways when REDIS_URL is set. `--json` prints what the admin API would answer.
 */
import { Clock, Console, Effect, Option, Redacted, Result } from "effect"
import { Argument, CliError, Command, Flag } from "effect/cli"
import { Admin, type AdminShape } from "../admin/Admin.js"
import { accountRowView, auditView, balanceView, issuedView, keyView, usageRowView, userView } from "../admin/views.js"
import { formatUsd, parseUsd } from "../domain/money.js"
import { accountKeyProblem } from "../domain/secretBox.js"
import { parseDay, reportRange, usageReport } from "../domain/usageReport.js"
import { AdminInvalid, AdminNotFound } from "../domain/adminErrors.js"
import { StoreError } from "../domain/errors.js"
import { openRequests, UsageDimension, usageSummary } from "../store/admin/usage.js"
import type { IssuedKey, KeyRow } from "../store/admin/keys.js"
import { principalById } from "../store/queries.js"
import { loadSnapshot } from "../store/report.js"
import { onDatabase } from "./database.js"
import { Stdin } from "./io.js"

/** How every command says a name does not exist (the admin operations' words for a missing target). */
export const noneNamed = (kind: "user" | "key" | "group", name: string) => `no ${kind} named '${name}'`

// ---------------------------------------------------------------------------------------------
// Output

const table = (rows: ReadonlyArray<ReadonlyArray<string>>) => {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? []
  return Effect.forEach(rows, (r) => Console.log(r.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join("  ").trimEnd()), { discard: true })
}

const printJson = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

const iso = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString())

// ---------------------------------------------------------------------------------------------
// Options every command takes, and typed values

const json = Flag.Boolean("json").pipe(Flag.withDescription("print JSON instead of text"), Flag.withDefault(false))
const database = Flag.String("database").pipe(
  Flag.withDescription("database URL (default: as `npm start` picks it: DATABASE_URL, else ./data/modelgate.db with a config, ./data/demo.db without)"),
  Flag.optional
)
const config = Flag.String("config").pipe(
  Flag.withDescription("the gateway's config file, as given to `npm start -- --config` (only says the demo is not running)"),
  Flag.optional
)
const common = { json, database, config }

const invalid = (message: string) => new CliError.ValidationError({ message })

const usdOf = (what: string) => (text: string) =>
  Result.match(parseUsd(text, what), { onFailure: (m) => Effect.fail(invalid(m)), onSuccess: Effect.succeed })

const usdOption = (name: string) => Flag.String(name).pipe(Flag.mapEffect(usdOf(`--${name}`)))

const positive = (name: string) =>
  Flag.Int(name).pipe(
    Flag.mapEffect((n) => (n > 0 ? Effect.succeed(n) : Effect.fail(invalid(`--${name} must be a positive whole number`))))
  )

/** --rpm-limit / --tpm-limit: requests or tokens per minute (absent: no limit). */
const minuteLimits = {
  rpmLimit: positive("rpm-limit").pipe(Flag.withDescription("requests per minute at most"), Flag.optional),
  tpmLimit: positive("tpm-limit").pipe(Flag.withDescription("tokens per minute at most"), Flag.optional)
}

const dayOption = (name: string) =>
  Flag.String(name).pipe(
    Flag.mapEffect((text) => {
      const day = parseDay(text)
      return day === undefined ? Effect.fail(invalid(`--${name} must be a day as YYYY-MM-DD`)) : Effect.succeed(day)
    }),
    Flag.optional
  )

const keyId = Argument.String("key id")

// ---------------------------------------------------------------------------------------------
// keys

const printIssued = (issued: IssuedKey, asJson: boolean, verb: string) =>
  asJson
    ? printJson(issuedView(issued))
    : Effect.all([
      Console.log(`${verb} key '${issued.row.id}' for user '${issued.row.user_name}' in group '${issued.row.group_name}'.`),
      Console.log(""),
      Console.log(`  ${issued.key}`),
      Console.log(""),
      Console.log("Store it now: it is shown only this once (the database keeps only its SHA-256).")
    ], { discard: true })

/**
 * A user or group that does not exist reads the same in every command: "no user named 'x'", as
 * the other commands say it, also where keys create names them (the store says "unknown user").
 */
const missingAsNotFound = (user: string, group: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.mapError(effect, (e) =>
    e instanceof AdminInvalid && e.code === "unknown_user"
      ? new AdminNotFound({ message: noneNamed("user", user), code: "user_not_found" })
      : e instanceof AdminInvalid && e.code === "unknown_group"
      ? new AdminNotFound({ message: noneNamed("group", group), code: "group_not_found" })
      : e)

const keysCreate = Command.make("create", {
  ...common,
  user: Flag.String("user").pipe(Flag.withDescription("the user the key spends for")),
  group: Flag.String("group").pipe(Flag.withDescription("the group: its platform, models and policies")),
  name: Flag.String("name").pipe(Flag.withDescription("the key's id (default: a random one)"), Flag.optional),
  quota: usdOption("quota-usd").pipe(Flag.withDescription("spend limit in USD"), Flag.optional),
  expiresAt: Flag.Date("expires-at").pipe(Flag.withDescription("like 2026-12-31 or 2026-12-31T00:00:00Z"), Flag.optional),
  concurrency: positive("concurrency").pipe(Flag.withDescription("requests at once on this key"), Flag.optional),
  ...minuteLimits
}, (o) =>
  onDatabase(o, Effect.flatMap(Admin, (admin) =>
    admin.createKey({
      user: o.user,
      group: o.group,
      name: Option.getOrUndefined(o.name),
      quotaMicros: Option.getOrUndefined(o.quota),
      expiresAt: Option.getOrUndefined(o.expiresAt),
      concurrency: Option.getOrUndefined(o.concurrency),
      rpmLimit: Option.getOrUndefined(o.rpmLimit),
      tpmLimit: Option.getOrUndefined(o.tpmLimit)
    }).pipe(missingAsNotFound(o.user, o.group))).pipe(Effect.flatMap((issued) => printIssued(issued, o.json, "Created"))))).pipe(
  Command.withDescription("Issue a key; its secret is printed once.")
)

const keysList = Command.make("list", {
  ...common,
  user: Flag.String("user").pipe(Flag.optional),
  group: Flag.String("group").pipe(Flag.optional),
  includeDeleted: Flag.Boolean("include-deleted").pipe(Flag.withDefault(false))
}, (o) =>
  onDatabase(o, Effect.flatMap(Admin, (admin) =>
    admin.listKeys({ user: Option.getOrUndefined(o.user), group: Option.getOrUndefined(o.group), includeDeleted: o.includeDeleted })).pipe(
      Effect.flatMap((rows) => {
        if (o.json) return printJson(rows.map(keyView))
        if (rows.length === 0) return Console.log("No keys.")
        return table([
          ["ID", "PREFIX", "USER", "GROUP", "STATUS", "QUOTA_USD", "USED_USD", "EXPIRES", "SOURCE"],
          ...rows.map((k) => [
            k.id,
            k.prefix,
            k.user_name,
            k.group_name,
            k.status,
            k.quota_micros === null ? "-" : formatUsd(k.quota_micros),
            formatUsd(k.quota_used_micros),
            iso(k.expires_at),
            k.source
          ])
        ])
      })
    ))).pipe(Command.withDescription("List keys (never their secrets)."))

const keyChange = (name: string, description: string, run: (admin: AdminShape, id: string) => Effect.Effect<KeyRow, unknown>, said: (id: string) => string) =>
  Command.make(name, { ...common, id: keyId }, (o) =>
    onDatabase(o, Effect.flatMap(Admin, (admin) => run(admin, o.id)).pipe(
      Effect.flatMap((row) => (o.json ? printJson(keyView(row)) : Console.log(said(o.id))))
    ))).pipe(Command.withDescription(description))

const keysDisable = keyChange(
  "disable",
  "Disable a key (it stays disabled across restarts, also for a key the config file lists).",
  (admin, id) => admin.disableKey(id),
  (id) => `Disabled key '${id}'. Running gateways refuse it within their cache TTL (1 s), at once with REDIS_URL set.`
)
const keysEnable = keyChange("enable", "Enable a disabled key.", (admin, id) => admin.enableKey(id), (id) => `Enabled key '${id}'.`)

const keysRotate = Command.make("rotate", { ...common, id: keyId }, (o) =>
  onDatabase(o, Effect.flatMap(Admin, (admin) => admin.rotateKey(o.id)).pipe(
    Effect.flatMap((issued) => printIssued(issued, o.json, "Rotated"))
  ))).pipe(Command.withDescription("A new secret for the key (printed once); the old one stops working."))

const keysDelete = Command.make("delete", { ...common, id: keyId }, (o) =>
  onDatabase(o, Effect.flatMap(Admin, (admin) => admin.deleteKey(o.id)).pipe(
    Effect.andThen(o.json ? printJson({ deleted: o.id }) : Console.log(`Deleted key '${o.id}' (disabled and hidden; its usage stays).`))
  ))).pipe(Command.withDescription("Disable the key and hide it from listings."))

const keys = Command.make("keys").pipe(
  Command.withDescription("Issue, list, disable, enable, rotate and delete API keys."),
  Command.withSubcommands([keysCreate, keysList, keysDisable, keysEnable, keysRotate, keysDelete])
)

// ---------------------------------------------------------------------------------------------
// users

const usdArg = Argument.String("usd").pipe(Argument.mapEffect(usdOf("the amount")))
const userArg = Argument.String("user")
const note = Flag.String("note").pipe(Flag.withDescription("kept with the ledger row"), Flag.optional)

const balanceChange = (name: string, mode: "add" | "set", description: string) =>
  Command.make(name, { ...common, user: userArg, amount: usdArg, note }, (o) => {
    if (mode === "add" && o.amount === 0) return Effect.fail(invalid("the amount must be more than 0"))
    return onDatabase(o, Effect.flatMap(Admin, (admin) =>
      admin.changeBalance(o.user, { mode, amountMicros: o.amount, note: Option.getOrUndefined(o.note) })).pipe(
        Effect.flatMap((balance) =>
          o.json
            ? printJson(balanceView(o.user, balance))
            : Console.log(
              mode === "add"
                ? `Topped up '${o.user}' by ${formatUsd(o.amount)} USD; balance is now ${formatUsd(balance)} USD.`
                : `Set the balance of '${o.user}' to ${formatUsd(balance)} USD.`
            ))
      ))
  }).pipe(Command.withDescription(description))

const usersList = Command.make("list", common, (o) =>
  onDatabase(o, Effect.flatMap(Admin, (admin) => admin.listUsers).pipe(
    Effect.flatMap((rows) =>
      o.json
        ? printJson(rows.map(userView))
        : table([
          ["USER", "BALANCE_USD", "CONCURRENCY", "RPM_LIMIT", "TPM_LIMIT", "IN_CONFIG", "STATUS"],
          ...rows.map((u) => [
            u.name,
            formatUsd(u.balance_micros),
            String(u.concurrency),
            u.rpm_limit === null ? "-" : String(u.rpm_limit),
            u.tpm_limit === null ? "-" : String(u.tpm_limit),
            u.in_config ? "yes" : "no",
            u.disabled_at === null ? "active" : "disabled"
          ])
        ])
    )
  ))).pipe(Command.withDescription("List users and their balances."))

const usersCreate = Command.make("create", {
  ...common,
  name: userArg,
  balance: usdOption("balance-usd").pipe(Flag.withDefault(0)),
  concurrency: positive("concurrency").pipe(Flag.withDefault(5)),
  ...minuteLimits
}, (o) =>
  onDatabase(o, Effect.flatMap(Admin, (admin) =>
    admin.createUser({
      name: o.name,
      balanceMicros: o.balance,
      concurrency: o.concurrency,
      rpmLimit: Option.getOrUndefined(o.rpmLimit),
      tpmLimit: Option.getOrUndefined(o.tpmLimit)
    })).pipe(
      Effect.flatMap((u) => (o.json ? printJson(userView(u)) : Console.log(`Created user '${u.name}'.`)))
    ))).pipe(Command.withDescription("Add a user (the database owns it; the config file may also name users)."))

const userSwitch = (name: string, disabled: boolean, description: string) =>
  Command.make(name, { ...common, user: userArg }, (o) =>
    onDatabase(o, Effect.flatMap(Admin, (admin) => admin.setUserDisabled(o.user, disabled)).pipe(
      Effect.flatMap((u) => (o.json ? printJson(userView(u)) : Console.log(`${disabled ? "Disabled" : "Enabled"} user '${u.name}'.`)))
    ))).pipe(Command.withDescription(description))

const users = Command.make("users").pipe(
  Command.withDescription("List and add users; top up or set balances (with a ledger row)."),
  Command.withSubcommands([
    usersList,
    usersCreate,
    balanceChange("topup", "add", "Add USD to a user's balance."),
    balanceChange("set-balance", "set", "Set a user's balance (the ledger records the difference)."),
    userSwitch("disable", true, "Refuse every key of the user (401 user_disabled) until enabled again."),
    userSwitch("enable", false, "Admit the user's keys again.")
  ])
)

// ---------------------------------------------------------------------------------------------
// accounts

/** How running gateways learn of an account change: they reload accounts when told, not on a timer. */
const accountChangeReach = "Running gateways pick it up at once with REDIS_URL set, else at their next start."

/**
 * The key of an http account: from --api-key-file, else from stdin (--api-key-stdin, or whatever is
 * piped in). Never a flag's value: argv is visible to every user of the machine (ps) and kept in
 * shell histories. Surrounding whitespace (echo's line break, a file's last newline) is dropped.
 */
const accountKey = Effect.fnUntraced(function*(o: { readonly stdin: boolean; readonly file: Option.Option<string> }) {
  if (o.stdin && Option.isSome(o.file)) return yield* invalid("give the key with --api-key-stdin or --api-key-file, not both")
  const stdin = yield* Stdin
  let text: string
  let from: string
  if (Option.isSome(o.file)) {
    text = o.file.value
    from = "the file given with --api-key-file"
  } else if (o.stdin || stdin.piped) {
    text = yield* Effect.tryPromise({ try: () => stdin.read(), catch: (e) => invalid(`reading the key from stdin failed: ${String(e)}`) })
    from = "stdin"
  } else {
    return yield* invalid(
      "an http account needs its key: pipe it in (`modelgate accounts add … < key.txt`, or --api-key-stdin) or give --api-key-file PATH; never on the command line"
    )
  }
  const key = text.trim()
  if (key === "") return yield* invalid(`no key on ${from}`)
  const problem = accountKeyProblem(key)
  if (problem !== undefined) return yield* invalid(`the key on ${from} ${problem}`)
  return Redacted.make(key)
})

const accountsAdd = Command.make("add", {
  ...common,
  name: Argument.String("name"),
  platform: Flag.Literals("platform", ["openai", "anthropic", "antigravity", "openai_chat"]).pipe(Flag.withDescription("the provider's API the account speaks")),
  groups: Flag.atLeast(Flag.String("group"), 1).pipe(Flag.withDescription("a group it serves (repeat for more), of the same platform")),
  kind: Flag.Literals("kind", ["http", "simulator"]).pipe(Flag.withDescription("http: a provider's API; simulator: canned answers, no network"), Flag.withDefault("http")),
  baseUrl: Flag.String("base-url").pipe(Flag.withDescription("the provider's API URL (default: the platform's)"), Flag.optional),
  priority: Flag.Int("priority").pipe(Flag.withDescription("lower is tried first"), Flag.withDefault(0)),
  concurrency: positive("concurrency").pipe(Flag.withDescription("requests at once"), Flag.withDefault(10)),
  apiKeyStdin: Flag.Boolean("api-key-stdin").pipe(Flag.withDescription("read the key from stdin (the default when something is piped in)"), Flag.withDefault(false)),
  apiKeyFile: Flag.FileText("api-key-file").pipe(Flag.withDescription("read the key from this file"), Flag.optional)
}, (o) =>
  Effect.gen(function*() {
    if (o.kind === "simulator" && (o.apiKeyStdin || Option.isSome(o.apiKeyFile))) return yield* invalid("a simulator account takes no key")
    const apiKey = o.kind === "http" ? yield* accountKey({ stdin: o.apiKeyStdin, file: o.apiKeyFile }) : undefined
    return yield* onDatabase(o, Effect.gen(function*() {
      const admin = yield* Admin
      yield* admin.createAccount({
        name: o.name,
        platform: o.platform,
        kind: o.kind,
        baseUrl: Option.getOrUndefined(o.baseUrl),
        apiKey,
        groups: o.groups,
        priority: o.priority,
        concurrency: o.concurrency
      })
      const row = (yield* admin.listAccounts).find((a) => a.name === o.name)
      if (o.json) return yield* printJson(row === undefined ? null : accountRowView(row))
      yield* Console.log(
        `Added account '${o.name}' (${o.platform}, ${o.kind}, groups ${o.groups.join(", ")})${apiKey === undefined ? "" : "; its key is stored encrypted"}. ${accountChangeReach}`
      )
    }))
  })).pipe(Command.withDescription("Add an upstream account; an http account's key is read from stdin or --api-key-file, stored encrypted (MODELGATE_SECRET_KEY)."))

const accountsList = Command.make("list", common, (o) =>
  onDatabase(o, Effect.flatMap(Admin, (admin) => admin.listAccounts).pipe(
    Effect.flatMap((rows) =>
      o.json
        ? printJson(rows.map(accountRowView))
        : rows.length === 0
        ? Console.log("No accounts.")
        : table([
          ["NAME", "PLATFORM", "KIND", "KEY", "GROUPS", "PRIORITY", "CONCURRENCY", "BASE_URL", "SOURCE", "STATUS"],
          ...rows.map((a) => [
            a.name,
            a.platform,
            a.kind,
            a.key_source ?? "-",
            a.groups.join(","),
            String(a.priority),
            String(a.concurrency),
            a.base_url,
            a.in_config ? "config" : "operator",
            a.status
          ])
        ])
    )
  ))).pipe(Command.withDescription("List upstream accounts and where each key comes from (stored, env), never the key."))

const accountsDisable = Command.make("disable", { ...common, name: Argument.String("name") }, (o) =>
  onDatabase(o, Effect.flatMap(Admin, (admin) => admin.removeAccount(o.name)).pipe(
    Effect.andThen(o.json ? printJson({ disabled: o.name }) : Console.log(`Disabled account '${o.name}'. ${accountChangeReach}`))
  ))).pipe(Command.withDescription("Take an account added here out of the scheduler for good (the config file's are the file's)."))

const accountsRotateKey = Command.make("rotate-key", common, (o) =>
  onDatabase(o, Effect.gen(function*() {
    const rotation = yield* Effect.flatMap(Admin, (admin) => admin.rotateAccountKeys)
    if (o.json) yield* printJson(rotation)
    else {
      yield* Console.log(
        `Re-encrypted ${rotation.resealed.length} stored account key(s) under MODELGATE_SECRET_KEY; ${rotation.current.length} already were.`
      )
      for (const f of rotation.failed) yield* Console.error(`account '${f.name}': its key was left as it was: ${f.reason}`)
    }
    if (rotation.failed.length > 0) {
      return yield* new AdminInvalid({
        message: `${rotation.failed.length} stored key(s) did not open; set the key they were stored under as MODELGATE_SECRET_KEY_PREVIOUS`,
        code: "secret_key_mismatch",
        param: null
      })
    }
  }))).pipe(Command.withDescription(
    "Re-encrypt every stored account key under MODELGATE_SECRET_KEY, opening them with it or MODELGATE_SECRET_KEY_PREVIOUS (docs/admin.md)."
  ))

const accounts = Command.make("accounts").pipe(
  Command.withDescription("Add, list and disable upstream accounts; re-encrypt their stored keys after a MODELGATE_SECRET_KEY change."),
  Command.withSubcommands([accountsAdd, accountsList, accountsDisable, accountsRotateKey])
)

// ---------------------------------------------------------------------------------------------
// usage, audit

const usage = Command.make("usage", {
  ...common,
  key: Flag.String("key").pipe(Flag.withDescription("that key's /v1/usage report"), Flag.optional),
  by: Flag.Literals("by", UsageDimension.literals).pipe(Flag.withDescription("totals per key, user, group, model, upstream account or day over the range"), Flag.optional),
  startDate: dayOption("start-date"),
  endDate: dayOption("end-date"),
  open: Flag.Boolean("open").pipe(Flag.withDescription("requests not (yet) settled"), Flag.withDefault(false))
}, (o) => Effect.flatMap(Clock.currentTimeMillis, (millis) => {
  const now = new Date(millis)
  const range = reportRange(Option.getOrUndefined(o.startDate), Option.getOrUndefined(o.endDate), now)
  if (range === undefined) return Effect.fail(invalid("--start-date must not be after --end-date"))
  const { from, to } = range
  const key = o.key
  const by = o.by
  const work = o.open
    ? Effect.flatMap(openRequests, (rows) =>
      o.json
        ? printJson(rows)
        : rows.length === 0
        ? Console.log("No open requests.")
        : table([["REQUEST_ID", "KEY", "MODEL", "STARTED_AT"], ...rows.map((r) => [r.request_id, r.key_id, r.model, iso(r.started_at)])]))
    : Option.isSome(key)
    ? Effect.gen(function*() {
      const id = key.value
      const principal = yield* principalById(id).pipe(Effect.mapError((cause) => new StoreError({ message: "reading the key failed", cause })))
      if (Option.isNone(principal)) return yield* new StoreError({ message: noneNamed("key", id) })
      const snapshot = yield* loadSnapshot(principal.value, { from, to }, now).pipe(
        Effect.mapError((cause) => new StoreError({ message: "reading usage failed", cause }))
      )
      yield* printJson(usageReport(snapshot, now))
    })
    : Option.isSome(by)
    ? Effect.flatMap(Admin, (admin) => admin.usage({ by: by.value, from, to })).pipe(
      Effect.flatMap((rows) =>
        o.json
          ? printJson(rows.map(usageRowView))
          : table([[by.value.toUpperCase(), "REQUESTS", "INPUT", "OUTPUT", "COST_USD"], ...rows.map((r) => [r.bucket, String(r.requests), String(r.input_tokens), String(r.output_tokens), formatUsd(r.cost_micros)])])
      )
    )
    : Effect.flatMap(usageSummary(now), (rows) =>
      o.json
        ? printJson(rows)
        : rows.length === 0
        ? Console.log("No keys.")
        : table([
          ["KEY", "USER", "GROUP", "STATUS", "TODAY_REQ", "TODAY_USD", "TOTAL_REQ", "TOTAL_USD"],
          ...rows.map((r) => [r.id, r.user_name, r.group_name, r.status, String(r.today_requests), formatUsd(r.today_cost_micros), String(r.total_requests), formatUsd(r.total_cost_micros)])
        ]))
  return onDatabase(o, work)
})).pipe(Command.withDescription("Per key today and in total; --key: one key's /v1/usage; --by: totals over a range; --open: unsettled requests."))

const audit = Command.make("audit", {
  ...common,
  limit: positive("limit").pipe(Flag.withDefault(50)),
  target: Flag.String("target").pipe(Flag.withDescription("only changes to this user, key..."), Flag.optional)
}, (o) =>
  onDatabase(o, Effect.flatMap(Admin, (admin) => admin.audit({ limit: o.limit, target: Option.getOrUndefined(o.target) })).pipe(
    Effect.flatMap((rows) =>
      o.json
        ? printJson(rows.map(auditView))
        : table([["AT", "ACTOR", "ACTION", "TARGET"], ...rows.map((a) => [iso(a.at), a.actor, a.action, a.target])])
    )
  ))).pipe(Command.withDescription("Operator changes (admin API and CLI), newest first."))

export const modelgate = Command.make("modelgate").pipe(
  Command.withDescription("modelgate's operator commands, over the database the gateway uses."),
  Command.withSubcommands([keys, users, accounts, usage, audit])
)
