import { ConflictError, ConnectionError, errorFromResponse, UnavailableError } from "./errors.js";
import type {
  AppendBlockRequest,
  AppendResponse,
  Block,
  BlockChange,
  CompactRequest,
  CompactResponse,
  ContextQuery,
  ContextResponse,
  CreateSessionRequest,
  Damaged,
  DamagedRecord,
  Fact,
  FactChange,
  ForgetUserResponse,
  FactPatch,
  FactsQuery,
  FactsResponse,
  ForkRequest,
  Item,
  ListSessionsQuery,
  ListSessionsResponse,
  OpenAIMessage,
  PopResponse,
  PutBlockRequest,
  ReadStepsQuery,
  ReadStepsResponse,
  RecallDocument,
  RecallDocumentInput,
  RecallSearchQuery,
  RecallSearchResponse,
  RememberRequest,
  RememberResponse,
  ExtractFactsRequest,
  ExtractFactsResponse,
  ReplaceBlockRequest,
  Session,
  Step,
} from "./types.js";
import { workingSet } from "./workingset.js";

/** The options of a {@link Client}. */
export interface ClientOptions {
  /** The server's base URL, e.g. `http://127.0.0.1:8080` (a path prefix is kept). */
  baseUrl: string;
  /** An API key (`agentmem keys create`), sent as `Authorization: Bearer <key>`. */
  apiKey?: string | undefined;
  /**
   * How many times a request that is safe to repeat (a read, a delete, an
   * append with an Idempotency-Key or with step IDs, a pop with If-Match,
   * a put of a memory block, an edit of one with If-Match)
   * is sent again after a 503 or a failed connection. Default 2; 0 turns
   * retries off.
   */
  retries?: number | undefined;
  /** The longest wait between two attempts, in milliseconds, whatever Retry-After says. Default 10000. */
  maxRetryWaitMs?: number | undefined;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch | undefined;
  /** Headers sent with every request. */
  headers?: Record<string, string> | undefined;
  /**
   * Called for each record a list or a search answered by the server
   * left out because its stored form does not decode (a session, a fact
   * or a recall document); the answers' `damaged` lists name them too.
   */
  onDamaged?: ((d: Damaged) => void) | undefined;
}

/** Options every call takes. */
export interface CallOptions {
  /** Aborts the request (and the waits between retries). */
  signal?: AbortSignal | undefined;
}

/** Options of an append. */
export interface AppendOptions extends CallOptions {
  /**
   * Makes a retried append store its steps once (1 to 100 visible ASCII
   * characters): the same key with the same body is a retry; with
   * another body, 409 `idempotency_key_reused`. With a key the client
   * retries the append after a 503.
   */
  idempotencyKey?: string | undefined;
  /** The session's expected last sequence number: the append is refused with 409 `conflict` if it differs. */
  ifMatch?: number | undefined;
}

/** Options of {@link Client.appendMessages}. */
export interface AppendMessagesOptions extends AppendOptions {
  /** Record every tool call still pending after the request as failed. */
  flushPending?: boolean | undefined;
}

/** The query of {@link Client.getItems} (`GET /v1/sessions/{id}/items`). */
export interface GetItemsQuery {
  /** Only the newest `limit` items (still oldest first). */
  limit?: number | undefined;
  /** The items per page the server answers (1 to 10000; default 1000). */
  page_size?: number | undefined;
}

/** Options of a pop. */
export interface PopOptions extends CallOptions {
  /** The session's expected last sequence number; makes the pop safe to retry. */
  ifMatch?: number | undefined;
}

/**
 * The owner of memory blocks: a user (its blocks are shown in every
 * session of the user) or a session (shown in that session only, hiding
 * the user's block of the same label).
 */
export type BlockOwner = { user: string; session?: undefined } | { session: string; user?: undefined };

/** Options of a write of a memory block. */
export interface BlockWriteOptions extends CallOptions {
  /**
   * The block's expected version (as read): the write is refused with 409
   * `conflict` if the block has changed since. Makes an append or a
   * replace safe to retry.
   */
  ifMatch?: number | undefined;
}

