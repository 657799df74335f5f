/** Process entry of the admin CLI (bin/modelgate.js loads this). */
import { runCli } from "./run.js"

const code = await runCli(process.argv.slice(2), process.env, {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  colors: process.stdout.isTTY === true
})
process.exitCode = code
