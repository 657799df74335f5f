/**
 * Why PostgreSQL could not be reached or refused the gateway, said so an operator can act on it:
 * where the gateway went (host, port, database and user as the driver reads DATABASE_URL; never
 * the password), the driver's reason (from the code under the SqlError: a socket error such as
 * ECONNREFUSED, or the server's SQLSTATE such as 3D000) and what to change. The driver's own
 * message, the same "PgConnection: Failed to connect" for all of them, says none of that.
 */
import { Redacted } from "effect"
import { StoreError } from "../domain/errors.js"
import type { DatabaseTarget } from "./target.js"

export interface PgAddress {
  readonly host: string
  readonly port: number
  readonly database: string
  readonly user: string
}

/**
 * As @effect/sql-pg reads the URL: `host`, `port`, `user` and `dbname` query parameters over the
 * URL's parts; then localhost, 5432, the login's name ($USER), and PostgreSQL's own default for
 * the database (the user's name).
 */
export const pgAddress = (url: string, env: Readonly<Record<string, string | undefined>> = process.env): PgAddress => {
  const u = new URL(url)
  const part = (s: string) => {
    try {
      return decodeURIComponent(s)
    } catch {
      return s
    }
  }
  const user = u.searchParams.get("user") ?? (u.username !== "" ? part(u.username) : env["USER"] ?? env["USERNAME"] ?? "")
  const path = part(u.pathname.replace(/^\//, ""))
  return {
    host: u.searchParams.get("host") ?? (u.hostname !== "" ? u.hostname.replace(/^\[(.*)\]$/, "$1") : "localhost"),
    port: Number(u.searchParams.get("port") ?? (u.port !== "" ? u.port : 5432)),
    database: u.searchParams.get("dbname") ?? (path !== "" ? path : user),
    user
  }
}

/** A failure of the driver's connect step: its SqlError reason's message and the code beneath it, if any. */
interface ConnectFailure {
  readonly message: string
  readonly code: string | undefined
  readonly detail: string | undefined
}

const field = (u: unknown, name: string): unknown => (typeof u === "object" && u !== null && name in u ? (u as Record<string, unknown>)[name] : undefined)

/** Down the cause chain (StoreError -> SqlError -> its reason -> the socket's or the server's error). */
const connectFailure = (u: unknown): ConnectFailure | undefined => {
  let connect: { message: string } | undefined
  let code: string | undefined
  let detail: string | undefined
  for (let e: unknown = u, depth = 0; typeof e === "object" && e !== null && depth < 6; depth++) {
    const message = field(e, "message")
    if (connect === undefined && field(e, "operation") === "connect" && typeof message === "string") connect = { message }
    else if (connect !== undefined && detail === undefined && typeof message === "string") detail = message
    const c = field(e, "code")
    if (code === undefined && typeof c === "string") code = c
    e = field(e, "reason") ?? field(e, "cause")
  }
  return connect === undefined ? undefined : { message: connect.message, code, detail }
}

const quote = (s: string) => `"${s}"`

/** The reason and the fix, by the code the socket or the server gave. */
const explain = (f: ConnectFailure, at: PgAddress, timeoutMillis: number): { reason: string; fix: string } => {
  // The server's own words where it answered (`database "x" does not exist`), else the driver's.
  const said = f.detail ?? f.message.replace(/^PgConnection: /, "")
  switch (f.code) {
    case "ECONNREFUSED":
      return { reason: "connection refused (nothing listens there)", fix: "Start PostgreSQL, or fix the host and port in DATABASE_URL" }
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return { reason: `the host name does not resolve (${f.code})`, fix: "Fix the host in DATABASE_URL" }
    case "ETIMEDOUT":
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return { reason: `the host cannot be reached (${f.code})`, fix: "Check the network to it, or fix the host and port in DATABASE_URL" }
    case "28P01":
      return { reason: `authentication failed: ${said}`, fix: "Fix the user or the password in DATABASE_URL" }
    case "28000":
      return {
        reason: `authentication failed: ${said}`,
        fix: `Fix the user in DATABASE_URL, or create the role (createuser -h ${at.host} -p ${at.port} ${at.user}) or let it in (pg_hba.conf)`
      }
    case "3D000":
      return {
        reason: said,
        fix: `Fix the database name in DATABASE_URL, or create the database (createdb -h ${at.host} -p ${at.port} -U ${at.user} ${at.database})`
      }
    case "53300":
      return { reason: said, fix: "Raise max_connections or close other clients, then start again" }
    case "57P03":
      return { reason: said, fix: "Start again once PostgreSQL is up" }
  }
  if (/timed out/i.test(f.message)) {
    return {
      reason: `no answer within ${timeoutMillis} ms`,
      fix: "Check that PostgreSQL runs there and that nothing (a firewall) holds the connection; STORE_TIMEOUT_MS sets the wait"
    }
  }
  if (/no password/i.test(f.message)) {
    return { reason: "the server asks for a password and DATABASE_URL has none", fix: "Put it in DATABASE_URL (postgres://user:password@host/db)" }
  }
  if (/no username/i.test(f.message)) {
    return { reason: "no user name", fix: "Put the user in DATABASE_URL (postgres://user@host/db)" }
  }
  return { reason: f.code === undefined ? said : `${said} (${f.code})`, fix: "Check DATABASE_URL and the PostgreSQL server's log" }
}

/**
 * The failure `e` re-worded when it is PostgreSQL's connect step that failed (else undefined: a
 * failure of a statement keeps its own message). `timeoutMillis` is the connect timeout in force.
 */
export const explainConnectFailure = (
  target: DatabaseTarget,
  e: unknown,
  timeoutMillis: number,
  env: Readonly<Record<string, string | undefined>> = process.env
): StoreError | undefined => {
  if (target._tag !== "Postgres") return undefined
  const failure = connectFailure(e)
  if (failure === undefined) return undefined
  let at: PgAddress
  try {
    at = pgAddress(Redacted.value(target.url), env)
  } catch {
    return undefined
  }
  const { reason, fix } = explain(failure, at, timeoutMillis)
  return new StoreError({
    message: `cannot connect to PostgreSQL at ${at.host}:${at.port} (database ${quote(at.database)}, user ${at.user === "" ? "not set" : quote(at.user)}): ` +
      `${reason}. ${fix}.`
  })
}
