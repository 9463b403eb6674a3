package facts

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/registry"
)

// ErrClosed is returned by a Store used after Close. It wraps
// agentmem.ErrUnavailable, as store.ErrClosed does.
var ErrClosed = fmt.Errorf("facts: store is closed (%w)", agentmem.ErrUnavailable)

// Store is what a backend implements: durable facts and their audit log,
// with one atomic read-modify-write per user. The policy (decay,
// similarity, thresholds) lives in Memory; a Store only keeps what it is
// given. Implementations must be safe for concurrent use, and Update must
// serialize the updates of one user across every process that shares the
// database, so that two extractions never both see "no such fact yet" and
// both add it. The conformance suite in package factstest checks all of
// this.
type Store interface {
	// Update runs fn with every fact of the user (superseded ones too,
	// ordered by CreatedAt then ID) while holding the user's write lock,
	// checks the Changes it returns with CheckChanges and applies them in
	// one transaction: all or nothing. An error from fn or from the check
	// is returned and nothing is written. fn may be called more than
	// once if the backend retries a transaction, so it must not have side
	// effects beyond its result.
	Update(ctx context.Context, tenant, userID string, fn func(current []Fact) (Changes, error)) error
	// Facts returns every fact of the user, superseded ones too, ordered
	// by CreatedAt then ID. A user with no facts has none: not an error.
	Facts(ctx context.Context, tenant, userID string) ([]Fact, error)
	// Get returns the fact with the ID in the tenant, or an error wrapping
	// agentmem.ErrNotFound.
	Get(ctx context.Context, tenant, id string) (Fact, error)
	// Audit returns the user's audit entries in the order they were
	// written, with Seq set.
	Audit(ctx context.Context, tenant, userID string) ([]AuditEntry, error)
	// Close releases the backend; later calls fail with ErrClosed.
	Close() error
}

// Lister is implemented by stores that can say whose facts they hold:
// what an export of a whole tenant, or of every tenant, walks (an export
// of one user reads Facts and Audit). Every backend of this module
// implements it.
type Lister interface {
	// Tenants returns the tenants with facts or audit entries, sorted
	// bytewise.
	Tenants(ctx context.Context) ([]string, error)
	// Users returns the users of the tenant with facts or audit entries
	// (a forgotten user keeps the audit entries of the forgetting),
	// sorted bytewise.
	Users(ctx context.Context, tenant string) ([]string, error)
}

// Extractions is implemented by stores that can tell cheaply (an indexed
// lookup) whether a turn was extracted. That is whether the user has the
// turn's ActionExtracted audit entry, which Memory.Extract writes for a
// Turn with Once, in the Update of the extraction's changes. Such a
// store's Update refuses an ActionExtracted entry of a turn that has one
// already with an error that ExtractedError makes, and writes nothing: a
// turn is extracted once even when two extractions of it race. Every
// backend of this module implements it; with a store that does not,
// Memory.Extract extracts a turn each time it is given it.
type Extractions interface {
	// Extracted reports whether the user has the ActionExtracted audit
	// entry of the turn (sessionID, stepSeq).
	Extracted(ctx context.Context, tenant, userID, sessionID string, stepSeq int64) (bool, error)
}

// ErrExtracted is wrapped by the error of an Update that would record
// the extraction of a turn that was extracted already (see Extractions).
// It wraps agentmem.ErrConflict.
var ErrExtracted = fmt.Errorf("facts: the turn was extracted already (%w)", agentmem.ErrConflict)

// ExtractedError returns the error of an Update that would record the
// extraction of the turn (sessionID, stepSeq) of the user again: it wraps
// ErrExtracted, and every backend returns it as this function makes it.
func ExtractedError(tenant, userID, sessionID string, stepSeq int64) error {
	return fmt.Errorf("facts: session %.80q, step %d, user %.80q of tenant %.80q: %w", sessionID, stepSeq, userID, tenant, ErrExtracted)
}

// Importer is implemented by stores that can recreate a user's facts and
// audit log as another store held them. An import needs it, since Update
// cannot tell a user with only an audit log (a forgotten one) from a new
// one. Every backend of this module implements it.
type Importer interface {
	// ImportUser writes the user's facts, every field as given, and
	// audit entries, in their order (each gets the next Seq of the
	// store, as Update's do), in one transaction holding the user's
	// write lock. It calls CheckImport first. A user who has facts or
	// audit entries already, or a fact ID that another user of the
	// tenant has, is an error wrapping agentmem.ErrConflict. On error
	// nothing is written.
	ImportUser(ctx context.Context, tenant, userID string, fs []Fact, audit []AuditEntry) error
}

// CheckImport checks what Importer.ImportUser is given: every fact valid
// (ValidateFact) and the user's, no ID twice, and every audit entry well
// formed and the user's. Backends call it before writing anything.
// Errors are *agentmem.InvalidError.
func CheckImport(tenant, userID string, fs []Fact, audit []AuditEntry) error {
	return CheckChanges(tenant, userID, nil, Changes{Put: fs, Audit: audit}, nil)
}