/** Query parameters; an array repeats its parameter (`filter=a:1&filter=b:2`). */
type Query = Record<string, string | number | boolean | readonly string[] | undefined>;

interface Request {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: Query | undefined;
  body?: unknown;
  headers?: Record<string, string> | undefined;
  /** The request may be sent again after a 503 or a failed connection. */
  safe: boolean;
  signal?: AbortSignal | undefined;
}

/** The default number of retries of a request that is safe to repeat. */
export const DEFAULT_RETRIES = 2;
/** The default cap on the wait between two attempts, in milliseconds. */
export const DEFAULT_MAX_RETRY_WAIT_MS = 10_000;

/**
 * A client of the agentmem HTTP API: sessions, message and step appends,
 * pop, context, compaction, recall, user facts, memory blocks, and the
 * items of the OpenAI Agents SDK. Errors are thrown as the subclass of
 * {@link AgentmemError} of their code; a request that is safe to repeat
 * is retried after a 503 as Retry-After says (bounded).
 *
 * @example
 * ```ts
 * const client = new Client({ baseUrl: "http://127.0.0.1:8080" });
 * await client.createSession({ id: "demo" });
 * await client.appendMessages("demo", { role: "user", content: "Hello" });
 * const ctx = await client.getContext("demo", { budget: 8000 });
 * ```
 */
export class Client {
  /** The base URL, without a trailing slash. */
  readonly baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #retries: number;
  readonly #maxWait: number;
  readonly #fetch: typeof fetch;
  readonly #headers: Record<string, string>;
  readonly #onDamaged: ((d: Damaged) => void) | undefined;

