/** A Principal for tests of the pure rules: defaults everywhere, the parts a test cares about given. */
import type { Group, Principal } from "../../src/domain/model.js"

export interface PrincipalParts {
  readonly key?: string
  readonly user?: string
  readonly group?: string
  readonly billing?: Group["billing"]
  readonly quotaMicros?: number | undefined
}

export const testPrincipal = (parts: PrincipalParts = {}): Principal => {
  const user = parts.user ?? "u"
  const group = parts.group ?? "g"
  return {
    key: {
      id: parts.key ?? "k",
      sha256: "0".repeat(64),
      prefix: "sk-…",
      userName: user,
      groupName: group,
      status: "active",
      quotaMicros: parts.quotaMicros,
      quotaUsedMicros: 0,
      expiresAt: undefined,
      concurrency: undefined
    },
    user: { name: user, balanceMicros: 0, concurrency: 1 },
    group: {
      name: group,
      platform: "openai",
      billing: parts.billing ?? "balance",
      allowImageGeneration: false,
      rateMultiplier: 1,
      models: undefined,
      moderation: "off"
    }
  }
}
