/**
 * Which database to open, from DATABASE_URL: unset -> the SQLite file ./data/modelgate.db;
 * `sqlite:<path>`, or a path ending in a SQLite file name (.db, .sqlite, .sqlite3) -> SQLite;
 * `postgres://` / `postgresql://` -> PostgreSQL. Anything else is refused, not taken as a file
 * named after it. Pure, so the rules are tested without opening anything.
 */
import { Redacted, Result } from "effect"

export type DatabaseTarget =
  | { readonly _tag: "Sqlite"; readonly filename: string }
  | { readonly _tag: "Postgres"; readonly url: Redacted.Redacted<string> }

export const DEFAULT_SQLITE_FILE = "./data/modelgate.db"
/** The demo (no config) never writes where a real configuration will later live. */
export const DEMO_SQLITE_FILE = "./data/demo.db"

export const sqliteTarget = (filename: string): DatabaseTarget => ({ _tag: "Sqlite", filename })

/**
 * A `schema=<name>` query parameter selects a PostgreSQL schema (search_path), so several gateways
 * or test runs can share one database; it becomes the driver's `options` startup parameter.
 */
const postgresTarget = (raw: string): Result.Result<DatabaseTarget, string> => {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return Result.fail("DATABASE_URL is not a valid postgres:// URL")
  }
  const schema = url.searchParams.get("schema")
  if (schema !== null) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(schema)) return Result.fail("DATABASE_URL schema must be a plain identifier")
    url.searchParams.delete("schema")
    url.searchParams.set("options", `-c search_path=${schema}`)
  }
  return Result.succeed({ _tag: "Postgres", url: Redacted.make(url.toString()) })
}

/** What a plain path must end in to be taken as a SQLite file. */
const SQLITE_FILE = /\.(db|sqlite|sqlite3)$/i

export const parseDatabaseUrl = (raw: string | undefined): Result.Result<DatabaseTarget, string> => {
  const value = raw?.trim() ?? ""
  if (value === "") return Result.succeed(sqliteTarget(DEFAULT_SQLITE_FILE))
  if (/^postgres(ql)?:\/\//i.test(value)) return postgresTarget(value)
  if (/^sqlite:/i.test(value)) {
    // sqlite:data/x.db, sqlite:///abs/x.db, sqlite::memory:
    const rest = value.slice("sqlite:".length)
    const path = rest.startsWith("//") ? rest.slice(2) : rest
    return path === "" ? Result.fail("DATABASE_URL sqlite: needs a file path") : Result.succeed(sqliteTarget(path))
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    return Result.fail(`DATABASE_URL scheme is not supported (use sqlite:<path> or postgres://): ${value.split(":")[0]}`)
  }
  if (SQLITE_FILE.test(value) || value === ":memory:") return Result.succeed(sqliteTarget(value))
  // The value is shown only when it cannot be a URL with a password in it (user:pw@host, no scheme).
  const shown = /^[\w./~-]+$/.test(value) ? `=${value}` : ""
  return Result.fail(
    `DATABASE_URL${shown} is neither a postgres:// URL nor a SQLite file; use postgres://user@host:5432/db, ` +
      "sqlite:<path>, or a path ending in .db, .sqlite or .sqlite3"
  )
}

/** For logs: never the password. */
export const describeTarget = (target: DatabaseTarget): string => {
  if (target._tag === "Sqlite") return `sqlite:${target.filename}`
  try {
    const url = new URL(Redacted.value(target.url))
    url.password = ""
    return url.toString()
  } catch {
    return "postgres://<unparseable>"
  }
}
