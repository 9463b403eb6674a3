// Package storekit is the toolkit of backend authors: what the drivers of
// package store share and programs never call. A program uses store.Store
// (see store.New and store.Open); a backend implements store.Driver, and
// calls these helpers so that every backend applies the same rules.
//
// # Appends
//
// PlanAppend is the one place the rules of an append live. A backend
// validates the request (store.ValidateAppendEncoded), locks the session,
// and hands PlanAppend a LogView of its log: PlanAppend decides whether
// the request is a retry (CheckKey, CheckRetry, CheckRetriedCompaction),
// checks ExpectedLastSeq and the compaction (CheckCompaction,
// CheckPinned), and returns the entries to write. The backend writes them,
// with the key's record (NewKeyRecord) and the change of its feed, in one
// transaction.
//
// # The rest of a backend
//
// NewSession builds the session of a Create. Now and LeaseExpiry give the
// times a backend records. SelectEntries, WorkingSeqs and InWorkingSet read
// a log. Normalize and EncodedKind handle stored steps. FeedSessionKeys and
// AttachSessions fill a batch of the change feed.
//
// A backend proves itself with the conformance suite of package
// storetest, run through store.New.
package storekit
