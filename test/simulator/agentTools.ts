/**
 * Tool lists as agents send them on every request, whatever the prompt: Claude Code's (Messages
 * `input_schema`, trimmed to the schema fields that matter) and Codex's (Responses function tools).
 */

const object = (properties: Record<string, unknown>, required: ReadonlyArray<string>) => ({
  type: "object",
  properties,
  required,
  additionalProperties: false
})

const str = { type: "string" }

export const claudeCodeTools = [
  { name: "Agent", description: "Launch a sub-agent", input_schema: object({ description: str, prompt: str, subagent_type: str }, ["description", "prompt"]) },
  {
    name: "Bash",
    description: "Executes a bash command",
    input_schema: object({ command: str, timeout: { type: "number" }, description: str, run_in_background: { type: "boolean" } }, ["command"])
  },
  { name: "Glob", description: "Find files by pattern", input_schema: object({ pattern: str, path: str }, ["pattern"]) },
  {
    name: "Grep",
    description: "Search file contents",
    input_schema: object({ pattern: str, path: str, output_mode: { type: "string", enum: ["content", "files_with_matches", "count"] } }, ["pattern"])
  },
  { name: "Read", description: "Reads a file", input_schema: object({ file_path: str, offset: { type: "integer" }, limit: { type: "integer" } }, ["file_path"]) },
  { name: "Edit", description: "Edits a file", input_schema: object({ file_path: str, old_string: str, new_string: str, replace_all: { type: "boolean" } }, ["file_path", "old_string", "new_string"]) },
  { name: "Write", description: "Writes a file", input_schema: object({ file_path: str, content: str }, ["file_path", "content"]) },
  { name: "WebFetch", description: "Fetches a URL", input_schema: object({ url: str, prompt: str }, ["url", "prompt"]) },
  { name: "WebSearch", description: "Searches the web", input_schema: object({ query: str }, ["query"]) },
  {
    name: "TodoWrite",
    description: "Updates the todo list",
    input_schema: object({
      todos: { type: "array", items: object({ content: str, status: { type: "string", enum: ["pending", "in_progress", "completed"] } }, ["content", "status"]) }
    }, ["todos"])
  },
  { name: "AskUserQuestion", description: "Asks the user", input_schema: object({ questions: { type: "array", items: str } }, ["questions"]) },
  { name: "Skill", description: "Runs a skill", input_schema: object({ skill: str }, ["skill"]) }
]

export const codexTools = [
  {
    type: "function",
    name: "shell",
    description: "Runs a shell command and returns its output.",
    strict: false,
    parameters: object({ command: { type: "array", items: str }, workdir: str, timeout_ms: { type: "number" } }, ["command"])
  },
  { type: "function", name: "read_file", description: "Read a file of the workspace", strict: false, parameters: object({ path: str }, ["path"]) },
  {
    type: "function",
    name: "update_plan",
    description: "Updates the task plan",
    strict: false,
    parameters: object({ plan: { type: "array", items: object({ step: str, status: str }, ["step", "status"]) } }, ["plan"])
  }
]

/** Prompts that ask for no tool: each must get a text answer whatever tools come with it. */
export const plainPrompts = [
  "Say hello",
  "Hello!",
  "hi",
  "Write a haiku about the sea",
  "I have a question about Effect layers",
  "What is my task today?",
  "How do I run a marathon?",
  "Explain e.g. and i.e. in one line; gpt-5.4 is 3.5x faster"
]
