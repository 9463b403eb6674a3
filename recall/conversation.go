package recall

import (
	"strconv"
	"strings"
)

// The metadata keys of the documents of a session's steps (see
// recallview.StepDocs in package views/recallview).
const (
	MetaSession = "session"
	MetaUser    = "user"
	MetaAgent   = "agent"
	MetaStep    = "step"
	MetaKind    = "kind"
)

// MetaEntry is the metadata key recallview.StepDocs writes on the
// documents of an amendment's copies: the sequence number of the
// compaction entry that amended the step. The step's own document, made
// from its entry, has none, since its entry's number is its step's. A session's log amends a step
// after logging it, so the document of the highest entry is the step as
// the session has it now (see EntrySeq).
const MetaEntry = "entry"

// EntrySeq is the sequence number of the log entry d was made from: its
// MetaEntry when that is 1 to 18 decimal digits, or else its Seq.
func EntrySeq(d *Doc) int64 {
	if v, ok := d.Metadata[MetaEntry]; ok && len(v) >= 1 && len(v) <= 18 && strings.Trim(v, "0123456789") == "" {
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	return d.Seq
}
