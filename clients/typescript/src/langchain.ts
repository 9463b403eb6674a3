/**
 * `@agentmem/client/langchain`: {@link AgentmemChatMessageHistory}, a
 * LangChain chat message history (`@langchain/core`) kept in agentmem.
 *
 * @packageDocumentation
 */
import { BaseListChatMessageHistory } from "@langchain/core/chat_history";
import { AIMessage, type BaseMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import type { Client } from "./client.js";
import { once } from "./once.js";
import { CHAT_PINNING } from "./settings.js";
import type { CreateSessionRequest, OpenAIMessage, Schemas, Step } from "./types.js";

/** The options of an {@link AgentmemChatMessageHistory}. */
export interface AgentmemChatMessageHistoryOptions {
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
}

/**
 * A LangChain chat message history whose messages are an agentmem
 * session's: each message added is sent to `POST
 * /v1/sessions/{id}/messages` as an OpenAI chat message, one request per
 * message, as LangChain saves them (an AI message with tool calls first,
 * its tool messages later), and {@link getMessages} reads the session's
 * working set back. Human, AI (with tool calls), tool and system messages
 * round-trip with their IDs, contents, tool calls (ID, name, arguments)
 * and tool-call IDs.
 *
 * What agentmem stores is typed steps: a human message is a task, an AI
 * message an action whose tool results are the tool messages that answer
 * its calls. So a tool message reads back right after the AI message
 * that made its call, in call order, and content blocks of text are
 * stored and read back as one string (other blocks are refused). A message added twice with the
 * same ID is stored once. {@link clear} empties the working set; the
 * session's log keeps what happened (the inspector shows it).
 *
 * @example
 * ```ts
 * const history = new AgentmemChatMessageHistory({ client, sessionId: "chat-1" });
 * const chain = new RunnableWithMessageHistory({
 *   runnable: prompt.pipe(model),
 *   getMessageHistory: () => history,
 *   inputMessagesKey: "input",
 *   historyMessagesKey: "history",
 * });
 * ```
 */
export class AgentmemChatMessageHistory extends BaseListChatMessageHistory {
  /** The LangChain namespace of the class. */
  lc_namespace = ["agentmem", "stores", "message"];
  /** The client of the agentmem server. */
  readonly client: Client;
  /** The agentmem session's ID. */
  readonly sessionId: string;
  readonly #ensure: () => Promise<void>;

  /** Makes the history; nothing is sent until it is used. */
  constructor(options: AgentmemChatMessageHistoryOptions) {
    super();
    this.client = options.client;
    this.sessionId = options.sessionId;
    const create = { pinning: CHAT_PINNING, ...options.create, id: options.sessionId };
    this.#ensure = once(() => this.client.ensureSession(create));
  }

  /** Returns the session's messages, oldest first. */
  async getMessages(): Promise<BaseMessage[]> {
    await this.#ensure();
    const steps = await this.client.readWorkingSet(this.sessionId);
    return steps.flatMap(toMessages);
  }

  /** Adds a message (one request, safe to retry: it carries a new Idempotency-Key). */
  async addMessage(message: BaseMessage): Promise<void> {
    await this.#ensure();
    await this.client.appendMessages(this.sessionId, toOpenAI(message), { idempotencyKey: `${KEY_PREFIX}${crypto.randomUUID()}` });
  }

  /** Adds messages in order, one request each (as a framework saving them one at a time would). */
  override async addMessages(messages: BaseMessage[]): Promise<void> {
    for (const m of messages) await this.addMessage(m);
  }

  /** Empties the history: the session's working set (its log keeps what happened). */
  override async clear(): Promise<void> {
    await this.#ensure();
    await this.client.clearItems(this.sessionId);
  }
}

/**
 * The prefix of the Idempotency-Keys of {@link AgentmemChatMessageHistory}:
 * a message without an ID is stored under the step ID KEY/0, which reads
 * back as no ID.
 */
const KEY_PREFIX = "am-lc-";
const keyedID = /^am-lc-[0-9a-f-]{36}\/\d+$/;


/** toOpenAI converts a LangChain message to the OpenAI chat message agentmem takes. */
function toOpenAI(m: BaseMessage): OpenAIMessage {
  const content = toContent(m.content);
  const id = m.id === undefined || m.id === "" ? {} : { id: m.id };
  switch (m.getType()) {
    case "human":
      return { ...id, role: "user", content };
    case "system":
      return { ...id, role: "system", content };
    case "ai": {
      const calls = (m as AIMessage).tool_calls ?? [];
      const msg: OpenAIMessage = { ...id, role: "assistant", content };
      if (calls.length > 0) {
        msg.tool_calls = calls.map((c) => ({
          id: c.id ?? "",
          type: "function" as const,
          function: { name: c.name, arguments: JSON.stringify(c.args ?? {}) },
        }));
      }
      return msg;
    }
    case "tool":
      return { ...id, role: "tool", tool_call_id: (m as ToolMessage).tool_call_id, content };
    default:
      throw new TypeError(`agentmem: a ${m.getType()} message cannot be stored (human, ai, system and tool messages can)`);
  }
}

/** toContent returns a message's content as text: a string as it is, text blocks joined. */
function toContent(c: BaseMessage["content"]): string {
  if (typeof c === "string") return c;
  let text = "";
  for (const b of c) {
    if (b.type === "text" && typeof b["text"] === "string") text += b["text"];
    else throw new TypeError(`agentmem: a ${String(b.type)} content block cannot be stored (text blocks can)`);
  }
  return text;
}

/** messageID returns a step's ID as the message's, or undefined for one the history made up. */
function messageID(id: string | undefined): string | undefined {
  return id === undefined || id === "" || keyedID.test(id) ? undefined : id;
}

/** idField is `{ id }` of a step's (or tool result's) ID as the message's, or `{}`. */
function idField(stepID: string | undefined): { id?: string } {
  const id = messageID(stepID);
  return id === undefined ? {} : { id };
}

type ActionStep = Schemas["ActionStep"];

/** toMessages converts a step of the working set to the LangChain messages it holds. */
function toMessages(s: Step): BaseMessage[] {
  const id = idField(s.id);
  switch (s.type) {
    case "system_prompt":
      return [new SystemMessage({ content: s.content, ...id })];
    case "task":
      return [new HumanMessage({ content: s.task, ...id })];
    case "summary":
      return [new SystemMessage({ content: s.summary, ...id })];
    case "final_answer":
      return [new AIMessage({ content: s.answer, ...id })];
    case "message": {
      const text = typeof s.message.content === "string" ? s.message.content : "";
      if (s.message.role === "user") return [new HumanMessage({ content: text, ...id })];
      if (s.message.role === "system") return [new SystemMessage({ content: text, ...id })];
      return [new AIMessage({ content: text, ...id })];
    }
    case "action":
      return actionMessages(s, id);
    default:
      return []; // planning and scratchpad steps are the agent's notes, not messages
  }
}

function actionMessages(a: ActionStep, id: { id?: string }): BaseMessage[] {
  const calls = a.tool_calls ?? [];
  const out: BaseMessage[] = [
    new AIMessage({
      content: a.model_output ?? "",
      ...id,
      tool_calls: calls.map((c) => ({
        id: c.id,
        name: c.function.name,
        args: c.function.arguments ? (JSON.parse(c.function.arguments) as Record<string, unknown>) : {},
        type: "tool_call" as const,
      })),
    }),
  ];
  for (const r of a.results ?? []) {
    out.push(
      new ToolMessage({
        content: r.content,
        tool_call_id: r.call_id,
        ...idField(r.id),
        ...(r.is_error ? { status: "error" as const } : {}),
      }),
    );
  }
  return out;
}
