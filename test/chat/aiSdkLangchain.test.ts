/**
 * The Chat Completions door read by two more real clients on both group platforms: the AI SDK's
 * openai-compatible provider (`generateText` / `streamText`, each with a tool loop) and
 * LangChain's `ChatOpenAI` with `bindTools`. Each must run its tool and get the model's answer.
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { ChatOpenAI } from "@langchain/openai"
import { HumanMessage, ToolMessage } from "@langchain/core/messages"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { generateText, stepCountIs, streamText, tool } from "ai"
import { z } from "zod"
import { GROUPS, startThreeGroups, type ThreeGroups } from "./threeGroups.js"

type Setup = ThreeGroups


const PROMPT = "What is the weather in Paris? Use get_weather."

describe("the Chat door through the AI SDK and LangChain", () => {
  let setup: Setup
  beforeAll(async () => {
    setup = await startThreeGroups()
  })
  afterAll(() => setup.close())

  for (const group of GROUPS) {
    describe(group.name, () => {
      const provider = () => createOpenAICompatible({ name: "modelgate", baseURL: `${setup.gw.url}/v1`, apiKey: group.key, includeUsage: true })
      const weather = (calls: Array<string>) =>
        tool({
          description: "The weather in a city",
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => {
            calls.push(city)
            return `Sunny in ${city}`
          }
        })

      it("AI SDK generateText runs the tool and answers", async () => {
        const calls: Array<string> = []
        const result = await generateText({
          model: provider().chatModel(group.model),
          prompt: PROMPT,
          tools: { get_weather: weather(calls) },
          stopWhen: stepCountIs(3)
        })
        expect(calls).toHaveLength(1)
        expect(result.steps.length).toBe(2)
        expect(result.text.length).toBeGreaterThan(0)
        expect(result.totalUsage.inputTokens).toBeGreaterThan(0)
      })

      it("AI SDK streamText runs the tool and streams the answer", async () => {
        const calls: Array<string> = []
        const result = streamText({
          model: provider().chatModel(group.model),
          prompt: PROMPT,
          tools: { get_weather: weather(calls) },
          stopWhen: stepCountIs(3)
        })
        let text = ""
        for await (const piece of result.textStream) text += piece
        expect(calls).toHaveLength(1)
        expect(text.length).toBeGreaterThan(0)
        expect((await result.finishReason)).toBe("stop")
      })

      it("LangChain ChatOpenAI with bindTools calls the tool, then answers its result", async () => {
        const model = new ChatOpenAI({ model: group.model, apiKey: group.key, configuration: { baseURL: `${setup.gw.url}/v1` }, maxRetries: 0 })
        const withTools = model.bindTools([{
          type: "function",
          function: { name: "get_weather", description: "The weather in a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }
        }])
        const first = await withTools.invoke([new HumanMessage(PROMPT)])
        const call = first.tool_calls?.[0]
        expect(call?.name).toBe("get_weather")
        expect(typeof call?.args["city"]).toBe("string")
        const second = await withTools.invoke([
          new HumanMessage(PROMPT),
          first,
          new ToolMessage({ tool_call_id: call?.id ?? "", content: "Sunny" })
        ])
        expect(typeof second.content === "string" ? second.content.length : 0).toBeGreaterThan(0)
      })
    })
  }
})
