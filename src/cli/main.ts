/** Process entry of the admin CLI (bin/modelgate.js loads this). */
import { runCli } from "./run.js"

/** Stdin to its end (an account key piped in); at most 64 KiB, no key is longer. */
const readStdin = () =>
  new Promise<string>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    process.stdin.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > 65_536) {
        process.stdin.destroy()
        reject(new Error("more than 64 KiB on stdin: pipe the account's key only"))
      } else chunks.push(chunk)
    })
    process.stdin.once("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    process.stdin.once("error", reject)
  })

const code = await runCli(process.argv.slice(2), process.env, {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  colors: process.stdout.isTTY === true,
  stdin: { piped: process.stdin.isTTY !== true, read: readStdin }
})
process.exitCode = code
