import type { Platform } from "../domain/config.js"

/**
 * Fallback model lists per platform for /v1/models, used when neither the group nor its accounts
 * name any. Data, not contract: override with `default_models` in the config file.
 */
export const defaultModels: Readonly<Record<Platform, ReadonlyArray<string>>> = {
  openai: ["gpt-5.5", "gpt-5.4", "gpt-5.4-mini", "gpt-5.3-codex", "gpt-5.2", "gpt-image-1"],
  anthropic: [
    "claude-opus-4-7",
    "claude-opus-4-6",
    "claude-sonnet-4-6",
    "claude-sonnet-4-5-20250929",
    "claude-haiku-4-5-20251001"
  ],
  antigravity: [
    "claude-opus-4-6",
    "claude-sonnet-4-5",
    "claude-sonnet-4-5-thinking",
    "gemini-2.5-flash",
    "gemini-3-pro-high",
    "gemini-3.1-pro-high"
  ],
  // A self-hosted or third-party server's models are the operator's: the group's `models` or its
  // accounts' `model_mapping` name them.
  openai_chat: []
}
