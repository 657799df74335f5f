/** src/endpoints/responses/validate.ts: the body checks in pipeline order, as pure functions. */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import fc from "fast-check"
import type { InvalidRequest } from "../../src/domain/errors.js"
import { checkToolOutputs, validateResponsesBody } from "../../src/endpoints/responses/validate.js"

const failure = (json: unknown): InvalidRequest => {
  const result = validateResponsesBody(json)
  if (Result.isSuccess(result)) throw new Error(`expected a failure for ${JSON.stringify(json)}`)
  return result.failure
}

const success = (json: unknown) => {
  const result = validateResponsesBody(json)
  if (Result.isFailure(result)) throw new Error(`unexpected failure: ${result.failure.message}`)
  return result.success
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
    for (const id of ["msg_1", "message_abc", "item_x", "chatcmpl_y", " msg_1 ", "Msg_ABC", "chatcmpl-9abc", "msg-1", "msg_a.b"]) {
      expect(failure({ model: "m", previous_response_id: id }).message).toBe(asMessage)
    }
    for (const id of ["resp_1", "resp_msg_1", "msg_", "msg-", "msgs_1", "x", 7, { id: "resp_1" }, ["resp_1"], "", "   "]) {
      expect(failure({ model: "m", previous_response_id: id }).message).toBe(v2)
    }
    expect(success({ model: "m", previous_response_id: null }).model).toBe("m")
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
  const ok = (input: unknown) => expect(Result.isSuccess(checkToolOutputs(input))).toBe(true)
  const bad = (input: unknown) => {
    const result = checkToolOutputs(input)
    if (Result.isSuccess(result)) throw new Error("expected a failure")
    expect(result.failure.code).toBe("function_call_output_uncorrelated")
    return result.failure
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

/**
 * The checks as they were written by hand before the body had a Schema: the reference the decoded
 * version must agree with on every body (same verdict, same code, message and param).
 */
const reference = (json: unknown): { code: string; message: string; param: string | null } | "ok" => {
  const rec = (v: unknown): Record<string, unknown> | undefined =>
    typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined
  const body = rec(json)
  if (!body) return { code: "invalid_json", message: "Request body must be a JSON object", param: null }
  if (typeof body["model"] !== "string" || body["model"] === "") {
    return { code: "missing_model", message: "model is required", param: "model" }
  }
  if (body["stream"] !== undefined && typeof body["stream"] !== "boolean") {
    return { code: "invalid_stream_type", message: "invalid stream field type", param: "stream" }
  }
  const previous = body["previous_response_id"]
  if (previous !== undefined && previous !== null) {
    // Null is absent; any other value, a blank string too, names history HTTP does not keep.
    const id = (typeof previous === "string" ? previous : JSON.stringify(previous)).trim()
    return /^(msg|message|item|chatcmpl)_[a-z0-9_-]{1,256}$/.test(id.toLowerCase())
      ? {
        code: "previous_response_id_not_response_id",
        message: "previous_response_id must be a response.id (resp_*), not a message id",
        param: "previous_response_id"
      }
      : {
        code: "previous_response_id_unsupported",
        message: "previous_response_id is only supported on Responses WebSocket v2",
        param: "previous_response_id"
      }
  }
  const input = body["input"]
  if (!Array.isArray(input)) return "ok"
  const str = (v: unknown) => (typeof v === "string" ? v.trim() : "")
  const calls = new Set<string>()
  const outputs: Array<[number, string]> = []
  input.forEach((raw, i) => {
    const item = rec(raw)
    const type = item?.["type"]
    if (!item || typeof type !== "string") return
    if (["function_call", "custom_tool_call", "tool_search_call", "local_shell_call", "mcp_tool_call", "tool_call"].includes(type)) {
      if (str(item["call_id"]) !== "") calls.add(str(item["call_id"]))
    } else if (type === "item_reference") {
      if (str(item["id"]) !== "") calls.add(str(item["id"]))
    } else if (["function_call_output", "custom_tool_call_output", "tool_search_output", "mcp_tool_call_output"].includes(type)) {
      outputs.push([i, str(item["call_id"])])
    }
  })
  for (const [i, callId] of outputs) {
    if (callId === "" || !calls.has(callId)) {
      return {
        code: "function_call_output_uncorrelated",
        message: callId === ""
          ? "function_call_output requires call_id on HTTP requests; send the matching function_call item in the same input " +
            "(continuation via previous_response_id is only supported on Responses WebSocket v2)"
          : `function_call_output with call_id '${callId}' has no matching function_call or item_reference in input; ` +
            "send the full history on HTTP requests (continuation via previous_response_id is only supported on Responses WebSocket v2)",
        param: `input[${i}].call_id`
      }
    }
  }
  return "ok"
}

/** Any JSON value, biased toward the shapes the fields expect. */
const junk = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(null, "", " ", 0, -1, 1.5, true, false, [], {}, "auto", "msg_1", "resp_1")
)
const callId = fc.constantFrom("c1", "c2", " c1 ", "", 7, null)
const callTypes = fc.constantFrom("function_call", "custom_tool_call", "tool_search_call", "local_shell_call", "mcp_tool_call", "tool_call")
const outputTypes = fc.constantFrom(
  "function_call_output",
  "custom_tool_call_output",
  "tool_search_output",
  "mcp_tool_call_output",
  "local_shell_call_output"
)
const otherTypes = fc.constantFrom("message", "reasoning", "web_search_call", "weird", 5, null)
const itemArb = fc.oneof(
  fc.record({ type: callTypes, call_id: callId }, { requiredKeys: ["type"] }),
  fc.record({ type: outputTypes, call_id: callId, output: junk }, { requiredKeys: ["type"] }),
  fc.record({ type: fc.constant("item_reference"), id: callId }, { requiredKeys: ["type"] }),
  fc.record({ type: otherTypes, role: junk, content: junk }, { requiredKeys: [] }),
  junk
)
const bodyArb = fc.record(
  {
    model: fc.oneof(fc.constantFrom("m", "gpt-5.4", "", 0, null), junk),
    stream: fc.oneof(fc.boolean(), junk),
    previous_response_id: fc.oneof(fc.constantFrom(null, "", "  ", "resp_1", "msg_1", "Item_x"), junk),
    input: fc.oneof(fc.array(itemArb, { maxLength: 8 }), junk),
    instructions: junk,
    tools: fc.oneof(fc.array(junk, { maxLength: 3 }), junk),
    tool_choice: junk,
    reasoning: fc.oneof(fc.record({ effort: junk, summary: junk }), junk),
    max_output_tokens: junk,
    metadata: junk,
    text: fc.oneof(fc.record({ format: junk, verbosity: junk }), junk),
    include: fc.oneof(fc.array(junk, { maxLength: 3 }), junk),
    temperature: junk,
    store: junk,
    user: junk,
    unknown_field: junk
  },
  { requiredKeys: [] }
)

describe("validateResponsesBody: the Schema agrees with the hand-written checks", () => {
  it("same verdict, code, message and param on any body", () => {
    fc.assert(
      fc.property(fc.oneof({ weight: 1, arbitrary: junk }, { weight: 6, arbitrary: bodyArb }), (json) => {
        const expected = reference(json)
        const result = validateResponsesBody(json)
        if (expected === "ok") {
          if (Result.isFailure(result)) throw new Error(`refused ${JSON.stringify(json)}: ${result.failure.code}`)
          expect(result.success.body).toBe(json)
        } else {
          if (Result.isSuccess(result)) throw new Error(`accepted ${JSON.stringify(json)}, expected ${expected.code}`)
          expect({ code: result.failure.code, message: result.failure.message, param: result.failure.param }).toEqual(expected)
        }
      }),
      { numRuns: 3000 }
    )
  })

  it("a field the gateway only reads never refuses a body, whatever its value", () => {
    const lenientFields = [
      "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "reasoning", "max_output_tokens",
      "max_tool_calls", "temperature", "top_p", "top_logprobs", "text", "include", "store", "background", "metadata",
      "prompt_cache_key", "service_tier", "truncation", "user", "safety_identifier", "stream_options", "conversation", "prompt"
    ]
    fc.assert(
      fc.property(fc.constantFrom(...lenientFields), fc.anything(), (field, value) => {
        fc.pre(field !== "input" || !Array.isArray(value))
        // `background: true` alone is refused (background_not_supported): its answer would carry no usage.
        fc.pre(field !== "background" || value !== true)
        expect(Result.isSuccess(validateResponsesBody({ model: "m", [field]: value }))).toBe(true)
      }),
      { numRuns: 2000 }
    )
  })
})

describe("validateResponsesBody: the decoded view", () => {
  const decoded = (json: Record<string, unknown>) => success({ model: "m", ...json }).decoded

  it("reads each input item's kind and the fields the gateway uses, and keeps the rest of the item", () => {
    const input = [
      { type: "message", role: "developer", content: [{ type: "input_text", text: "rules" }] },
      { role: "user", content: "hi" },
      { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "abc" },
      { type: "function_call", id: "fc_1", call_id: "c1", name: "shell", arguments: "{}", status: "completed" },
      { type: "function_call_output", call_id: "c1", output: "done" },
      { type: "custom_tool_call", call_id: "c2", name: "apply_patch", input: "*** Begin Patch" },
      { type: "custom_tool_call_output", call_id: "c2", output: [{ type: "input_text", text: "ok" }] },
      { type: "item_reference", id: "c3" },
      { type: "image_generation_call", id: "ig_1", status: "completed", result: "iVBOR" },
      { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search" } }
    ]
    const items = decoded({ input }).input
    if (!Array.isArray(items)) throw new Error("input should decode as a list")
    expect(items.map((item) => item.type)).toEqual([
      "message", undefined, "reasoning", "function_call", "function_call_output", "custom_tool_call",
      "custom_tool_call_output", "item_reference", "image_generation_call", "web_search_call"
    ])
    expect(items).toEqual(input)
    const [developer, user, reasoning, call, output, custom, , reference, image, search] = items
    expect(developer).toMatchObject({ type: "message", role: "developer" })
    expect(user).toMatchObject({ role: "user", content: "hi" })
    if (reasoning?.type !== "reasoning") throw new Error("reasoning")
    expect(reasoning.encrypted_content).toBe("abc")
    if (call?.type !== "function_call") throw new Error("function_call")
    expect([call.call_id, call.name, call.arguments, call["status"]]).toEqual(["c1", "shell", "{}", "completed"])
    if (output?.type !== "function_call_output") throw new Error("function_call_output")
    expect([output.call_id, output.output]).toEqual(["c1", "done"])
    if (custom?.type !== "custom_tool_call") throw new Error("custom_tool_call")
    expect(custom.input).toBe("*** Begin Patch")
    if (reference?.type !== "item_reference") throw new Error("item_reference")
    expect(reference.id).toBe("c3")
    if (image?.type !== "image_generation_call") throw new Error("image_generation_call")
    expect(image.result).toBe("iVBOR")
    expect(search?.["action"]).toEqual({ type: "search" })
  })

  it("an element of no known kind is kept as unrecognized, never refused", () => {
    const odd = [{ type: "brand_new_item", x: 1 }, { id: "msg_1" }, { role: 5 }, "text", null, [1], { type: 3 }]
    const items = decoded({ input: odd }).input
    expect(items).toEqual(odd.map((value) => ({ type: "unrecognized", value })))
  })

  it("a field of a known item with the wrong type reads as absent; the raw item is untouched in body", () => {
    const input = [{ type: "function_call", call_id: 42, name: ["x"], arguments: "{}" }]
    const ok = success({ model: "m", input, tools: [{ type: "function", name: "f" }] })
    const items = ok.decoded.input
    if (!Array.isArray(items) || items[0]?.type !== "function_call") throw new Error("expected a function_call")
    expect(items[0].call_id).toBeUndefined()
    expect(items[0].name).toBeUndefined()
    expect(items[0].arguments).toBe("{}")
    expect(ok.body["input"]).toBe(input)
    expect(input[0]).toEqual({ type: "function_call", call_id: 42, name: ["x"], arguments: "{}" })
  })

  it("a string input stays a string; input of another type reads as absent", () => {
    expect(decoded({ input: "hello" }).input).toBe("hello")
    expect(decoded({ input: 5 }).input).toBeUndefined()
    expect(decoded({ input: { role: "user" } }).input).toBeUndefined()
  })

  it("tools: type and name, everything else kept; a non-object tool reads as absent in its place", () => {
    const shell = { type: "function", name: "shell", parameters: { type: "object", properties: {} }, strict: false }
    const tools = decoded({ tools: [shell, { type: "web_search" }, "bogus", { type: 1, name: "n" }] }).tools
    expect(tools).toEqual([shell, { type: "web_search" }, undefined, { type: undefined, name: "n" }])
    expect(tools?.[0]?.["parameters"]).toBe(shell.parameters)
  })

  it("tool_choice: a mode, or an object naming a tool; anything else reads as absent", () => {
    expect(decoded({ tool_choice: "required" }).tool_choice).toBe("required")
    expect(decoded({ tool_choice: { type: "function", name: "shell" } }).tool_choice).toEqual({ type: "function", name: "shell" })
    expect(decoded({ tool_choice: { type: "allowed_tools", mode: "auto", tools: [] } }).tool_choice)
      .toEqual({ type: "allowed_tools", mode: "auto", tools: [] })
    expect(decoded({ tool_choice: "sometimes" }).tool_choice).toBeUndefined()
    expect(decoded({ tool_choice: { name: "shell" } }).tool_choice).toBeUndefined()
  })

  it("the other fields the gateway reads, typed; wrong types read as absent", () => {
    const view = decoded({
      stream: true,
      instructions: "be brief",
      reasoning: { effort: "high", summary: "auto" },
      max_output_tokens: 1000,
      temperature: 0.2,
      top_p: 0.9,
      parallel_tool_calls: false,
      text: { format: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true }, verbosity: "low" },
      include: ["reasoning.encrypted_content"],
      store: false,
      metadata: { trace: "t1" },
      prompt_cache_key: "k",
      user: "u",
      safety_identifier: "s"
    })
    expect(view).toMatchObject({
      model: "m",
      stream: true,
      instructions: "be brief",
      reasoning: { effort: "high", summary: "auto" },
      max_output_tokens: 1000,
      temperature: 0.2,
      top_p: 0.9,
      parallel_tool_calls: false,
      text: { format: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true }, verbosity: "low" },
      include: ["reasoning.encrypted_content"],
      store: false,
      metadata: { trace: "t1" },
      prompt_cache_key: "k",
      user: "u",
      safety_identifier: "s"
    })
    const wrong = decoded({
      instructions: 5,
      reasoning: "high",
      max_output_tokens: "1000",
      temperature: null,
      text: { format: "json", verbosity: 3 },
      include: ["a", 1],
      store: "no",
      metadata: []
    })
    expect(wrong).toMatchObject({ instructions: undefined, reasoning: undefined, max_output_tokens: undefined, temperature: undefined })
    expect(wrong.text).toEqual({ format: undefined, verbosity: undefined })
    expect([wrong.include, wrong.store, wrong.metadata]).toEqual([undefined, undefined, undefined])
  })

  it("fields the gateway does not read stay in body only, as the client sent them", () => {
    const body = { model: "m", input: "hi", client_metadata: { originator: "codex" }, service_tier: "flex", x_custom: [1, 2] }
    const ok = success(body)
    expect(ok.body).toBe(body)
    expect(ok.body["client_metadata"]).toEqual({ originator: "codex" })
    expect(ok.body["x_custom"]).toEqual([1, 2])
    expect(Object.keys(ok.decoded)).not.toContain("client_metadata")
    expect(Object.keys(ok.decoded)).not.toContain("x_custom")
    expect(ok.decoded.service_tier).toBe("flex")
  })
})