  /** Makes a client of the server at `options.baseUrl`. */
  constructor(options: ClientOptions) {
    let url: URL;
    try {
      url = new URL(options.baseUrl);
    } catch {
      throw new TypeError(`agentmem: baseUrl ${JSON.stringify(options.baseUrl)} is not a URL`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new TypeError(`agentmem: baseUrl must be http(s), not ${url.protocol}`);
    }
    if (options.apiKey !== undefined && /[\r\n]/.test(options.apiKey)) {
      throw new TypeError("agentmem: the API key holds a line break");
    }
    const retries = options.retries ?? DEFAULT_RETRIES;
    if (!Number.isInteger(retries) || retries < 0) {
      throw new TypeError("agentmem: retries must be a non-negative integer");
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#apiKey = options.apiKey;
    this.#retries = retries;
    this.#maxWait = options.maxRetryWaitMs ?? DEFAULT_MAX_RETRY_WAIT_MS;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#headers = { ...options.headers };
    this.#onDamaged = options.onDamaged;
  }

  // --- sessions -----------------------------------------------------------

  /**
   * Creates a session (`POST /v1/sessions`); its ID is new unless `req.id`
   * names one (409 `conflict` if taken). Its settings, `req.pinning` (by
   * default `DEFAULT_PINNING`; a chat wants `CHAT_PINNING`)
   * and `req.auto_compact`, are fixed at creation; the session returned
   * shows them as they apply. `req.extract_facts` has the server learn
   * facts about `req.user_id` from the session's turns in the background
   * (`true`) or not (`false`); left out, the server's default: `true`
   * without a user, or on a server that cannot extract facts, throws
   * `InvalidError` (field `extract_facts`).
   */
  createSession(req: CreateSessionRequest = {}, opts: CallOptions = {}): Promise<Session> {
    return this.#json({ method: "POST", path: "/v1/sessions", body: req, safe: false, signal: opts.signal });
  }

  /**
   * Creates the session `req.id` unless it exists already (the server
   * answers 409 `conflict` then, which is not an error here); resolves to
   * whether it was created.
   */
  async ensureSession(req: CreateSessionRequest & { id: string }, opts: CallOptions = {}): Promise<boolean> {
    try {
      await this.createSession(req, opts);
      return true;
    } catch (e) {
      if (e instanceof ConflictError && e.code === "conflict") return false;
      throw e;
    }
  }

  /** Returns a session (`GET /v1/sessions/{id}`); {@link NotFoundError} if there is none. */
  getSession(id: string, opts: CallOptions = {}): Promise<Session> {
    return this.#json({ method: "GET", path: `/v1/sessions/${seg(id)}`, safe: true, signal: opts.signal });
  }

  /**
   * Lists the sessions of the key's tenant, newest first, a page at a time
   * (`GET /v1/sessions`); the page's `damaged` names the sessions left out
   * because their stored record does not decode.
   */
  async listSessions(query: ListSessionsQuery = {}, opts: CallOptions = {}): Promise<ListSessionsResponse> {
    const page = await this.#json<ListSessionsResponse>({ method: "GET", path: "/v1/sessions", query, safe: true, signal: opts.signal });
    this.#damaged("session", page.damaged);
    return page;
  }

  /** Lists every session of the key's tenant that matches, following the pages. */
  async *allSessions(query: Omit<ListSessionsQuery, "page_token"> = {}, opts: CallOptions = {}): AsyncGenerator<Session> {
    let token: string | undefined;
    do {
      const page = await this.listSessions(token === undefined ? query : { ...query, page_token: token }, opts);
      yield* page.sessions;
      token = page.next_page_token;
    } while (token);
  }

  /** Deletes a session and its log (`DELETE /v1/sessions/{id}`). */
  async deleteSession(id: string, opts: CallOptions = {}): Promise<void> {
    await this.#send({ method: "DELETE", path: `/v1/sessions/${seg(id)}`, safe: true, signal: opts.signal });
  }

  /**
   * Forks a session (`POST /v1/sessions/{id}/fork`): a branch that sees its
   * log up to `req.at_seq`, with the parent's metadata, retention and
   * settings unless `req` gives others.
   */
  forkSession(id: string, req: ForkRequest = {}, opts: CallOptions = {}): Promise<Session> {
    return this.#json({ method: "POST", path: `/v1/sessions/${seg(id)}/fork`, body: req, safe: false, signal: opts.signal });
  }

  // --- steps and messages ------------------------------------------------

  /**
   * Appends typed steps (`POST /v1/sessions/{id}/steps`), atomically. Safe
   * to retry (and retried after a 503) with an Idempotency-Key or when
   * every step has an ID.
   */
  appendSteps(id: string, steps: Step | Step[], opts: AppendOptions = {}): Promise<AppendResponse> {
    const list = Array.isArray(steps) ? steps : [steps];
    const safe = opts.idempotencyKey !== undefined || list.every((s) => s.id !== undefined && s.id !== "");
    return this.#json({
      method: "POST",
      path: `/v1/sessions/${seg(id)}/steps`,
      body: steps,
      headers: appendHeaders(opts),
      safe,
      signal: opts.signal,
    });
  }

