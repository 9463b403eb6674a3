/**
 * Typed errors: one class per error code of the API (api/errors.go),
 * all subclasses of {@link AgentmemError}, so a caller can `instanceof`
 * the case it handles and read the code, message and field of the rest.
 *
 * @module
 */
import type { ErrorBody, ErrorCode } from "./types.js";

/** What the API said about a failed request. */
export interface ErrorDetails {
  /** The HTTP status. */
  status: number;
  /** The error code (`error.code`); one of {@link ErrorCode}, or another string a newer server sent. */
  code: string;
  /** What went wrong, for people. */
  message: string;
  /** The offending field (a JSON path), query parameter or header, when the API names one. */
  field?: string | undefined;
  /** With `budget_too_small`: the tokens the pinned steps need. */
  required?: number | undefined;
  /** With `budget_too_small`: the budget asked for. */
  budget?: number | undefined;
  /** With `conflict` on an append: the session's current last sequence number. */
  lastSeq?: number | undefined;
  /** The `Retry-After` of a 503, in seconds. */
  retryAfter?: number | undefined;
  /** The method and path of the request, for the message. */
  request?: string | undefined;
}

/** An error answer of the agentmem API (a 4xx or 5xx with a JSON error body). */
export class AgentmemError extends Error {
  /** The HTTP status. */
  readonly status: number;
  /** The API's error code: switch on it (or on the subclass), not on the message. */
  readonly code: string;
  /** The offending field (JSON path), query parameter or header, if named. */
  readonly field: string | undefined;
  /** With `budget_too_small`: the tokens the pinned steps need. */
  readonly required: number | undefined;
  /** With `budget_too_small`: the budget asked for. */
  readonly budget: number | undefined;
  /** With `conflict` on an append: the session's current last sequence number. */
  readonly lastSeq: number | undefined;
  /** The `Retry-After` of a 503, in seconds. */
  readonly retryAfter: number | undefined;

  /** Makes the error of an API answer; {@link errorFromResponse} picks the subclass. */
  constructor(d: ErrorDetails) {
    const where = d.field ? ` (${d.field})` : "";
    const req = d.request ? `${d.request}: ` : "";
    super(`agentmem: ${req}${d.status} ${d.code}${where}: ${d.message}`);
    this.name = new.target.name;
    this.status = d.status;
    this.code = d.code;
    this.field = d.field;
    this.required = d.required;
    this.budget = d.budget;
    this.lastSeq = d.lastSeq;
    this.retryAfter = d.retryAfter;
  }
}

/** 400 `invalid`: the request is malformed or breaks a rule; `field` names what. */
export class InvalidError extends AgentmemError {}
/** 401 `unauthorized`: no API key where one is required, or a bad or revoked one. */
export class UnauthorizedError extends AgentmemError {}
/** 403 `forbidden`: a cross-origin request from an origin not allowed. */
export class ForbiddenError extends AgentmemError {}
/** 404 `not_found`: no such session (or another tenant's), document, fact or route. */
export class NotFoundError extends AgentmemError {}
/** 405 `method_not_allowed`. */
export class MethodNotAllowedError extends AgentmemError {}
/** 409 `conflict`: If-Match did not hold (`lastSeq` is the session's; a memory block's version is read again), or an ID is taken. */
export class ConflictError extends AgentmemError {}
/** 409 `idempotency_key_reused`: an append reused an Idempotency-Key (or step IDs) for a different body; nothing was stored. */
export class IdempotencyKeyReusedError extends ConflictError {}
/** 409 `tool_result_conflict`: a tool result for a call that already has a different one; nothing was stored. */
export class ToolResultConflictError extends ConflictError {}
/** 409 `nothing_to_pop`: a pop of a session whose working set is empty. */
export class NothingToPopError extends ConflictError {}
/** 409 `read_only`: an append or a replace of a read-only memory block; nothing changed (a put may still set it). */
export class ReadOnlyError extends ConflictError {}
/** 413 `body_too_large`. */
export class BodyTooLargeError extends AgentmemError {}
/** 415 `unsupported_media_type`. */
export class UnsupportedMediaTypeError extends AgentmemError {}
/** 422 `budget_too_small`: the pinned steps need more tokens (`required`) than the budget (`budget`). */
export class BudgetTooSmallError extends AgentmemError {}
/** 422 `over_limit`: the edit would take a memory block past its limit of characters; `field` names the input. Nothing changed. */
export class OverLimitError extends AgentmemError {}
/** 422 `no_match`: a memory block replace's `old` text occurs zero times or more than once in the block. Nothing changed. */
export class NoMatchError extends AgentmemError {}
/** 422 `tool_results_missing`: tool calls sent without their results. Current servers store such calls as pending and never return this code. */
export class ToolResultsMissingError extends AgentmemError {}
/** 500 `internal`: a failure nobody expected; the server logs it. */
export class InternalError extends AgentmemError {}
/** 501 `not_configured`: the server was started without what the route needs (recall, facts). */
export class NotConfiguredError extends AgentmemError {}
/** 502 `summarizer_failed`: the LLM summarizer failed; retry. */
export class SummarizerFailedError extends AgentmemError {}
/** 502 `extraction_failed`: the server's fact extractor (an LLM) failed or answered nothing usable; nothing was written; retry. */
export class ExtractionFailedError extends AgentmemError {}
/** 503 `unavailable`: the store is busy, unreachable, timed out or shutting down, or other writers of the session got ahead of a write without If-Match on every try the server made; retried by the client, then thrown. */
export class UnavailableError extends AgentmemError {}
/** 503 `index_behind`: a fresh recall search timed out waiting for the index; retry. */
export class IndexBehindError extends UnavailableError {}
/** 499 `canceled`: the client went away (only in the server's logs and metrics). */
export class CanceledError extends AgentmemError {}
/** 400 `upstream_not_configured`: the proxy routes need an upstream provider the server was not given. */
export class UpstreamNotConfiguredError extends InvalidError {}
/** 409 `history_diverged`: a proxied request's history departs from the session's too far back to rewind. */
export class HistoryDivergedError extends ConflictError {}
/** 502 `upstream_unreachable`: the proxy could not reach the upstream provider; nothing of a reply was recorded. */
export class UpstreamUnreachableError extends AgentmemError {}
/** 502 `upstream_redirect`: the upstream provider answered with a redirect, which the proxy does not follow; nothing of a reply was recorded. */
export class UpstreamRedirectError extends AgentmemError {}

