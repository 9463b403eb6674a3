// Package facts is long-term memory of users: short facts about a user,
// such as "prefers metric units" or "is allergic to peanuts". A fact's
// confidence decays unless it is seen again. Facts are extracted from
// conversations and injected into the prompt, as the seeds' @remember
// does.
//
// # Facts
//
// A Fact has a user, a text, a base confidence in [0, 1], created and
// last-reinforced times, a Source (session, step, agent) and a validity.
// A contradicted fact is marked superseded with a link to its successor,
// never deleted, so past states stay readable (Memory.History). What a
// fact is worth now is its effective confidence (Decay): an exponential
// decay toward a floor, with a configurable half-life. Seeing a fact again
// (the same text by similarity) reinforces it: its confidence rises and
// its decay restarts. Forgetting is explicit (Memory.Forget needs a who
// and a why), erases the text, and is recorded in the user's audit log
// (Memory.Audit).
//
// # Memory and Store
//
// Memory holds the policy (clock, decay, thresholds, similarity, an
// optional Embedder) over a Store, the small interface backends
// implement. The backends are this package's MemStore ("mem://"),
// facts/sqlite ("sqlite:///path.db", which can share the session store's
// file) and facts/postgres ("postgres://..."). One conformance suite,
// facts/factstest, runs them all. Every change to a user's facts is one
// Store.Update, serialized per user by the database itself, so that
// concurrent extractions for one user, in any number of processes, never
// create duplicates.
//
//	mem := facts.New(facts.NewMemStore(), facts.Options{})
//	mem.Remember(ctx, facts.RememberRequest{UserID: "alice", Text: "Prefers answers in French"})
//	hits, _ := mem.Search(ctx, facts.SearchRequest{UserID: "alice", Query: "which language?"})
//
// Search ranks by relevance (BM25 over the user's facts, or embedding
// cosine) times effective confidence.
//
// # Facts in time
//
// A fact's record times (CreatedAt, ReinforcedAt, SupersededAt) say when
// the memory learnt or changed it. Its event times say when it was true
// in the world: ValidFrom, by default when it was recorded, and ValidTo,
// zero while it holds. Superseding a fact closes it at its successor's
// ValidFrom rather than hiding it. Lists and searches show the facts that
// hold now. ListRequest.AsOf and SearchRequest.AsOf show those that held
// at a time, as the memory knows them now, with their confidence now:
// decay says how much the memory trusts a fact, which an as-of question
// does not change. Memory.Edit
// changes a fact in place, and Memory.Changelog lists every change (add,
// edit, supersession, forget) with what the fact said before and after.
//
// # Extraction, tools and injection
//
// After a turn, an Extractor proposes Decisions (add, reinforce,
// supersede, ignore) against the user's relevant facts, and Memory.Apply
// applies them atomically. LLMExtractor asks any OpenAI-compatible chat
// endpoint for them as validated JSON, retrying malformed output once; a
// failure is an *ExtractionError for the caller to log, and costs nothing
// but the facts of that turn. Memory.Extract does both for a Turn. With
// Turn.Once it extracts the turn at most once, recording that it did (an
// ActionExtracted audit entry) with what the turn taught. A turn read
// again after a crash is thus neither shown to the model again nor
// applied twice. The rule-free alternative is to let the agent call the
// remember, recall and forget tools itself (Toolbox).
//
// Before each model call, Inject adds the top relevant facts above
// Options.InjectThreshold to the system prompt, within a share of the
// token budget counted exactly. Wrap does both around a model call.
package facts
