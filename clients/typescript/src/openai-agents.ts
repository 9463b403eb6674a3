/**
 * `@agentmem/client/openai-agents`: {@link AgentmemSession}, a `Session`
 * of the OpenAI Agents SDK (`@openai/agents-core`) kept in agentmem.
 *
 * @packageDocumentation
 */
import type { AgentInputItem, OpenAIResponsesCompactionArgs, OpenAIResponsesCompactionAwareSession, OpenAIResponsesCompactionResult } from "@openai/agents-core";
import type { Client } from "./client.js";
import { once } from "./once.js";
import { CHAT_PINNING } from "./settings.js";
import { NothingToPopError } from "./errors.js";
import type { CompactRequest, CompactResponse, CreateSessionRequest, Item } from "./types.js";

/** The options of an {@link AgentmemSession}. */
export interface AgentmemSessionOptions {
  /** The client of the agentmem server. */
  client: Client;
  /** The agentmem session's ID (created on first use when missing). */
  sessionId: string;
  /**
   * What the session is created with on first use (user, agent, metadata,
   * retention, settings); its `id` is `sessionId`, and its `pinning`, when
   * this leaves it out, {@link CHAT_PINNING}.
   */
  create?: Omit<CreateSessionRequest, "id"> | undefined;
  /**
   * The agentmem compaction to run after each turn the runner stores
   * ({@link AgentmemSession.runCompaction}), e.g. `{ strategy:
   * "token_budget", budget: 16000 }` or `{ strategy: "summarize",
   * keep_recent: 8 }`. Without it the session is never compacted by the
   * runner.
   */
  compaction?: CompactRequest | undefined;
}

/**
 * A `Session` of the OpenAI Agents SDK whose history is an agentmem
 * session: the items the runner stores (user and assistant messages,
 * function calls and their outputs, reasoning, any other type) are sent to
 * `POST /v1/sessions/{id}/items` and {@link getItems} returns exactly
 * what {@link addItems} stored, in order, whatever the item type. The
 * session is also an agentmem session like any other: its context,
 * compaction, recall and the inspector see the conversation.
 *
 * @example
 * ```ts
 * import { Agent, run } from "@openai/agents";
 * import { Client } from "@agentmem/client";
 * import { AgentmemSession } from "@agentmem/client/openai-agents";
 *
 * const client = new Client({ baseUrl: "http://127.0.0.1:8080" });
 * const session = new AgentmemSession({ client, sessionId: "user-42-chat" });
 * const result = await run(agent, "What is the weather?", { session });
 * ```
 */
export class AgentmemSession implements OpenAIResponsesCompactionAwareSession {
  /** The client of the agentmem server. */
  readonly client: Client;
  /** The agentmem session's ID. */
  readonly sessionId: string;
  /** The compaction {@link runCompaction} runs, if any. */
  readonly compaction: CompactRequest | undefined;
  /** What the last compaction run by {@link runCompaction} did. */
  lastCompaction: CompactResponse | undefined;
  readonly #ensure: () => Promise<void>;

  /** Makes the session; nothing is sent until it is used. */
  constructor(options: AgentmemSessionOptions) {
    this.client = options.client;
    this.sessionId = options.sessionId;
    const create = { pinning: CHAT_PINNING, ...options.create, id: options.sessionId };
    this.#ensure = once(() => this.client.ensureSession(create));
    this.compaction = options.compaction;
  }

  /** Returns the session's ID, creating the agentmem session if it does not exist yet. */
  async getSessionId(): Promise<string> {
    await this.#ensure();
    return this.sessionId;
  }

  /**
   * Returns the stored items, oldest first; with `limit`, the newest
   * `limit` of them (still oldest first).
   */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    await this.#ensure();
    const items = await this.client.getItems(this.sessionId, { limit });
    return items as unknown as AgentInputItem[];
  }

  /**
   * Appends items, in one atomic request carrying a new Idempotency-Key,
   * so that the client's retries after a 503 store them once.
   */
  async addItems(items: AgentInputItem[]): Promise<void> {
    if (items.length === 0) return;
    await this.#ensure();
    await this.client.appendItems(this.sessionId, items as unknown as Item[], { idempotencyKey: newKey() });
  }

  /** Removes the newest item and returns it; undefined when the session holds none. */
  async popItem(): Promise<AgentInputItem | undefined> {
    await this.#ensure();
    try {
      return (await this.client.popItem(this.sessionId)) as unknown as AgentInputItem;
    } catch (e) {
      if (e instanceof NothingToPopError) return undefined;
      throw e;
    }
  }

  /**
   * Empties the session's history (its working set: the log keeps what
   * happened, for the inspector and recall). The session stays.
   */
  async clearSession(): Promise<void> {
    await this.#ensure();
    await this.client.clearItems(this.sessionId);
  }

  /**
   * The Agents SDK's compaction hook, which the runner calls after it
   * stores a turn: with the `compaction` option, agentmem compacts the
   * session on the server (`POST /v1/sessions/{id}/compact`) with that
   * strategy, which does nothing while the session is within its limits
   * (a budget, a number of steps), and {@link getItems} then returns the
   * compacted history: the items kept, as they were stored, and a
   * summary's, as agentmem renders it. Tool calls and their results are
   * kept or dropped together. OpenAI's own compaction arguments
   * (`responseId`, `compactionMode`, `store`) do not apply and are
   * ignored. Returns null: agentmem's compaction reports no model usage
   * (the extractive summarizer uses no model; the server's LLM summarizer
   * is accounted on the server).
   */
  async runCompaction(_args?: OpenAIResponsesCompactionArgs): Promise<OpenAIResponsesCompactionResult | null> {
    if (!this.compaction) return null;
    await this.#ensure();
    this.lastCompaction = await this.client.compact(this.sessionId, this.compaction);
    return null;
  }
}

/** newKey returns a new Idempotency-Key. */
function newKey(): string {
  return `am-items-${globalThis.crypto.randomUUID()}`;
}