  /**
   * Appends OpenAI chat messages (`POST /v1/sessions/{id}/messages`), one
   * or a list, folded into steps. Messages may come one at a time: an
   * assistant message whose tool calls have no results yet is stored as
   * a pending action that later tool messages complete. A message's `id`
   * becomes its step's (or tool result's) ID.
   */
  appendMessages(id: string, messages: OpenAIMessage | OpenAIMessage[], opts: AppendMessagesOptions = {}): Promise<AppendResponse> {
    const list = Array.isArray(messages) ? messages : [messages];
    return this.#json({
      method: "POST",
      path: `/v1/sessions/${seg(id)}/messages`,
      query: { flush_pending: opts.flushPending },
      body: messages,
      headers: appendHeaders(opts),
      safe: opts.idempotencyKey !== undefined || list.every((m) => m.id !== undefined),
      signal: opts.signal,
    });
  }

  /** Reads entries of a session's log (`GET /v1/sessions/{id}/steps`), oldest first. */
  readSteps(id: string, query: ReadStepsQuery = {}, opts: CallOptions = {}): Promise<ReadStepsResponse> {
    return this.#json({ method: "GET", path: `/v1/sessions/${seg(id)}/steps`, query, safe: true, signal: opts.signal });
  }

  /**
   * Reads a session's whole log, a page at a time, and returns its
   * working set: the steps a context is made from, pending actions
   * included, with the copies that compactions and tool results sent later
   * put in place of the steps they changed.
   */
  async readWorkingSet(id: string, opts: CallOptions = {}): Promise<Step[]> {
    const steps: ReadStepsResponse["steps"] = [];
    const compactions: NonNullable<ReadStepsResponse["compactions"]> = [];
    let after = 0;
    for (;;) {
      const page = await this.readSteps(id, { after, limit: READ_PAGE }, opts);
      steps.push(...page.steps);
      compactions.push(...(page.compactions ?? []));
      let max = after;
      for (const s of page.steps) max = Math.max(max, s.number ?? 0);
      for (const c of page.compactions ?? []) max = Math.max(max, c.seq);
      if (max >= page.last_seq || max === after) break;
      after = max;
    }
    return workingSet(steps, compactions);
  }

  /**
   * Removes the newest message of the session's working set and returns
   * it (`POST /v1/sessions/{id}/pop`); {@link NothingToPopError} when
   * it is empty.
   */
  pop(id: string, opts: PopOptions = {}): Promise<PopResponse> {
    return this.#json({
      method: "POST",
      path: `/v1/sessions/${seg(id)}/pop`,
      headers: ifMatchHeader(opts.ifMatch),
      safe: opts.ifMatch !== undefined,
      signal: opts.signal,
    });
  }

  // --- context and compaction --------------------------------------------

  /**
   * Returns the session's context (`GET /v1/sessions/{id}/context`): its
   * messages rendered in `query.format` (openai by default), fitted to
   * `query.budget` tokens, with up to `query.facts` facts about the
   * session's user and up to `query.recall` turns of the user's other
   * sessions.
   */
  getContext(id: string, query: ContextQuery = {}, opts: CallOptions = {}): Promise<ContextResponse> {
    return this.#json({ method: "GET", path: `/v1/sessions/${seg(id)}/context`, query, safe: true, signal: opts.signal });
  }

  /** Compacts the session's working set with a strategy (`POST /v1/sessions/{id}/compact`). */
  compact(id: string, req: CompactRequest, opts: CallOptions = {}): Promise<CompactResponse> {
    return this.#json({ method: "POST", path: `/v1/sessions/${seg(id)}/compact`, body: req, safe: false, signal: opts.signal });
  }

  // --- items (OpenAI Agents SDK) ------------------------------------------

  /**
   * Appends Responses-API input items (`POST /v1/sessions/{id}/items`), as
   * the OpenAI Agents SDK's sessions store them; {@link getItems} returns
   * them as they were sent. Retried after a 503 with an Idempotency-Key.
   */
  appendItems(id: string, items: Item[], opts: AppendOptions = {}): Promise<AppendResponse> {
    return this.#json({
      method: "POST",
      path: `/v1/sessions/${seg(id)}/items`,
      body: { items },
      headers: appendHeaders(opts),
      safe: opts.idempotencyKey !== undefined,
      signal: opts.signal,
    });
  }

  /**
   * Returns the session's items, oldest first: the newest `limit` when
   * given (`GET /v1/sessions/{id}/items`). The server answers a page at a
   * time (`page_size` items, 1000 by default, and at most 8 MiB): every
   * page is read, so all the items come back, as of the first page. If a
   * pop, a clear or a compaction changes them between two pages, the read
   * starts over (a few times).
   */
  async getItems(id: string, query: GetItemsQuery = {}, opts: CallOptions = {}): Promise<Item[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#readItems(id, query, opts);
      } catch (e) {
        if (!(e instanceof ConflictError && e.code === "conflict" && e.field === "page_token") || attempt >= READ_ATTEMPTS) throw e;
      }
    }
  }

  /** Reads every page of a read of the session's items. */
  async #readItems(id: string, query: GetItemsQuery, opts: CallOptions): Promise<Item[]> {
    const items: Item[] = [];
    let q: Query = { ...query };
    for (;;) {
      const r = await this.#json<{ items: Item[]; next_page_token?: string }>({
        method: "GET",
        path: `/v1/sessions/${seg(id)}/items`,
        query: q,
        safe: true,
        signal: opts.signal,
      });
      items.push(...r.items);
      if (!r.next_page_token) return items;
      q = { page_size: query.page_size, page_token: r.next_page_token };
    }
  }

  /** Removes the newest item and returns it (`POST /v1/sessions/{id}/items/pop`); {@link NothingToPopError} when there is none. */
  async popItem(id: string, opts: CallOptions = {}): Promise<Item> {
    const r = await this.#json<{ item: Item }>({ method: "POST", path: `/v1/sessions/${seg(id)}/items/pop`, safe: false, signal: opts.signal });
    return r.item;
  }

  /** Empties the session's working set (`DELETE /v1/sessions/{id}/items`); its log keeps what happened. */
  async clearItems(id: string, opts: CallOptions = {}): Promise<void> {
    await this.#send({ method: "DELETE", path: `/v1/sessions/${seg(id)}/items`, safe: true, signal: opts.signal });
  }

  // --- recall ---------------------------------------------------------------

  /**
   * Indexes documents for recall (`POST /v1/recall`), replacing those with
   * the same IDs; returns their IDs (new ones for documents without).
   */
  async upsertRecall(documents: RecallDocumentInput[], opts: CallOptions = {}): Promise<string[]> {
    // Safe to repeat when every document has its ID: an upsert replaces.
    const safe = documents.every((d) => d.id !== undefined && d.id !== "");
    const r = await this.#json<{ ids: string[] }>({ method: "POST", path: "/v1/recall", body: { documents }, safe, signal: opts.signal });
    return r.ids;
  }

  /**
   * Searches the tenant's recall index (`GET /v1/recall/search`): past
   * turns of every session and indexed documents. An answer holds at most
   * 8 MiB of hits: when it left some out, its `next_offset` is where they
   * start (search again with `offset` set to it).
   */
  async searchRecall(query: RecallSearchQuery, opts: CallOptions = {}): Promise<RecallSearchResponse> {
    const r = await this.#json<RecallSearchResponse>({ method: "GET", path: "/v1/recall/search", query, safe: true, signal: opts.signal });
    this.#damaged("document", r.damaged);
    return r;
  }

  /** Returns a recall document (`GET /v1/recall/{doc}`). */
  getRecall(doc: string, opts: CallOptions = {}): Promise<RecallDocument> {
    return this.#json({ method: "GET", path: `/v1/recall/${seg(doc)}`, safe: true, signal: opts.signal });
  }

  /** Deletes a recall document (`DELETE /v1/recall/{doc}`). */
  async deleteRecall(doc: string, opts: CallOptions = {}): Promise<void> {
    await this.#send({ method: "DELETE", path: `/v1/recall/${seg(doc)}`, safe: true, signal: opts.signal });
  }

  /**
   * Forgets a user (`DELETE /v1/users/{user}`): erases the user's sessions,
   * facts, memory blocks and recall documents in the key's tenant, and
   * returns what was erased. Safe to repeat: a retry after a failure
   * erases what is left.
   */
  forgetUser(user: string, opts: CallOptions & { reason?: string | undefined } = {}): Promise<ForgetUserResponse> {
    return this.#json({ method: "DELETE", path: `/v1/users/${seg(user)}`, query: { reason: opts.reason }, safe: true, signal: opts.signal });
  }

  // --- facts ----------------------------------------------------------------

  /** Remembers a fact about a user (`POST /v1/users/{user}/facts`): added, or an equal one reinforced. */
  remember(user: string, req: RememberRequest, opts: CallOptions = {}): Promise<RememberResponse> {
    return this.#json({ method: "POST", path: `/v1/users/${seg(user)}/facts`, body: req, safe: false, signal: opts.signal });
  }

  /**
   * Has the server's model learn facts about a user from a conversation
   * turn (`POST /v1/users/{user}/facts/extract`, mem0's `add(messages)`):
   * `req.messages` are OpenAI chat messages, typically the user's and the
   * assistant's answer. Given the facts already known, the model adds new
   * ones, reinforces those the turn confirms and supersedes those it
   * contradicts, at once; the answer lists each decision with what it did.
   * A server without a model throws `NotConfiguredError`; a model that
   * fails, `ExtractionFailedError`, with nothing written. It is not
   * retried: the same turn twice reinforces what it taught twice.
   */
  extractFacts(user: string, req: ExtractFactsRequest, opts: CallOptions = {}): Promise<ExtractFactsResponse> {
    return this.#json({ method: "POST", path: `/v1/users/${seg(user)}/facts/extract`, body: req, safe: false, signal: opts.signal });
  }

  /**
   * Searches (with `query.q` or `query.k`) the facts about a user, or,
   * without them, lists every fact, most confident first, reading every
   * page (`GET /v1/users/{user}/facts`).
   */
  async searchFacts(user: string, query: Omit<FactsQuery, "page_size" | "page_token"> = {}, opts: CallOptions = {}): Promise<Fact[]> {
    if (!query.q && query.k === undefined) {
      const all: Fact[] = [];
      for await (const f of this.allFacts(user, query, opts)) all.push(f);
      return all;
    }
    const r = await this.listFacts(user, query, opts);
    return r.facts;
  }

  /**
   * Returns a page of a user's facts, most confident first (at most
   * `query.page_size`, 100 by default; `next_page_token` reads on), or,
   * with `query.q` or `query.k`, a search's answer (`GET
   * /v1/users/{user}/facts`).
   */
  async listFacts(user: string, query: FactsQuery = {}, opts: CallOptions = {}): Promise<FactsResponse> {
    const r = await this.#json<FactsResponse>({ method: "GET", path: `/v1/users/${seg(user)}/facts`, query, safe: true, signal: opts.signal });
    this.#damaged("fact", r.damaged);
    return r;
  }

  /** Lists every fact of a user, most confident first, following the pages. */
  async *allFacts(user: string, query: Omit<FactsQuery, "q" | "k" | "page_token"> = {}, opts: CallOptions = {}): AsyncGenerator<Fact> {
    let token: string | undefined;
    do {
      const page = await this.listFacts(user, token === undefined ? query : { ...query, page_token: token }, opts);
      yield* page.facts;
      token = page.next_page_token;
    } while (token);
  }

  /** Returns a fact (`GET /v1/users/{user}/facts/{fact}`). */
  async getFact(user: string, fact: string, opts: CallOptions = {}): Promise<Fact> {
    const r = await this.#json<{ fact: Fact }>({ method: "GET", path: `/v1/users/${seg(user)}/facts/${seg(fact)}`, safe: true, signal: opts.signal });
    return r.fact;
  }

  /**
   * Changes a fact in place (`PATCH /v1/users/{user}/facts/{fact}`, a JSON
   * merge patch; see FactPatch) and returns it as now recorded; the change
   * goes into its history.
   */
  updateFact(user: string, fact: string, patch: FactPatch, opts: CallOptions = {}): Promise<Fact> {
    return this.#json({ method: "PATCH", path: `/v1/users/${seg(user)}/facts/${seg(fact)}`, body: patch, safe: false, signal: opts.signal });
  }

  /**
   * Returns every change of a fact, oldest first (`GET
   * /v1/users/{user}/facts/{fact}/history`): added, updated, superseded,
   * forgotten, with what it said before and after.
   */
  async factHistory(user: string, fact: string, opts: CallOptions = {}): Promise<FactChange[]> {
    const r = await this.#json<{ changes: FactChange[] }>({
      method: "GET",
      path: `/v1/users/${seg(user)}/facts/${seg(fact)}/history`,
      safe: true,
      signal: opts.signal,
    });
    return r.changes;
  }

  /** Forgets a fact (`DELETE /v1/users/{user}/facts/{fact}`), with an optional reason kept in the audit log. */
  async forget(user: string, fact: string, opts: CallOptions & { reason?: string | undefined } = {}): Promise<void> {
    await this.#send({
      method: "DELETE",
      path: `/v1/users/${seg(user)}/facts/${seg(fact)}`,
      query: { reason: opts.reason },
      safe: true,
      signal: opts.signal,
    });
  }

  // --- memory blocks ----------------------------------------------------------

  /** Returns the memory blocks of a user or a session, by label (`GET .../blocks`). */
  async listBlocks(owner: BlockOwner, opts: CallOptions = {}): Promise<Block[]> {
    const r = await this.#json<{ blocks?: Block[] }>({ method: "GET", path: blocksPath(owner), safe: true, signal: opts.signal });
    return r.blocks ?? [];
  }

  /** Returns a memory block (`GET .../blocks/{label}`); {@link NotFoundError} if there is none. */
  async getBlock(owner: BlockOwner, label: string, opts: CallOptions = {}): Promise<Block> {
    return this.#json({ method: "GET", path: blocksPath(owner, label), safe: true, signal: opts.signal });
  }

  /**
   * Creates a memory block or rewrites it whole (`PUT .../blocks/{label}`)
   * and returns it. `req.limit` is the most characters its value may hold
   * (5,000 when created without one; left out, a rewrite keeps the
   * block's); `req.read_only` refuses the agent's edits (append, replace
   * and the memory tools), not this method's. A value past the limit is
   * {@link OverLimitError}. Safe to retry: the same PUT again changes
   * nothing.
   */
  async putBlock(owner: BlockOwner, label: string, req: PutBlockRequest, opts: BlockWriteOptions = {}): Promise<Block> {
    return this.#json({
      method: "PUT",
      path: blocksPath(owner, label),
      body: req,
      headers: ifMatchHeader(opts.ifMatch),
      safe: true,
      signal: opts.signal,
    });
  }

  /** Deletes a memory block and its history (`DELETE .../blocks/{label}`). */
  async deleteBlock(owner: BlockOwner, label: string, opts: BlockWriteOptions = {}): Promise<void> {
    await this.#send({ method: "DELETE", path: blocksPath(owner, label), headers: ifMatchHeader(opts.ifMatch), safe: true, signal: opts.signal });
  }

  /**
   * Adds `req.text` at the end of a memory block, on a new line when it
   * is not empty (`POST .../blocks/{label}/append`), and returns the
   * block. Past its limit it is {@link OverLimitError}; a read-only block
   * is {@link ReadOnlyError}. Retried after a 503 only with `ifMatch`
   * (else it could land twice).
   */
  async appendBlock(owner: BlockOwner, label: string, req: AppendBlockRequest, opts: BlockWriteOptions = {}): Promise<Block> {
    return this.#json({
      method: "POST",
      path: `${blocksPath(owner, label)}/append`,
      body: req,
      headers: ifMatchHeader(opts.ifMatch),
      safe: opts.ifMatch !== undefined,
      signal: opts.signal,
    });
  }

  /**
   * Replaces `req.old`, which must occur exactly once in the memory block
   * (else {@link NoMatchError}), with `req.new` (`POST
   * .../blocks/{label}/replace`), and returns the block. Errors and
   * retries as {@link appendBlock}.
   */
  async replaceBlock(owner: BlockOwner, label: string, req: ReplaceBlockRequest, opts: BlockWriteOptions = {}): Promise<Block> {
    return this.#json({
      method: "POST",
      path: `${blocksPath(owner, label)}/replace`,
      body: req,
      headers: ifMatchHeader(opts.ifMatch),
      safe: opts.ifMatch !== undefined,
      signal: opts.signal,
    });
  }

  /**
   * Returns the newest changes of a memory block (at most 100), oldest
   * first (`GET .../blocks/{label}/history`): created, set, appended,
   * replaced, with who, when, and the value before and after.
   */
  async blockHistory(owner: BlockOwner, label: string, opts: CallOptions = {}): Promise<BlockChange[]> {
    const r = await this.#json<{ changes?: BlockChange[] }>({ method: "GET", path: `${blocksPath(owner, label)}/history`, safe: true, signal: opts.signal });
    return r.changes ?? [];
  }

  // --- transport -------------------------------------------------------------

  /** Passes the damaged records of an answer to the onDamaged option. */
  #damaged(kind: Damaged["kind"], records: DamagedRecord[] | undefined): void {
    if (this.#onDamaged === undefined) return;
    for (const d of records ?? []) this.#onDamaged({ ...d, kind });
  }

  async #json<T>(req: Request): Promise<T> {
    const r = await this.#send(req);
    return (await r.json()) as T;
  }

  /** Sends req, retrying as allowed, and returns a 2xx response or throws. */
  async #send(req: Request): Promise<Response> {
    const url = new URL(this.baseUrl + req.path);
    for (const [k, v] of Object.entries(req.query ?? {})) {
      if (v === undefined) continue;
      if (Array.isArray(v)) {
        for (const item of v) url.searchParams.append(k, item);
      } else {
        url.searchParams.set(k, String(v));
      }
    }
    const headers: Record<string, string> = { Accept: "application/json", ...this.#headers, ...req.headers };
    if (this.#apiKey !== undefined) headers["Authorization"] = `Bearer ${this.#apiKey}`;
    let body: string | undefined;
    if (req.body !== undefined) {
      body = JSON.stringify(req.body);
      headers["Content-Type"] = "application/json";
    }
    const what = `${req.method} ${req.path}`;
    const init: RequestInit = { method: req.method, headers, body: body ?? null, signal: req.signal ?? null };
    const tries = req.safe ? 1 + this.#retries : 1;
    for (let attempt = 1; ; attempt++) {
      const r = await this.#attempt(url, init, what);
      if (!(r instanceof Error)) return r;
      const retryable = r instanceof UnavailableError || r instanceof ConnectionError;
      if (!retryable || attempt >= tries) throw r;
      await sleep(this.#delay(attempt, r instanceof UnavailableError ? r.retryAfter : undefined), req.signal);
    }
  }

  /**
   * Sends a request once: the response when it is a 2xx, else the error
   * (the typed error of the API's answer, or a ConnectionError when there
   * was none). An aborted request throws.
   */
  async #attempt(url: URL, init: RequestInit, what: string): Promise<Response | Error> {
    let resp: Response;
    try {
      resp = await this.#fetch(url, init);
    } catch (e) {
      // fetch rejects with a TypeError when there is no answer at all.
      if (!(e instanceof TypeError) || init.signal?.aborted) throw e;
      return new ConnectionError(`agentmem: ${what}: ${e.message}`, { cause: e });
    }
    if (resp.ok) return resp;
    let payload: unknown;
    try {
      payload = await resp.json();
    } catch {
      payload = undefined; // not the API's error body: the error says HTTP <status>
    }
    return errorFromResponse(resp.status, payload, retryAfter(resp.headers.get("Retry-After")), what);
  }

  /** The wait before attempt + 1: Retry-After when the server sent one, else 100 ms doubling; capped. */
  #delay(attempt: number, afterSeconds: number | undefined): number {
    const ms = afterSeconds !== undefined ? afterSeconds * 1000 : 100 * 2 ** (attempt - 1);
    return Math.min(ms, this.#maxWait);
  }
}

