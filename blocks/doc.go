// Package blocks is memory the agent edits: labelled pieces of text
// ("persona", "human", "task") shown in the context of every model call,
// right after the system prompt. The agent rewrites, appends to and
// corrects them as it learns. They are the core memory of Letta and the
// working memory of Mastra.
//
// # Blocks
//
// A Block belongs to a user (shown in every session of the user) or to one
// session, in a tenant, and is named by its label within its owner. It
// has a value, a size limit in characters (Unicode code points: a limit
// that does not depend on the tokenizer), an optional description and a
// read-only flag. An edit that would take a block past its limit is
// refused (*LimitError), never cut. A read-only block refuses the agent's
// edits (Edit.Agent: its tools), while the application (Memory.Set, the
// HTTP API's PUT) may still write it.
//
// Every change makes a new version of the block and an entry of its
// history (Change: who, when, the action, the value before and after),
// which keeps the newest MaxHistory changes. A write may state the
// version it read (Edit.IfVersion), and then fails with a *VersionError
// if another got in first.
//
// # Memory and Store
//
// Memory holds the edits (Set, Append, Replace, Delete) over a Store, the
// small interface backends implement. The backends are this package's
// MemStore ("mem://"), blocks/sqlite ("sqlite:///path.db", which can share
// the session store's file) and blocks/postgres ("postgres://...", Citus
// too). One conformance suite, blocks/blockstest, runs them all. A Store
// only knows a compare-and-set write: Store.Put writes a block if it is
// still at the version read. So each edit is written once, here: read,
// compute, check, write, and try again when another writer got in
// between.
//
// # Tools
//
// Toolbox offers an agent the function-calling tools memory_append,
// memory_replace and memory_rethink over the blocks of a session and of
// its user, and Render shows blocks as the context does.
package blocks