/**
 * The class of each error code. Typed against the OpenAPI document's
 * list of codes: a code added there fails the build until it is here.
 */
export const errorClasses: { readonly [C in ErrorCode]: new (d: ErrorDetails) => AgentmemError } = {
  invalid: InvalidError,
  unauthorized: UnauthorizedError,
  forbidden: ForbiddenError,
  not_found: NotFoundError,
  method_not_allowed: MethodNotAllowedError,
  conflict: ConflictError,
  idempotency_key_reused: IdempotencyKeyReusedError,
  body_too_large: BodyTooLargeError,
  unsupported_media_type: UnsupportedMediaTypeError,
  budget_too_small: BudgetTooSmallError,
  over_limit: OverLimitError,
  no_match: NoMatchError,
  read_only: ReadOnlyError,
  tool_results_missing: ToolResultsMissingError,
  tool_result_conflict: ToolResultConflictError,
  nothing_to_pop: NothingToPopError,
  internal: InternalError,
  not_configured: NotConfiguredError,
  summarizer_failed: SummarizerFailedError,
  extraction_failed: ExtractionFailedError,
  unavailable: UnavailableError,
  index_behind: IndexBehindError,
  canceled: CanceledError,
  upstream_not_configured: UpstreamNotConfiguredError,
  history_diverged: HistoryDivergedError,
  upstream_unreachable: UpstreamUnreachableError,
  upstream_redirect: UpstreamRedirectError,
};

/**
 * A request that got no answer: the connection failed, or the response
 * was not the API's (not JSON). Retried like a 503 when the request is
 * safe to repeat.
 */
export class ConnectionError extends Error {
  /** Makes the error of a failed request; cause is the underlying error. */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ConnectionError";
  }
}

/**
 * errorFromResponse makes the typed error of an error answer: the class
 * of its code, or {@link AgentmemError} for a code this client does not
 * know (or a body that is not the API's error body).
 */
export function errorFromResponse(status: number, body: unknown, retryAfter: number | undefined, request?: string): AgentmemError {
  const e = (body as Partial<ErrorBody> | undefined)?.error;
  const d: ErrorDetails = {
    status,
    code: typeof e?.code === "string" ? e.code : `http_${status}`,
    message: typeof e?.message === "string" ? e.message : `HTTP ${status}`,
    field: e?.field,
    required: e?.required,
    budget: e?.budget,
    lastSeq: e?.last_seq,
    retryAfter,
    request,
  };
  const cls = Object.hasOwn(errorClasses, d.code) ? errorClasses[d.code as ErrorCode] : AgentmemError;
  return new cls(d);
}