// ConflictError returns the error of an import into a user who has facts
// or audit entries already (id empty), or of a fact ID that another user
// of the tenant has. It wraps agentmem.ErrConflict. Every backend returns
// it as this function makes it.
func ConflictError(tenant, userID, id string) error {
	if id == "" {
		return fmt.Errorf("facts: user %.80q of tenant %.80q has facts or audit entries already: %w", userID, tenant, agentmem.ErrConflict)
	}
	return fmt.Errorf("facts: fact %.80q is the ID of another user's fact in tenant %.80q: %w", id, tenant, agentmem.ErrConflict)
}

// Changes are what one Update writes for one user.
type Changes struct {
	// Put are facts to insert, or to replace by ID.
	Put []Fact
	// Delete are IDs of the user's facts to delete (forgotten facts).
	// Deleting a fact also erases the Before and After of its audit
	// entries, since forgetting must erase what the fact said.
	Delete []string
	// Audit are entries to append to the user's audit log.
	Audit []AuditEntry
}

// IsZero reports whether c changes nothing.
func (c Changes) IsZero() bool { return len(c.Put) == 0 && len(c.Delete) == 0 && len(c.Audit) == 0 }

// Action is what an audit entry records.
type Action string

// The audited actions. Reinforcement is not audited (it is counted in
// Fact.Reinforcements and dated by Fact.ReinforcedAt): a line per
// sighting would grow without bound. The log records what changed what
// a fact says or when it holds, and which turns were extracted once.
const (
	ActionAdded      Action = "added"
	ActionSuperseded Action = "superseded"
	ActionForgotten  Action = "forgotten"
	// ActionUpdated is an edit (Memory.Edit): text, confidence,
	// metadata or validity.
	ActionUpdated Action = "updated"
	// ActionExtracted records that a turn was extracted (Memory.Extract
	// of a Turn with Once), in the Update that applied what the turn
	// taught, even when that was nothing. It names no fact; its
	// SessionID and StepSeq name the turn. Reinforcements are not
	// audited, so without it a turn extracted again would count its
	// reinforcements twice.
	ActionExtracted Action = "extracted"
)

// AuditEntry is one line of a user's audit log: who did what to which
// fact, when and why. A forgotten fact's text is not kept here, since
// forgetting must erase it; Digest lets someone who knows the text check
// that it was the one forgotten.
type AuditEntry struct {
	// Seq orders a user's entries; the Store assigns it.
	Seq    int64  `json:"seq"`
	Tenant string `json:"tenant,omitempty"`
	UserID string `json:"user_id"`
	// FactID is the fact the action was taken on.
	FactID string `json:"fact_id"`
	Action Action `json:"action"`
	// By is who acted: an agent name, "user", an operator.
	By string `json:"by,omitempty"`
	// Reason says why, as given by the caller (required to forget).
	Reason string `json:"reason,omitempty"`
	// Successor is, for ActionSuperseded, the fact that replaced FactID.
	Successor string `json:"successor,omitempty"`
	// Digest is, for ActionForgotten, "sha256:" and the hex SHA-256 of
	// the forgotten text.
	Digest string    `json:"digest,omitempty"`
	At     time.Time `json:"at"`
	// Before and After are what the fact said before and after the
	// action: After alone for ActionAdded, both for ActionSuperseded (its
	// ValidTo closed) and ActionUpdated, neither for ActionForgotten.
	// Forgetting a fact erases them from its earlier entries.
	Before *FactState `json:"before,omitempty"`
	After  *FactState `json:"after,omitempty"`
	// SessionID and StepSeq name the turn whose extraction made the
	// entry (Memory.Extract of a Turn with Once: its Source's session
	// and step): set on its ActionExtracted entry and on the entries of
	// the changes it applied; empty otherwise.
	SessionID string `json:"session_id,omitempty"`
	StepSeq   int64  `json:"step_seq,omitempty"`
}

// turnRef names a user's turn, as ActionExtracted entries do.
type turnRef struct {
	SessionID string
	StepSeq   int64
}

