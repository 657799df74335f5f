/**
 * Building the server from layers. `AppLayer` is every service the app needs; swap any one of them
 * by providing your own layer first (see README "Composing your own layers").
 */
import { HttpServer } from "@effect/platform"
import { Layer } from "effect"
import { AppConfig, Settings } from "./config/AppConfig.js"
import { app } from "./http/app.js"
import { KeyRepo } from "./services/KeyRepo.js"
import { Lifecycle } from "./services/Lifecycle.js"
import { Moderation } from "./services/Moderation.js"
import { Quota } from "./services/Quota.js"
import { Scheduler } from "./services/Scheduler.js"
import { Upstream } from "./upstream/Upstream.js"

/** The default services: in-memory stores, in-process scheduler, rules moderation, HTTP/simulator upstream. */
export const ServicesLayer = Layer.mergeAll(
  KeyRepo.layer,
  Quota.layer,
  Scheduler.layer,
  Moderation.layer,
  Upstream.layer,
  Lifecycle.layer
)

/** The app served over whatever HttpServer is provided (Node in main, port 0 in tests). */
export const serve = HttpServer.serve(app)
