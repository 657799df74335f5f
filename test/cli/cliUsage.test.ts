/**
 * The CLI as a person meets it: help as plain text when piped (colours only at a terminal), one
 * phrasing for a name that does not exist whichever command meets it, and a mistyped or misplaced
 * command answered with the command to type, its group named.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli } from "../../src/cli/run.js"
import { cleanEnv, cli } from "./processes.js"

const ANSI = /\u001b\[/

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "modelgate-cli-usage-"))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("help", () => {
  it("is plain text when stdout is a pipe, for the CLI and for each group and command", async () => {
    for (const args of [["--help"], ["keys", "--help"], ["help", "users"], ["keys", "create", "--help"]]) {
      const ran = await cli(dir, cleanEnv(), ...args)
      expect(ran.code).toBe(0)
      expect(ran.stdout).toContain("USAGE")
      expect(ran.stdout).not.toMatch(ANSI)
      expect(ran.stderr).not.toMatch(ANSI)
    }
  }, 30_000)

  it("is coloured for a terminal, unless NO_COLOR is set", async () => {
    const help = async (env: Record<string, string>) => {
      const out: Array<string> = []
      await runCli(["keys", "--help"], env, { out: (l) => out.push(l), err: () => undefined, colors: true })
      return out.join("\n")
    }
    expect(await help({})).toMatch(ANSI)
    expect(await help({ NO_COLOR: "1" })).not.toMatch(ANSI)
  })
})

describe("errors", () => {
  it("a user, key or group that does not exist reads the same in every command", async () => {
    const env = cleanEnv({ DATABASE_URL: `sqlite:${join(dir, "phrasing.db")}` })
    const said = async (...args: Array<string>) => {
      const ran = await cli(dir, env, ...args)
      expect(ran.code).toBe(1)
      return ran.stderr.split("\n").filter((l) => l.startsWith("error: "))
    }
    expect(await said("users", "topup", "alice", "5")).toEqual(["error: no user named 'alice'"])
    expect(await said("keys", "create", "--user", "alice", "--group", "team")).toEqual(["error: no user named 'alice'"])
    expect(await said("users", "disable", "alice")).toEqual(["error: no user named 'alice'"])
    expect(await said("keys", "disable", "alice-ci")).toEqual(["error: no key named 'alice-ci'"])
    expect(await said("usage", "--key", "alice-ci")).toEqual(["error: no key named 'alice-ci'"])
  }, 30_000)

  it("a mistyped command names its group and the command to type; stdout stays empty", async () => {
    const usage = async (...args: Array<string>) => {
      const ran = await cli(dir, cleanEnv(), ...args)
      expect(ran.code).toBe(2)
      expect(ran.stdout).toBe("")
      return ran.stderr.trim()
    }
    expect(await usage("keys", "craete", "--user", "alice")).toBe("error: unknown command 'craete' in group 'keys'; did you mean `modelgate keys create`?")
    expect(await usage("topup", "alice", "5")).toBe("error: unknown command 'topup'; it belongs to group 'users': `modelgate users topup`")
    expect(await usage("list")).toBe(
      "error: unknown command 'list'; it belongs to groups 'keys', 'users' and 'accounts': " +
        "`modelgate keys list`, `modelgate users list` or `modelgate accounts list`"
    )
    expect(await usage("user", "list")).toBe("error: unknown command 'user'; did you mean `modelgate users`?")
    expect(await usage("keys", "frobnicate")).toBe("error: unknown command 'frobnicate' in group 'keys'; `modelgate keys --help` lists its commands")
  }, 30_000)

  it("a missing flag: the error first, then the command's help, all on stderr", async () => {
    const ran = await cli(dir, cleanEnv(), "keys", "create", "--user", "alice")
    expect(ran.code).toBe(2)
    expect(ran.stdout).toBe("")
    expect(ran.stderr.split("\n")[0]).toBe("error: Missing required flag: --group")
    expect(ran.stderr).toContain("modelgate keys create [flags]")
  }, 30_000)
})