// validateAudit checks an audit entry for user (tenant, userID).
func validateAudit(tenant, userID string, e AuditEntry) error {
	if e.Tenant != tenant || e.UserID != userID {
		return invalid("audit.user_id", "entry for %q/%q in an update of %q/%q", e.Tenant, e.UserID, tenant, userID)
	}
	switch e.Action {
	case ActionAdded, ActionSuperseded, ActionForgotten, ActionUpdated:
	case ActionExtracted:
		// It names a turn, and nothing else.
		if e.SessionID == "" {
			return invalid("audit.session_id", "is required for an %s entry: it names the turn", e.Action)
		}
		if e.FactID != "" || e.Successor != "" || e.Digest != "" || e.Before != nil || e.After != nil {
			return invalid("audit.action", "an %s entry names no fact, successor, digest nor state", e.Action)
		}
	default:
		return invalid("audit.action", "unknown action %q", e.Action)
	}
	if e.At.IsZero() {
		return invalid("audit.at", "is required")
	}
	for _, f := range []struct{ name, v string }{{"audit.fact_id", e.FactID}, {"audit.by", e.By}, {"audit.successor", e.Successor}, {"audit.digest", e.Digest}, {"audit.session_id", e.SessionID}} {
		if err := checkField(f.name, f.v, MaxFieldBytes, f.name == "audit.fact_id" && e.Action != ActionExtracted); err != nil {
			return err
		}
	}
	if e.StepSeq < 0 {
		return invalid("audit.step_seq", "%d is negative", e.StepSeq)
	}
	if e.StepSeq != 0 && e.SessionID == "" {
		return invalid("audit.step_seq", "is set without a session_id")
	}
	if err := e.Before.validate("audit.before"); err != nil {
		return err
	}
	if err := e.After.validate("audit.after"); err != nil {
		return err
	}
	return checkField("audit.reason", e.Reason, MaxReasonBytes, false)
}

// CheckChanges checks that c is a valid update of the user whose current
// facts are current. Every put fact must be valid (ValidateFact) and the
// user's, and no ID may be put twice. A put must not take the ID of
// another user's fact in the tenant: taken reports whether a fact of the
// tenant has the ID, and nil means it cannot happen. Every deleted ID
// must be one of current, and every audit entry well formed. Backends call it inside
// Update, before writing anything. An error from taken is returned as is.
func CheckChanges(tenant, userID string, current []Fact, c Changes, taken func(id string) (bool, error)) error {
	if err := ValidateUser(tenant, userID); err != nil {
		return err
	}
	mine := make(map[string]bool, len(current))
	for _, f := range current {
		mine[f.ID] = true
	}
	seen := make(map[string]bool, len(c.Put))
	for i, f := range c.Put {
		if err := ValidateFact(f); err != nil {
			return fmt.Errorf("put[%d]: %w", i, err)
		}
		if f.Tenant != tenant || f.UserID != userID {
			return invalid(fmt.Sprintf("put[%d].user_id", i), "fact of %q/%q in an update of %q/%q", f.Tenant, f.UserID, tenant, userID)
		}
		if seen[f.ID] {
			return invalid(fmt.Sprintf("put[%d].id", i), "%q is put twice", f.ID)
		}
		seen[f.ID] = true
		if !mine[f.ID] && taken != nil {
			t, err := taken(f.ID)
			if err != nil {
				return err
			}
			if t {
				return invalid(fmt.Sprintf("put[%d].id", i), "%q is the ID of another user's fact", f.ID)
			}
		}
	}
	for i, id := range c.Delete {
		if !mine[id] {
			return invalid(fmt.Sprintf("delete[%d]", i), "%q is not a fact of this user", id)
		}
		if seen[id] {
			return invalid(fmt.Sprintf("delete[%d]", i), "%q is both put and deleted", id)
		}
	}
	turns := map[turnRef]bool{}
	for i, e := range c.Audit {
		if err := validateAudit(tenant, userID, e); err != nil {
			return fmt.Errorf("audit[%d]: %w", i, err)
		}
		if e.Action == ActionExtracted {
			t := turnRef{e.SessionID, e.StepSeq}
			if turns[t] {
				return invalid(fmt.Sprintf("audit[%d].session_id", i), "the turn of session %q ending at step %d is recorded as extracted twice", e.SessionID, e.StepSeq)
			}
			turns[t] = true
		}
	}
	return nil
}

// SortFacts orders facts as Store.Facts returns them: by CreatedAt, then
// ID.
func SortFacts(fs []Fact) {
	slices.SortFunc(fs, func(a, b Fact) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// An Opener opens a Store from a URL whose scheme it was registered for.
type Opener func(ctx context.Context, u *url.URL) (Store, error)

// backends holds the registered openers.
var backends = registry.New[Store]("facts")

// Register makes a backend available to Open under a URL scheme, as
// database/sql drivers do: a backend package registers itself in its init
// function and a program imports it for that side effect:
//
//	import _ "github.com/agentmem/agentmem/facts/sqlite"
//
// Schemes are case-insensitive. Register panics if the opener is nil, the
// scheme empty or already registered.
func Register(scheme string, opener Opener) { backends.Register(scheme, opener) }

// Schemes returns the registered URL schemes, sorted.
func Schemes() []string { return backends.Schemes() }

// Open opens the Store a URL names: "mem://" (in this package),
// "sqlite:///path/to/agentmem.db" (package facts/sqlite, which can share
// the session store's file) or "postgres://user@host/db?schema=s"
// (package facts/postgres). The backend's package must be imported for
// its scheme to be known.
func Open(ctx context.Context, rawURL string) (Store, error) { return backends.Open(ctx, rawURL) }
