/**
 * README.md as a newcomer follows it, start to finish: the walk-through against the demo, the
 * Claude Code line, the admin API snippet and the CLI flow. The commands are the README's own
 * ```sh blocks (found by their `<!-- readme-test: name -->` markers), run by bash as written, with
 * the PATH of a fresh shell (the system's node, which may be older than 24: npm and npx find the
 * Node 24 in node_modules themselves), in a directory of the test's own so `./data/demo.db` is not
 * the checkout's. The README hard-codes ports 8080 and 8081, so everything runs in a network
 * namespace of its own (`unshare -rn`): those ports are always free there, and nothing reaches
 * past its loopback (Claude Code included). Without namespaces it runs on the host's loopback when
 * both ports are free, and is skipped, saying why, when they are not.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { delimiter, join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { claudeAvailable } from "../support/claudeCode.js"

const ROOT = join(import.meta.dirname, "..", "..")
const README = readFileSync(join(ROOT, "README.md"), "utf8")

/** The ```sh block right after `<!-- readme-test: name ... -->`, without its fences. */
const block = (name: string): string => {
  const found = new RegExp(`<!-- readme-test: ${name}\\b[^>]*-->\\n\`\`\`sh\\n([\\s\\S]*?)\\n\`\`\`\\n`).exec(README)
  if (found?.[1] === undefined) throw new Error(`README.md has no \`<!-- readme-test: ${name} -->\` followed by a sh block`)
  return found[1]
}

/** A block's commands, one per entry: continuation lines joined, comment-only and blank lines left out. */
const commands = (text: string): Array<string> =>
  text
    .replace(/\\\n/g, " ")
    .split("\n")
    .filter((line) => line.trim() !== "" && !line.trimStart().startsWith("#"))

/** What `npm start` (and npx) need beside them in the user's directory: the checkout's files. */
const CHECKOUT = ["package.json", "package-lock.json", "node_modules", "src", "scripts", "bin", "ui", "examples", "tsconfig.json", "tsconfig.build.json"]

/** A fresh shell's PATH: the system's, without a node_modules/.bin a test runner put first. */
const systemPath = (process.env["PATH"] ?? "/usr/bin:/bin")
  .split(delimiter)
  .filter((dir) => !dir.endsWith(join("node_modules", ".bin")))
  .join(delimiter)

const namespaces = spawnSync("unshare", ["-rn", "ip", "link", "set", "lo", "up"], { stdio: "ignore" }).status === 0

const portFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer()
    server.once("error", () => resolve(false))
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
  })
