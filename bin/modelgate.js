#!/usr/bin/env node
// The admin command line (`npx modelgate help`). In a checkout it runs the esbuild bundle
// .build/cli.mjs, rebuilt when src/ changed (scripts/bundle.mjs, shared with `npm start`): through
// tsx every command took 3-4 s to transpile and load src/ and effect's files; the bundle loads in a
// fraction of that. In an install without src/ or without esbuild it runs the compiled dist/.
import { existsSync } from "node:fs"
import { fileURLToPath, pathToFileURL } from "node:url"

// The store uses Node 24's built-in SQLite. `npx modelgate` finds the Node 24 that `npm ci`
// installs (node_modules/.bin comes first on npx's PATH); a bare `node bin/modelgate.js` may not.
if (Number(process.versions.node.split(".")[0]) < 24) {
  process.stderr.write(`modelgate: Node 24 or newer is required (this is ${process.version}); run it as \`npx modelgate\`, which uses node_modules/.bin/node\n`)
  process.exit(1)
}

const root = new URL("../", import.meta.url)
const builder = new URL("scripts/bundle.mjs", root)
const built = new URL("dist/cli/main.js", root)

const bundle = existsSync(fileURLToPath(new URL("src/cli/main.ts", root)))
  ? (await import(builder.href)).freshBundle("cli")
  : undefined
if (bundle !== undefined) {
  process.setSourceMapsEnabled(true)
  await import(pathToFileURL(bundle).href)
} else if (existsSync(fileURLToPath(built))) {
  await import(built.href)
} else {
  process.stderr.write("modelgate: no build found; run `npm ci` (with the dev dependencies) or `npm run build`\n")
  process.exitCode = 1
}
