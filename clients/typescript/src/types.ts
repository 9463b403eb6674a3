/**
 * The wire types of the agentmem HTTP API, taken from the types that
 * openapi-typescript generates from the server's OpenAPI document
 * (server/openapi.json, served at /v1/openapi.json) when the package is
 * built: a change to the document that breaks the client breaks its build.
 *
 * @module
 */
import type { components, operations } from "./generated/openapi.js";

/** The component schemas of the OpenAPI document, by name. */
export type Schemas = components["schemas"];

/** A session: its ID, owner, retention and last sequence number. */
export type Session = Schemas["Session"];
/** The body of `POST /v1/sessions`. */
export type CreateSessionRequest = Schemas["CreateSessionRequest"];
/** The body of `POST /v1/sessions/{id}/fork`. */
export type ForkRequest = Schemas["ForkRequest"];
/** What a session's contexts always show, whatever the budget (members left out are false). */
export type Pinning = Schemas["Pinning"];
/** A session's automatic compaction: a trigger (`max_tokens`) and a target below it. */
export type AutoCompact = Schemas["AutoCompact"];
/** A page of `GET /v1/sessions`. */
export type ListSessionsResponse = Schemas["ListSessionsResponse"];
/** The query of `GET /v1/sessions`. */
export type ListSessionsQuery = NonNullable<operations["listSessions"]["parameters"]["query"]>;
/** A typed step of a session's log (one of the step kinds, by `type`). */
export type Step = Schemas["Step"];
/** An OpenAI chat-completions message, plus agentmem's optional `id` and `metadata`. */
export type OpenAIMessage = Schemas["OpenAIMessage"];
/** What an append stored: the new steps' sequence numbers and the session's last. */
export type AppendResponse = Schemas["AppendResponse"];
/** A read of a session's log: its step and compaction entries. */
export type ReadStepsResponse = Schemas["ReadStepsResponse"];
/** The query of `GET /v1/sessions/{id}/steps`. */
export type ReadStepsQuery = NonNullable<operations["readSteps"]["parameters"]["query"]>;
/** A compaction entry of a session's log. */
export type CompactionEntry = Schemas["CompactionEntry"];
/** The answer of `POST /v1/sessions/{id}/pop`: the message removed. */
export type PopResponse = Schemas["PopResponse"];
/** The query of `GET /v1/sessions/{id}/context`: budget, format, facts. */
export type ContextQuery = NonNullable<operations["getContext"]["parameters"]["query"]>;
/** A context: the messages that fit the budget, in the format asked for. */
export type ContextResponse = Schemas["ContextResponse"];
/** The body of `POST /v1/sessions/{id}/compact`. */
export type CompactRequest = Schemas["CompactRequest"];
/** What a compaction changed. */
export type CompactResponse = Schemas["CompactResponse"];
/** A document to index for recall. */
export type RecallDocumentInput = Schemas["RecallDocumentInput"];
/** A recall document as stored. */
export type RecallDocument = Schemas["RecallDocument"];
/** The query of `GET /v1/recall/search`. */
export type RecallSearchQuery = operations["searchRecall"]["parameters"]["query"];
/** The hits of a recall search. */
export type RecallSearchResponse = Schemas["RecallSearchResponse"];
/** One hit of a recall search. */
export type RecallHit = Schemas["RecallHit"];
/** The body of `POST /v1/users/{user}/facts`. */
export type RememberRequest = Schemas["RememberRequest"];
/** What remembering did: a fact added or reinforced. */
export type RememberResponse = Schemas["RememberResponse"];
/** The body of `POST /v1/users/{user}/facts/extract`: a turn to learn from. */
export type ExtractFactsRequest = Schemas["ExtractFactsRequest"];
/** What an extraction decided and what each decision did. */
export type ExtractFactsResponse = Schemas["ExtractFactsResponse"];
/** One decision of an extraction and what it did. */
export type ExtractedDecision = Schemas["ExtractedDecision"];
/** A fact about a user. */
export type Fact = Schemas["Fact"];
/** The query of `GET /v1/users/{user}/facts`. */
export type FactsQuery = NonNullable<operations["listFacts"]["parameters"]["query"]>;
/**
 * The body of `PATCH /v1/users/{user}/facts/{fact}`, a JSON merge patch: a
 * member left out is left as it is; `null` removes a metadata key (or, for
 * `metadata`, every key) and, for `valid_to`, reopens the fact.
 */
export type FactPatch = Schemas["FactPatch"];
/** What a fact said at one point of its history. */
export type FactState = Schemas["FactState"];
/** One change of a fact: who did what, when, why, before and after. */
export type FactChange = Schemas["FactChange"];
/** What `DELETE /v1/users/{user}` erased (`Client.forgetUser`). */
export type ForgetUserResponse = Schemas["ForgetUserResponse"];
/** A record a list or a search left out because its stored form does not decode. */
export type DamagedRecord = Schemas["DamagedRecord"];
/** A damaged record with the kind of record it is. */
export type Damaged = DamagedRecord & { kind: "session" | "fact" | "document" };
/** A page of the list of a user's facts, or a facts search's answer (`GET /v1/users/{user}/facts`). */
export type FactsResponse = Schemas["FactsResponse"];
/** A memory block: labelled text of a user or a session, shown after the system prompt of every context of its sessions. */
export type Block = Schemas["Block"];
/** One change of a memory block: its version after, the action, who, when, the value before and after. */
export type BlockChange = Schemas["BlockChange"];
/** A memory block a context shows: its label, owner and version. */
export type ContextBlock = Schemas["ContextBlock"];
/** The body of `PUT .../blocks/{label}`: the block's value, and its limit, description and read-only flag. */
export type PutBlockRequest = Schemas["PutBlockRequest"];
/** The body of `POST .../blocks/{label}/append`. */
export type AppendBlockRequest = Schemas["AppendBlockRequest"];
/** The body of `POST .../blocks/{label}/replace`. */
export type ReplaceBlockRequest = Schemas["ReplaceBlockRequest"];
/** The code of an API error (`error.code` of an error response). */
export type ErrorCode = Schemas["Error"]["code"];
/** The body of an error response. */
export type ErrorBody = Schemas["ErrorBody"];

/**
 * A Responses-API input item as the OpenAI Agents SDK stores it (a
 * message, a function call or its output, reasoning, ...): any JSON
 * object with a `type` or a `role`. agentmem stores items as they are
 * sent and returns them unchanged.
 */
export type Item = { [key: string]: unknown };
