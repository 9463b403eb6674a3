/**
 * `@agentmem/client`: a client of the agentmem HTTP API, with no runtime
 * dependency beyond `fetch` (Node 20+ and browsers).
 *
 * The framework adapters are separate entry points, so that this one
 * imports no framework: `@agentmem/client/openai-agents` (a `Session` of
 * the OpenAI Agents SDK) and `@agentmem/client/langchain` (a LangChain
 * chat message history).
 *
 * @packageDocumentation
 */
export { Client, DEFAULT_MAX_RETRY_WAIT_MS, DEFAULT_RETRIES } from "./client.js";
export type { AppendMessagesOptions, AppendOptions, BlockOwner, BlockWriteOptions, CallOptions, ClientOptions, GetItemsQuery, PopOptions } from "./client.js";
export * from "./errors.js";
export type * from "./types.js";
export { workingSet } from "./workingset.js";
export { CHAT_PINNING, DEFAULT_PINNING } from "./settings.js";
