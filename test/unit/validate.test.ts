/** src/responses/validate.ts: the body checks in pipeline order, as pure functions. */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import type { InvalidRequest } from "../../src/domain/errors.js"
import { checkToolOutputs, validateResponsesBody } from "../../src/responses/validate.js"

const failure = (json: unknown): InvalidRequest => {
  const result = validateResponsesBody(json)
  if (Either.isRight(result)) throw new Error(`expected a failure for ${JSON.stringify(json)}`)
  return result.left
}

const success = (json: unknown) => {
  const result = validateResponsesBody(json)
  if (Either.isLeft(result)) throw new Error(`unexpected failure: ${result.left.message}`)
  return result.right
}

describe("validateResponsesBody", () => {
  it("returns the model, the stream flag and the whole body untouched", () => {
    const body = { model: "gpt-5.4", input: "hi", stream: true, extra: { kept: [1, 2] } }
    const ok = success(body)
    expect(ok.model).toBe("gpt-5.4")
    expect(ok.stream).toBe(true)
    expect(ok.body).toBe(body)
    expect(success({ model: "m" }).stream).toBe(false)
    expect(success({ model: "m", stream: false }).stream).toBe(false)
  })

  it("a non-object body is invalid_json", () => {
    for (const json of [null, [], "s", 1, true]) {
      expect(failure(json)).toMatchObject({ code: "invalid_json", message: "Request body must be a JSON object" })
    }
  })

  it("model: required non-empty string", () => {
    for (const model of [undefined, null, "", 0, 1, {}, ["m"]]) {
      expect(failure({ model })).toMatchObject({ code: "missing_model", message: "model is required", param: "model" })
    }
  })

  it("stream: absent or boolean", () => {
    for (const stream of ["true", "false", 1, 0, null, {}, []]) {
      expect(failure({ model: "m", stream })).toMatchObject({
        code: "invalid_stream_type",
        message: "invalid stream field type",
        param: "stream"
      })
    }
  })

  it("previous_response_id: message-like ids vs anything else", () => {
    const asMessage = "previous_response_id must be a response.id (resp_*), not a message id"
    const v2 = "previous_response_id is only supported on Responses WebSocket v2"
    for (const id of ["msg_1", "message_abc", "item_x", "chatcmpl_y", " msg_1 ", "Msg_ABC"]) {
      expect(failure({ model: "m", previous_response_id: id }).message).toBe(asMessage)
    }
    for (const id of ["resp_1", "resp_msg_1", "msg-1", "msg_", "x", 7, { id: "resp_1" }, ["resp_1"]]) {
      expect(failure({ model: "m", previous_response_id: id }).message).toBe(v2)
    }
    for (const id of [null, "", "   "]) expect(success({ model: "m", previous_response_id: id }).model).toBe("m")
  })

  it("checks in order: model, stream, previous_response_id, tool outputs", () => {
    const orphan = [{ type: "function_call_output", call_id: "c1", output: "x" }]
    expect(failure({ stream: 1, previous_response_id: "resp_1", input: orphan }).code).toBe("missing_model")
    expect(failure({ model: "m", stream: 1, previous_response_id: "resp_1", input: orphan }).code).toBe("invalid_stream_type")
    expect(failure({ model: "m", previous_response_id: "resp_1", input: orphan }).code).toBe("previous_response_id_unsupported")
    expect(failure({ model: "m", input: orphan }).code).toBe("function_call_output_uncorrelated")
  })
})

describe("checkToolOutputs", () => {
  const ok = (input: unknown) => expect(Either.isRight(checkToolOutputs(input))).toBe(true)
  const bad = (input: unknown) => {
    const result = checkToolOutputs(input)
    if (Either.isRight(result)) throw new Error("expected a failure")
    expect(result.left.code).toBe("function_call_output_uncorrelated")
    return result.left
  }

  it("passes inputs without tool outputs, and non-array inputs", () => {
    ok("hello")
    ok(undefined)
    ok([{ role: "user", content: "hi" }])
  })

  it("pairs an output with a call item of the same call_id, wherever it is", () => {
    ok([
      { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
      { type: "function_call_output", call_id: "c1", output: "x" }
    ])
    ok([
      { type: "function_call_output", call_id: "c1", output: "x" },
      { type: "function_call", call_id: "c1", name: "f", arguments: "{}" }
    ])
    ok([
      { type: "custom_tool_call", call_id: "c2", name: "g", input: "" },
      { type: "custom_tool_call_output", call_id: "c2", output: "y" }
    ])
  })

  it("pairs an output with an item_reference whose id is the call_id", () => {
    ok([{ type: "item_reference", id: "c1" }, { type: "function_call_output", call_id: "c1", output: "x" }])
  })

  it("refuses an output without a matching call, naming the input index", () => {
    const error = bad([
      { role: "user", content: "hi" },
      { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
      { type: "function_call_output", call_id: "c2", output: "x" }
    ])
    expect(error.param).toBe("input[2].call_id")
    expect(error.message).toContain("'c2'")
    expect(bad([{ type: "item_reference", id: "fc_1" }, { type: "function_call_output", call_id: "c1", output: "x" }]).param)
      .toBe("input[1].call_id")
  })

  it("refuses an output without a call_id", () => {
    const error = bad([{ type: "function_call_output", output: "x" }])
    expect(error.param).toBe("input[0].call_id")
    expect(error.message).toContain("Responses WebSocket v2")
    bad([{ type: "function_call", call_id: "", name: "f", arguments: "{}" }, { type: "function_call_output", call_id: "", output: "x" }])
  })
})
