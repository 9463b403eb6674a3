// Package views is where what agentmem derives from the sessions' logs
// lives: the views of the log. A view follows the store's change feed
// (store.Feed) in the background with a Follower. The Follower reads the
// changes after a durable cursor in batches, and hands each batch to an
// apply function. It saves the cursor once the batch is applied. A process
// that crashes after committing a write, or a client that goes away
// after its write was acknowledged, therefore cannot leave a view
// behind: whichever process follows the feed next resumes at the saved
// cursor. Reading is at-least-once, so applying a batch must be
// idempotent.
//
// Several processes sharing a store run the same views, under the same
// consumer names: each follower applies what it reads, which idempotent
// views tolerate. A view whose effects must happen once is Exclusive
// (Options.Exclusive): fact extraction, for one, asks a model about every
// turn and reinforces facts. Of an Exclusive view's followers in every
// process, only the one holding the consumer's lease in the store
// (store.Leaser) applies changes and saves the cursor. The others wait.
// One takes over from the saved cursor when the holder stops, or crashes
// and its lease expires. Only the batch in flight when a holder crashed
// may be applied twice.
//
// The views are its subpackages:
//
//   - recallview: the recall index's documents of every turn (package
//     recall is the index alone, which knows nothing of sessions);
//   - autocompact: the sessions' automatic compaction;
//   - factextract: the facts learnt from sessions' turns;
//   - sessionblocks: the deletion of deleted sessions' memory blocks.
//
// They live here, above both the store and what they derive, so that
// neither knows the other: the store knows nothing of its views, and the
// derived components nothing of the log. How a view follows the log,
// batches its writes and keeps its cursor is written once, here.
package views
