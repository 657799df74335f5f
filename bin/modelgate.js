#!/usr/bin/env node
// The admin command line (`npx modelgate help`). In a checkout with dev dependencies it runs the
// TypeScript source through tsx (like `npm run dev`), so it never runs a stale build; in an
// install without them (production) it runs the compiled dist/.
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"

const root = new URL("../", import.meta.url)
const source = new URL("src/cli/main.ts", root)
const built = new URL("dist/cli/main.js", root)

const tsx = await import("tsx/esm/api").catch(() => undefined)
if (tsx !== undefined && existsSync(fileURLToPath(source))) {
  tsx.register()
  await import(source.href)
} else if (existsSync(fileURLToPath(built))) {
  await import(built.href)
} else {
  process.stderr.write("modelgate: no build found; run `npm run build` (or install the dev dependencies)\n")
  process.exitCode = 1
}
