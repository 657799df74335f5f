/**
 * Runs the real Codex CLI (`codex exec`) against a local base URL, for tests where Codex itself is
 * the client oracle. Each run gets a fresh CODEX_HOME, HOME and working directory (removed
 * afterwards) and an environment built from scratch; the provider is configured on the command
 * line (`-c model_providers.…`), so nothing of the host's Codex login or config reaches it.
 */
import { existsSync } from "node:fs"
import { mkdir, mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { type ProcessResult, runIsolated } from "./isolatedProcess.js"

const repoRoot = fileURLToPath(new URL("../../", import.meta.url))

export const codexBinary = join(repoRoot, "node_modules", ".bin", "codex")

export const codexAvailable = existsSync(codexBinary) && process.platform === "linux"

export interface CodexRunOptions {
  /** The provider's base URL, `…/v1`. */
  readonly baseUrl: string
  readonly apiKey: string
  readonly prompt: string
  readonly model: string
  /** Use the Responses WebSocket transport (Codex falls back to HTTP when the upgrade is refused). */
  readonly websocket?: boolean
  readonly timeoutMs?: number
}

export type CodexRunResult = ProcessResult

const HOST_VARS = ["PATH", "LANG", "LC_ALL", "TZ", "SHELL"] as const

export const runCodex = async (options: CodexRunOptions): Promise<CodexRunResult> => {
  const root = await mkdtemp(join(tmpdir(), "mg-codex-"))
  const home = join(root, "home")
  const codexHome = join(root, "codex")
  const work = join(root, "work")
  await Promise.all([mkdir(home), mkdir(codexHome), mkdir(work)])
  const env: Record<string, string> = {}
  for (const name of HOST_VARS) {
    const value = process.env[name]
    if (value !== undefined) env[name] = value
  }
  Object.assign(env, { HOME: home, CODEX_HOME: codexHome, TMPDIR: home, MODELGATE_TEST_KEY: options.apiKey, RUST_LOG: "error" })
  const provider = [
    `model_providers.mg.name="modelgate"`,
    `model_providers.mg.base_url="${options.baseUrl}"`,
    `model_providers.mg.env_key="MODELGATE_TEST_KEY"`,
    `model_providers.mg.wire_api="responses"`,
    `model_providers.mg.supports_websockets=${options.websocket === true ? "true" : "false"}`,
    // A test wants the first answer, not a back-off.
    `model_providers.mg.request_max_retries=0`,
    `model_providers.mg.stream_max_retries=0`
  ]
  const args = [
    "exec",
    "--skip-git-repo-check",
    "--sandbox", "danger-full-access",
    "-c", `model_provider="mg"`,
    ...provider.flatMap((c) => ["-c", c]),
    "-m", options.model,
    options.prompt
  ]
  try {
    return await runIsolated(codexBinary, args, { cwd: work, env, timeoutMs: options.timeoutMs ?? 60_000 })
  } finally {
    await rm(root, { recursive: true, force: true, maxRetries: 3 })
  }
}
