// Package agentmem is the memory layer for LLM agents. It keeps an agent's
// run as a log of typed steps, rendered to valid chat messages that fit an
// exact token budget.
//
// A Memory holds the working set of one run: system prompt, task, actions
// (the model's output, its tool calls and their results), plans, notes,
// summaries and the final answer, each a Step. Memory.Context renders it
// for a model. The system prompt and the first task are pinned, then come
// the newest steps that fit the budget. A tool call and its results are
// kept or dropped together. Token counts are exact (package tokenizer) and
// each step is counted once. So a call at step 10,000 costs what one at
// step 100 does.
//
// Strategies select and compress steps: KeepLastN, PruneOldObservations,
// TokenBudget, Summarize, the diversity strategy MMR and any StrategyFunc,
// composed with Chain. Pruning never destroys steps silently. Every change
// to the working set is reported as a Compaction listing what it removed,
// so a store can keep the originals.
//
// Formats render steps for a chat API: OpenAI here, Anthropic messages and
// observation-as-user in package render.
//
// The principles: the log is the truth and the context a view; steps are
// values; count once; valid by construction; errors wrap ErrInvalid,
// ErrNotFound, ErrConflict or ErrBudgetTooSmall.
package agentmem
