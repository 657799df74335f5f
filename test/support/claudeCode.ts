/**
 * Runs the real Claude Code CLI (`claude -p`) against a local base URL, for tests where Claude Code
 * itself is the client oracle. Each run gets a fresh HOME and working directory (removed
 * afterwards) and an environment built from scratch, so nothing of the host's Claude Code login,
 * settings or ANTHROPIC_* variables reaches it, and nothing it does reaches past localhost.
 */
import { existsSync } from "node:fs"
import { mkdir, mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { type ProcessResult, runIsolated } from "./isolatedProcess.js"

const repoRoot = fileURLToPath(new URL("../../", import.meta.url))

/** The native binary of the platform package npm installed next to @anthropic-ai/claude-code. */
export const claudeBinary = join(
  repoRoot,
  "node_modules",
  "@anthropic-ai",
  `claude-code-${process.platform}-${process.arch}`,
  process.platform === "win32" ? "claude.exe" : "claude"
)

export const claudeAvailable = existsSync(claudeBinary)

export interface ClaudeRunOptions {
  readonly baseUrl: string
  /** Sent by Claude Code as `x-api-key`. */
  readonly apiKey?: string
  /** Sent by Claude Code as `Authorization: Bearer`. */
  readonly authToken?: string
  readonly prompt: string
  readonly model: string
  readonly extraArgs?: ReadonlyArray<string>
  /** Hard limit after which the process group is killed (default 60 s). */
  readonly timeoutMs?: number
  /** Added last; e.g. `CLAUDE_CODE_MAX_RETRIES` to see the CLI's own retries. */
  readonly env?: Readonly<Record<string, string>>
}

export type ClaudeRunResult = ProcessResult

/** Host variables a child shell needs to behave (its Bash tool runs `bash` from PATH). */
const HOST_VARS = ["PATH", "LANG", "LC_ALL", "TZ", "SHELL"] as const

const childEnv = (options: ClaudeRunOptions, home: string): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const name of HOST_VARS) {
    const value = process.env[name]
    if (value !== undefined) env[name] = value
  }
  Object.assign(env, {
    HOME: home,
    TMPDIR: home,
    ANTHROPIC_BASE_URL: options.baseUrl,
    // No other network exists: every side channel is switched off so none of them waits on a timeout.
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    // Its own retry loop backs off for about three minutes on a 401/5xx/529; a test wants the first answer.
    CLAUDE_CODE_MAX_RETRIES: "0"
  })
  if (options.apiKey !== undefined) env["ANTHROPIC_API_KEY"] = options.apiKey
  if (options.authToken !== undefined) env["ANTHROPIC_AUTH_TOKEN"] = options.authToken
  return { ...env, ...options.env }
}

export const runClaude = async (options: ClaudeRunOptions): Promise<ClaudeRunResult> => {
  const root = await mkdtemp(join(tmpdir(), "mg-claude-"))
  const home = join(root, "home")
  const work = join(root, "work")
  await mkdir(home)
  await mkdir(work)
  try {
    // Own process group, so the timeout also kills the shells its Bash tool started.
    return await runIsolated(claudeBinary, ["-p", options.prompt, "--model", options.model, ...(options.extraArgs ?? [])], {
      cwd: work,
      env: childEnv(options, home),
      timeoutMs: options.timeoutMs ?? 60_000
    })
  } finally {
    await rm(root, { recursive: true, force: true, maxRetries: 3 })
  }
}