/** The page size of {@link Client.readWorkingSet}'s reads. */
const READ_PAGE = 1000;
/** How many times {@link Client.getItems} starts over when the items change between two of its pages. */
const READ_ATTEMPTS = 3;

/** seg escapes a path segment. */
function seg(s: string): string {
  return encodeURIComponent(s);
}

/** blocksPath is the path of an owner's memory blocks, or of one of them. */
function blocksPath(owner: BlockOwner, label?: string): string {
  // Called from async methods, so that a bad owner rejects their promise.
  if ((owner.user === undefined) === (owner.session === undefined)) {
    throw new TypeError("agentmem: a block owner is { user } or { session }");
  }
  const base = owner.user !== undefined ? `/v1/users/${seg(owner.user)}/blocks` : `/v1/sessions/${seg(owner.session ?? "")}/blocks`;
  return label === undefined ? base : `${base}/${seg(label)}`;
}

function appendHeaders(opts: AppendOptions): Record<string, string> {
  const h = ifMatchHeader(opts.ifMatch);
  if (opts.idempotencyKey !== undefined) h["Idempotency-Key"] = opts.idempotencyKey;
  return h;
}

function ifMatchHeader(ifMatch: number | undefined): Record<string, string> {
  return ifMatch === undefined ? {} : { "If-Match": `"${ifMatch}"` };
}

/** retryAfter parses a Retry-After of delay-seconds (the form the server sends). */
function retryAfter(v: string | null): number | undefined {
  if (v === null || !/^\d+$/.test(v.trim())) return undefined;
  return Number(v.trim());
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
