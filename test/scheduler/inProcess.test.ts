/**
 * The scheduler's behavioural suite (suite.ts) on the in-process implementation.
 */
import { describe } from "vitest"
import * as SchedulerInProcess from "../../src/services/scheduler/inProcess.js"
import { schedulerSuite } from "./suite.js"

describe("in-process scheduler", () => {
  schedulerSuite((data, options) => SchedulerInProcess.layerTest(data, options))
})
