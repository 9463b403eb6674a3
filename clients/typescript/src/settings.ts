/**
 * A session's settings: the pinnings the server and the framework
 * adapters use.
 *
 * @module
 */
import type { Pinning } from "./types.js";

/**
 * The pinning of a session created without one: every system prompt, the
 * first task and the newest summary (an agent run's instructions and
 * task).
 */
export const DEFAULT_PINNING: Readonly<Required<Pinning>> = Object.freeze({ system_prompts: true, first_task: true, tasks: false, summary: true });

/**
 * A chat's pinning: every system prompt and the newest summary, not the
 * first question, which is one among many. The sessions that
 * `AgentmemSession` and `AgentmemChatMessageHistory` create use it unless
 * their `create` option gives another.
 */
export const CHAT_PINNING: Readonly<Required<Pinning>> = Object.freeze({ system_prompts: true, first_task: false, tasks: false, summary: true });
