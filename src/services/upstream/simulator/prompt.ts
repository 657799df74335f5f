/**
 * What the simulator reads in a user's prompt: the words, and the values a tool call could be
 * given (paths, URLs, a command after "run", quoted strings, numbers, the subject of the question).
 */

export interface PromptFacts {
  /** The prompt without the context blocks agents prepend. */
  readonly text: string
  /** Lower-case words. */
  readonly words: ReadonlySet<string>
  /** The first word, lower case, past a "please" or "can you": the verb of a request. */
  readonly verb: string
  readonly paths: ReadonlyArray<string>
  readonly urls: ReadonlyArray<string>
  readonly globs: ReadonlyArray<string>
  readonly quoted: ReadonlyArray<string>
  readonly numbers: ReadonlyArray<number>
  /** The command after "run" / "execute", when the prompt has one. */
  readonly command: string | undefined
  /** What the question is about: a quoted string, the words after its last preposition, or the prompt itself. */
  readonly subject: string
}

/**
 * Agents wrap environment facts in tags before the prompt (Claude Code's `<system-reminder>`,
 * Codex's `<environment_context>`): their paths and words are not the user's request.
 */
const CONTEXT_BLOCK = /<([A-Za-z]+[-_][A-Za-z_-]+)>[\s\S]*?<\/\1>/g

export const stripContext = (raw: string): string => raw.replace(CONTEXT_BLOCK, " ").replace(/\s+/g, " ").trim()

const EDGE_OPEN = /^[(["'`<{“‘]+/
const EDGE_CLOSE = /[)\]"'`>},;:!?.”’]+$/
const URL = /^https?:\/\/\S+$/
const EXTENSION = /\.[A-Za-z][A-Za-z0-9]{0,7}$/

const isPath = (token: string): boolean => {
  if (URL.test(token) || token.includes("://")) return false
  if (/^(~|\.{1,2})?\/[\w.~-]/.test(token)) return true
  if (token.includes("/")) {
    const segments = token.split("/").filter((s) => s.length > 0)
    return segments.length > 0 && segments.every((s) => /^[\w.@~-]+$/.test(s)) &&
      (EXTENSION.test(token) || token.endsWith("/") || segments.length >= 3)
  }
  // A bare file name: "main.ts", "README.md"; not "e.g" or "gpt-5.4".
  const dot = token.lastIndexOf(".")
  return /^[\w-][\w.-]*$/.test(token) && EXTENSION.test(token) && dot >= 2
}

const QUOTED = /"([^"\n]+)"|“([^”\n]+)”|`([^`\n]+)`|(?<![\w])'([^'\n]+)'(?![\w])/g

const quotedStrings = (text: string): ReadonlyArray<string> =>
  [...text.matchAll(QUOTED)].map((m) => (m[1] ?? m[2] ?? m[3] ?? m[4] ?? "").trim()).filter((s) => s.length > 0)

/** "run ls -la", "execute `npm test` in the shell": the command, up to the end of its sentence. */
const commandOf = (text: string, toolNames: ReadonlyArray<string>): string | undefined => {
  // "run" as a request ("run ls", "please run ...", "can you run ..."), not "how do I run a marathon".
  const match = /(?:^|[.?!;:]\s+|\b(?:please|then|and|to|you)\s+)(?:run|execute|exec)\s+(?:the\s+command\s+)?(.+)$/i.exec(text)
  if (match === null) return undefined
  let rest = (match[1] ?? "").split(/[.?!;](?:\s|$)/)[0] ?? ""
  const quoted = /^(?:`([^`]+)`|"([^"]+)"|'([^']+)')/.exec(rest.trim())
  if (quoted !== null) return (quoted[1] ?? quoted[2] ?? quoted[3] ?? "").trim() || undefined
  const where = ["shell", "terminal", "bash", "sh", "zsh", "console", ...toolNames.map((n) => n.toLowerCase())]
  // "in bash", "using the Bash tool", "for me", "please" end the request, not the command.
  for (let changed = true; changed;) {
    const before = rest
    rest = rest.trim().replace(/\s+(?:please|for me)$/i, "")
    const tail = /\s+(?:in|with|using|via|through)\s+(?:the\s+|a\s+)?(\S+)(?:\s+tool)?$/i.exec(rest)
    if (tail !== null && where.includes((tail[1] ?? "").toLowerCase())) rest = rest.slice(0, tail.index)
    changed = rest !== before
  }
  const command = rest.trim()
  return command.length > 0 ? command : undefined
}

const PREPOSITION = /\b(?:for|about|in|on|at|near|of)\s+/gi

const subjectOf = (text: string, quoted: ReadonlyArray<string>): string => {
  const first = quoted[0]
  if (first !== undefined) return first
  let subject: string | undefined
  for (const m of text.matchAll(PREPOSITION)) {
    const rest = text.slice((m.index ?? 0) + m[0].length).split(/[.?!,;](?:\s|$)/)[0]?.replace(/[.?!,;]+$/, "").trim() ?? ""
    const words = rest.split(/\s+/).filter((w) => w.length > 0)
    if (words.length > 0 && words.length <= 6) subject = rest.replace(/^(?:the|a|an)\s+/i, "")
  }
  if (subject !== undefined && subject.length > 0) return subject
  const whole = text.replace(/[.?!]+$/, "").trim() || text || "(empty prompt)"
  return whole.length > 80 ? whole.slice(0, 80) : whole
}

export const readPrompt = (raw: string, toolNames: ReadonlyArray<string>): PromptFacts => {
  const text = stripContext(raw)
  const tokens = text.split(/\s+/).map((t) => t.replace(EDGE_OPEN, "").replace(EDGE_CLOSE, "")).filter((t) => t.length > 0)
  const urls = [...text.matchAll(/https?:\/\/[^\s"'`<>)\]]+/g)].map((m) => m[0].replace(/[.,;:!?]+$/, ""))
  const quoted = quotedStrings(text)
  return {
    text,
    words: new Set(text.toLowerCase().match(/[a-z0-9]+/g) ?? []),
    verb: /^(?:(?:please|can you|could you|now)\s+)*([a-z]+)/i.exec(text)?.[1]?.toLowerCase() ?? "",
    paths: tokens.filter(isPath),
    urls,
    globs: tokens.filter((t) => t.includes("*") && /^[\w.*?/{},[\]-]+$/.test(t)),
    quoted,
    numbers: tokens.filter((t) => /^-?\d+(?:\.\d+)?$/.test(t)).map(Number),
    command: commandOf(text, toolNames),
    subject: subjectOf(text, quoted)
  }
}
