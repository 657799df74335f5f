/**
 * A command the CLI does not know, said with the group it belongs to: `modelgate topup` names
 * `modelgate users topup`, `modelgate keys craete` names `modelgate keys create`, so the reader
 * sees the command to type, not only the list it was missing from.
 */
import type { Command } from "effect/cli"
import { nearest } from "../config/suggest.js"

const childrenOf = (command: Command.Command.Any): ReadonlyArray<Command.Command.Any> => command.subcommands.flatMap((s) => s.commands)

/** `a`, `a and b`, `a, b and c`. */
const listed = (items: ReadonlyArray<string>, last: "and" | "or") =>
  items.length <= 1 ? items.join("") : `${items.slice(0, -1).join(", ")} ${last} ${items[items.length - 1]}`

/**
 * The text for `typed` not being a command under `parent` (the command path, "modelgate" first).
 * `root` is the whole tree, to find groups that do have a command by that name (or one close to it).
 */
export const unknownCommandText = (root: Command.Command.Any, parent: ReadonlyArray<string>, typed: string): string => {
  let here: Command.Command.Any = root
  for (const name of parent.slice(1)) here = childrenOf(here).find((c) => c.name === name) ?? here
  const path = parent.join(" ")
  const names = childrenOf(here).map((c) => c.name)
  const guess = nearest(typed, names)
  if (parent.length > 1) {
    const group = parent[parent.length - 1]
    return guess === undefined
      ? `unknown command '${typed}' in group '${group}'; \`${path} --help\` lists its commands`
      : `unknown command '${typed}' in group '${group}'; did you mean \`${path} ${guess}\`?`
  }
  // At the top: a group's command typed without its group, or a misspelt group or command.
  const owners = childrenOf(root).filter((group) => childrenOf(group).some((c) => c.name === typed))
  if (owners.length > 0) {
    const groups = listed(owners.map((g) => `'${g.name}'`), "and")
    const commands = listed(owners.map((g) => `\`${path} ${g.name} ${typed}\``), "or")
    return `unknown command '${typed}'; it belongs to ${owners.length > 1 ? "groups" : "group"} ${groups}: ${commands}`
  }
  return guess === undefined
    ? `unknown command '${typed}'; the commands are ${names.join(", ")} (\`${path} --help\` says more)`
    : `unknown command '${typed}'; did you mean \`${path} ${guess}\`?`
}
