#!/usr/bin/env node
// The admin command line (`npx modelgate help`). It runs the esbuild bundle .build/cli.mjs
// (scripts/bundle.mjs, shared with `npm start`): in a checkout it is rebuilt when src/ changed
// (through tsx every command took 3-4 s to transpile and load src/ and effect's files; the bundle
// loads in a fraction of that); a production install runs the bundle `npm run build` made.
import { pathToFileURL } from "node:url"

// The store uses Node 24's built-in SQLite. `npx modelgate` finds the Node 24 that `npm ci`
// installs (node_modules/.bin comes first on npx's PATH); a production install runs on the
// machine's own Node, which must then be 24.
if (Number(process.versions.node.split(".")[0]) < 24) {
  process.stderr.write(
    `modelgate: Node 24 or newer is required (this is ${process.version}). In a checkout, run it as \`npx modelgate\`, ` +
      "which uses the Node 24 `npm ci` installs; a production install (README \"Deploy\") needs Node 24 on the machine.\n"
  )
  process.exit(1)
}

const { freshBundle } = await import(new URL("../scripts/bundle.mjs", import.meta.url).href)
const bundle = freshBundle("cli")
if (bundle === undefined) {
  process.stderr.write(
    "modelgate: .build/ holds no up-to-date build and esbuild is not installed to make one: run `npm run build` " +
      "with the dev dependencies before installing without them (README \"Deploy\"), or `npm ci` for a development checkout\n"
  )
  process.exitCode = 1
} else {
  process.setSourceMapsEnabled(true)
  await import(pathToFileURL(bundle).href)
}
