/**
 * The install scripts the project needs (the `node` package's, which installs Node 24 itself;
 * esbuild's binary; Claude Code's) are allowed in package.json's `allowScripts`, which npm 11 reads:
 * an npm that blocks install scripts not listed there still installs Node 24, and `npm ci` warns of none.
 */
import { spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"

const ROOT = join(import.meta.dirname, "..", "..")
const json = (name: string) => JSON.parse(readFileSync(join(ROOT, name), "utf8")) as Record<string, unknown>

/** The lock's packages that run an install script (npm records `hasInstallScript`). */
const withInstallScripts = (): Array<string> => {
  const packages = json("package-lock.json")["packages"] as Record<string, { hasInstallScript?: boolean }>
  return Object.entries(packages)
    .filter(([, entry]) => entry.hasInstallScript === true)
    .map(([path]) => path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length))
    .sort()
}

describe("install scripts", () => {
  it("every package of the lock with an install script is allowed in package.json", () => {
    const allowed = (json("package.json")["allowScripts"] ?? {}) as Record<string, boolean>
    const needed = withInstallScripts()
    expect(needed).toEqual(["@anthropic-ai/claude-code", "esbuild", "node"])
    for (const name of needed) expect(allowed[name], name).toBe(true)
  })

  it("npm install-scripts ls finds none to review (where the npm on the PATH has the command, as npm 11 does)", (ctx) => {
    const npm = spawnSync("npm", ["install-scripts", "ls"], { cwd: ROOT, encoding: "utf8", timeout: 30_000 })
    if (npm.status !== 0 && /unknown command/i.test(`${npm.stdout}${npm.stderr}`)) ctx.skip()
    expect(npm.status, npm.stderr).toBe(0)
    expect(npm.stdout.trim()).toBe("No packages with unreviewed install scripts.")
  })
})
