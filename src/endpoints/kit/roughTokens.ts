/** The rough token count admission uses (the TPM limit, the balance check before a call), whatever the wire format. */

/** Characters / 4 of `texts` and of the tool definitions (whatever the wire format's `tools` array holds). */
export const roughTokens = (texts: ReadonlyArray<string>, tools: unknown): number => {
  let chars = 0
  for (const text of texts) chars += text.length
  if (Array.isArray(tools) && tools.length > 0) chars += JSON.stringify(tools).length
  return Math.ceil(chars / 4)
}