const hostPortsFree = namespaces ? true : (await portFree(8080)) && (await portFree(8081))
if (!hostPortsFree) console.warn("readme.test: skipped: no network namespaces here (unshare -rn) and port 8080 or 8081 is in use")

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A process group still has a member. */
const alive = (pgid: number): boolean => {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * Signals a whole process group (the shell and what it started in the background), then makes
 * sure it is gone; says whether the signal alone ended it (within 10 s) before a SIGKILL had to.
 */
const stopGroup = async (pgid: number, signal: NodeJS.Signals): Promise<boolean> => {
  try {
    process.kill(-pgid, signal)
  } catch {
    return true
  }
  for (let i = 0; i < 100 && alive(pgid); i++) await sleep(100)
  if (!alive(pgid)) return true
  process.kill(-pgid, "SIGKILL")
  return false
}

interface Step {
  readonly pgid: number
  readonly exited: Promise<number | null>
  /** Everything it printed so far, stdout and stderr in the order written. */
  readonly output: () => string
}

/** Each command's output in a `bash -x` run: PS4 starts every traced command on a line of its own. */
const MARK = "\n@@ "
const traced = (output: string): Array<{ command: string; output: string }> =>
  output
    .split(MARK)
    .slice(1)
    .map((part) => {
      const eol = part.indexOf("\n")
      return eol < 0 ? { command: part, output: "" } : { command: part.slice(0, eol), output: part.slice(eol + 1) }
    })

describe.skipIf(!hostPortsFree)("README.md, followed as written", () => {
  let root: string
  let work: string
  let holder: ChildProcess | undefined
  const groups: Array<number> = []
  let env: Record<string, string>
  let steps = 0

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "modelgate-readme-"))
    work = join(root, "work")
    const home = join(root, "home")
    for (const dir of [work, home]) mkdirSync(dir)
    for (const name of CHECKOUT) symlinkSync(join(ROOT, name), join(work, name))
    // No `claude` on the PATH: the README's line runs the Claude Code `npm ci` installed (npx).
    env = {
      PATH: systemPath,
      HOME: home,
      TMPDIR: home,
      LANG: process.env["LANG"] ?? "C.UTF-8",
      // Not the README's: what keeps npm and Claude Code from looking for the network (see test/support/claudeCode.ts).
      npm_config_update_notifier: "false",
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1",
      DISABLE_AUTOUPDATER: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      CLAUDE_CODE_MAX_RETRIES: "0"
    }
    if (namespaces) {
      // Holds the namespace open; every step joins it with nsenter.
      const child = spawn("unshare", ["-rn", "bash", "-c", "ip link set lo up && echo ready && exec sleep infinity"], {
        stdio: ["ignore", "pipe", "inherit"],
        detached: true
      })
      holder = child
      if (child.pid !== undefined) groups.push(child.pid)
      await new Promise<void>((resolve, reject) => {
        child.stdout.once("data", () => resolve())
        child.once("exit", (code) => reject(new Error(`unshare exited (${code})`)))
      })
    }
  }, 20_000)

  afterAll(async () => {
    for (const pgid of groups.reverse()) await stopGroup(pgid, "SIGKILL")
    rmSync(root, { recursive: true, force: true, maxRetries: 3 })
  })

  /** Starts `bash [-x] -c script` in the user's directory (in the namespace), in a process group of its own. */
  const start = (script: string, options: { trace?: boolean } = {}): Step => {
    const log = join(root, `step-${++steps}.log`)
    const fd = openSync(log, "w")
    // PS4 is set in the script: bash ignores it in the environment when it runs as root.
    const bash = options.trace === true ? ["bash", "-x", "-c", `PS4=$'\\n@@ '\n${script}`] : ["bash", "-c", script]
    const argv =
      holder?.pid !== undefined ? ["nsenter", "-t", String(holder.pid), "-U", "-n", "--preserve-credentials", ...bash] : bash
    const child = spawn(argv[0]!, argv.slice(1), { cwd: work, env, stdio: ["ignore", fd, fd], detached: true })
    closeSync(fd)
    if (child.pid === undefined) throw new Error(`could not start ${argv.join(" ")}`)
    groups.push(child.pid)
    const exited = new Promise<number | null>((resolve) => {
      child.once("exit", (code) => resolve(code))
      child.once("error", () => resolve(null))
    })
    return { pgid: child.pid, exited, output: () => readFileSync(log, "utf8") }
  }

  /** Runs a script to its end (whatever it left in the background keeps running). */
  const run = async (script: string, options: { trace?: boolean; timeoutMs?: number } = {}) => {
    const step = start(script, options)
    const timeout = sleep(options.timeoutMs ?? 30_000).then(() => "timeout" as const)
    const code = await Promise.race([step.exited, timeout])
    if (code === "timeout") {
      await stopGroup(step.pgid, "SIGKILL")
      throw new Error(`timed out:\n${script}\n${step.output()}`)
    }
    return { code, output: step.output() }
  }

  /** Until the gateway answers on `url`; fails at once if the process that should serve it ended. */
  const untilUp = async (url: string, server: Step) => {
    const up = run(`for i in $(seq 600); do curl -sfo /dev/null ${url} && exit 0; sleep 0.1; done; exit 1`, { timeoutMs: 70_000 })
    const ended = server.exited.then((code) => ({ code, output: "" }))
    const result = await Promise.race([up, ended])
    if (result.code !== 0 || result.output !== "") throw new Error(`nothing answered ${url}:\n${server.output()}`)
  }

  /** What the running gateway answers a key (the test's own check, as a user would try a key). */
  const statusFor = async (key: string): Promise<string> => {
    const body = JSON.stringify({ model: "gpt-5.4", input: "Hello!" })
    const ran = await run(
      `curl -s -o /dev/null -w '%{http_code}' localhost:8080/v1/responses -H 'Authorization: Bearer ${key}' -H 'Content-Type: application/json' -d '${body}'`
    )
    return ran.output
  }

  const walkthrough = block("walkthrough")
  const [serverPart, clientPart] = walkthrough.split("# in another shell:\n")
  let demo: Step

  it("walk-through: `npm start` serves the demo and prints the keys the curl lines use", async () => {
    // `npm ci` is the install this checkout already had; run here it would reinstall the shared node_modules.
    expect(serverPart?.trim()).toBe("npm ci && npm start")
    demo = start(serverPart!.trim().replace(/^npm ci && /, ""))
    await untilUp("localhost:8080/health", demo)
    for (const key of new Set(walkthrough.match(/sk-modelgate-demo[\w-]*/g))) expect(demo.output()).toContain(key)
  }, 80_000)

  it("walk-through: the curl lines get what the README says", async () => {
    expect(clientPart).toBeDefined()
    const ran = await run(clientPart!, { trace: true })
    const outputs = traced(ran.output)
    const answer = (test: (command: string) => boolean): string => {
      const found = outputs.filter((o) => test(o.command))
      expect(found, ran.output).toHaveLength(1)
      return found[0]!.output.trim()
    }
    // Every curl line is silent but for the answer: no progress meter (curl draws one when its
    // output is not a terminal, as here and in `curl ... | jq`), streams (-N) included.
    for (const o of outputs.filter((o) => o.command.startsWith("curl"))) expect(o.output, o.command).not.toMatch(/% Total/)
    const models = JSON.parse(answer((c) => c.includes("/v1/models"))) as { data: Array<{ id: string }> }
    expect(models.data.map((m) => m.id)).toContain("gpt-5.4")
    const created = JSON.parse(answer((c) => c.includes('"input":"Hello!"}'))) as { status: string }
    expect(created.status).toBe("completed")
    expect(answer((c) => c.includes('"input":"Hello!","stream":true}'))).toMatch(/event: response\.completed/)
    const usage = answer((c) => c.includes("/v1/usage"))
    expect(() => JSON.parse(usage), usage).not.toThrow()
    expect(usage).not.toContain('"error"')
    expect(answer((c) => c.includes("claude-sonnet-4-6"))).toMatch(/event: response\.completed/)
    // The error the README shows, printed as it shows it.
    const shown = /^# (\{"error".*\})$/m.exec(clientPart!)?.[1]
    expect(shown).toBeDefined()
    expect(answer((c) => c.includes(`-d '{"stream":true}'`))).toBe(shown)
    const message = JSON.parse(answer((c) => c.includes("/v1/messages"))) as { type: string; content: Array<{ type: string }> }
    expect(message.type).toBe("message")
    expect(message.content[0]?.type).toBe("text")
  }, 40_000)

  it.skipIf(!claudeAvailable)("Claude Code against the demo answers", async () => {
    const ran = await run(block("claude-code"), { timeoutMs: 60_000 })
    expect(ran.code, ran.output).toBe(0)
    // The simulator's answer quotes the prompt.
    expect(ran.output).toContain('"Hello"')
  }, 70_000)

  it("walk-through: the gateway stops on Ctrl-C", async () => {
    expect(await stopGroup(demo.pgid, "SIGINT"), demo.output()).toBe(true)
  }, 20_000)

  let admin: Step
  const adminBlock = block("admin")

  it("admin API: the token exported, the gateway started in the background, the curl lines answer", async () => {
    admin = start(adminBlock, { trace: true })
    const code = await Promise.race([admin.exited, sleep(70_000).then(() => "timeout" as const)])
    expect(code, admin.output()).toBe(0)
    const outputs = traced(admin.output())
    // The background gateway writes into the same terminal: its log lines (JSON with a "message"
    // and a "logLevel") go, also where one follows an answer without a newline on the same line.
    const answer = (test: (command: string) => boolean): string => {
      const found = outputs.find((o) => test(o.command))
      expect(found, admin.output()).toBeDefined()
      return found!.output.replace(/\{"message":"[^"]*","logLevel":.*$/gm, "").trim()
    }
    const users = answer((c) => c.includes("/admin/users"))
    expect(users).toMatch(/"name":"demo"/)
    // "the secret is shown this once": in the answer that issued the key, which the gateway then accepts.
    const issued = JSON.parse(answer((c) => c.includes("/admin/keys"))) as { id: string; key: string }
    expect(issued.id).toMatch(/^key-/)
    expect(issued.key).toMatch(/^sk-mg-/)
    expect(await statusFor(issued.key)).toBe("200")
    expect(answer((c) => c.includes("/admin/usage.csv"))).toMatch(/^key/)
    // Without the token the same call is refused: the curl lines above sent it.
    const token = /ADMIN_TOKEN=([0-9a-f]{48})/.exec(admin.output())?.[1]
    expect(token).toBeDefined()
    expect((await run("curl -s -o /dev/null -w '%{http_code}' localhost:8081/admin/users")).output).toBe("401")
  }, 80_000)

  it("CLI: beside the running demo it lists users, issues a key the gateway accepts, and disables it", async () => {
    let issued: string | undefined
    for (const command of commands(block("cli"))) {
      const ran = await run(command)
      expect(ran.code, `${command}\n${ran.output}`).toBe(0)
      if (/^npx modelgate users list\b/.test(command)) {
        // The demo's database, in the directory the demo was started from.
        expect(ran.output).toContain(`database: sqlite:${join(work, "data", "demo.db")}`)
        expect(ran.output).toMatch(/^demo\s/m)
      }
      if (/^npx modelgate keys create\b/.test(command)) {
        issued = /(sk-mg-[A-Za-z0-9_-]{20,})/.exec(ran.output)?.[1]
        expect(issued, ran.output).toBeDefined()
        expect(await statusFor(issued!)).toBe("200")
      }
      if (/^npx modelgate keys disable\b/.test(command)) {
        // Refused once the gateway's key cache (about a second) has let go of it.
        let status = await statusFor(issued!)
        for (let i = 0; i < 50 && status !== "401"; i++) {
          await sleep(200)
          status = await statusFor(issued!)
        }
        expect(status).toBe("401")
      }
      if (/^npx modelgate users topup alice 20\b/.test(command)) {
        // Created with 10, topped up by 20, less what the one answer above cost.
        const balance = /^alice\s+([\d.]+)/m.exec((await run("npx modelgate users list")).output)?.[1]
        expect(Number(balance)).toBeGreaterThan(29)
        expect(Number(balance)).toBeLessThanOrEqual(30)
      }
    }
    expect(issued).toBeDefined()
    // `kill %1` for the gateway the admin snippet started with `&`.
    expect(await stopGroup(admin.pgid, "SIGTERM"), admin.output()).toBe(true)
  }, 90_000)
})
