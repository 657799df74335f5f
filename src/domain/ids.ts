import { randomBytes, randomUUID } from "node:crypto"

/** Ids with the prefixes clients expect (`resp_`, `msg_`, `fc_`, `rs_`); 24 random hex chars is plenty. */
export const newId = (prefix: "resp" | "msg" | "fc" | "rs" | "call" | "toolu"): string =>
  `${prefix}_${randomBytes(12).toString("hex")}`

export const newRequestId = (): string => randomUUID()
