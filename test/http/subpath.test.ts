/**
 * A client's responses subpath cannot steer the upstream (issue 16, item 1): sent over a real
 * socket exactly as written (no URL normalisation on the way), every unsafe form is a 400
 * invalid_path envelope and no request reaches the provider; a safe one is forwarded as is.
 */
import { connect } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { fakeUpstreamGatewayForBlock } from "../support/block.js"

const KEY = "sk-test-openai-0001"
const BODY = JSON.stringify({ model: "gpt-5.4", input: "hi" })

/** POSTs to `path` byte for byte (curl --path-as-is); the status line and body of the answer. */
const postAsIs = (base: string, path: string) =>
  new Promise<{ status: number; text: string }>((resolve, reject) => {
    const { hostname, port } = new URL(base)
    const socket = connect(Number(port), hostname, () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\nauthorization: Bearer ${KEY}\r\n` +
          `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(BODY)}\r\n\r\n${BODY}`
      )
    })
    const parts: Array<Buffer> = []
    socket.on("data", (chunk: Buffer) => parts.push(chunk))
    socket.on("end", () => {
      const raw = Buffer.concat(parts).toString("utf8")
      resolve({ status: Number(raw.slice(9, 12)), text: raw.slice(raw.indexOf("\r\n\r\n") + 4) })
    })
    socket.on("error", reject)
  })

describe("responses subpaths over a socket", () => {
  const block = fakeUpstreamGatewayForBlock()

  it.each([
    "/v1/responses/../chat/completions",
    "/v1/responses/%2e%2e/chat/completions",
    "/responses/..%2fmodels",
    "/backend-api/codex/responses/a%5c..",
    "/v1/responses//compact",
    "/v1/responses/a/b/c/d",
    // Overlong UTF-8 for "..": no valid decoding, so no route matches it; still a subpath (issue 26, item 9).
    "/v1/responses/%c0%ae%c0%ae",
    "/responses/%c0%ae"
  ])("%s: 400 invalid_path, nothing sent upstream", async (path) => {
    const before = block.upstream.requests.length
    const answer = await postAsIs(block.gw.url, path)
    expect(answer.status).toBe(400)
    expect(answer.text).toContain(`"code":"invalid_path"`)
    expect(answer.text).toContain(`"type":"invalid_request_error"`)
    expect(block.upstream.requests.length).toBe(before)
  })

  it("a safe subpath is forwarded under the account's base URL", async () => {
    const answer = await postAsIs(block.gw.url, "/v1/responses/compact")
    expect(answer.status).not.toBe(400)
    expect(block.upstream.requests.at(-1)?.path).toBe("/v1/responses/compact")
  })
})
