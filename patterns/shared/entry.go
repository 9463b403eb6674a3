package shared

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
)

// ScopeKind is the kind of a scope.
type ScopeKind string

// The scope kinds.
const (
	ScopePrivate ScopeKind = "private"
	ScopeTeam    ScopeKind = "team"
	ScopeGlobal  ScopeKind = "global"
)

// Scope decides who reads an entry.
type Scope struct {
	Kind ScopeKind `json:"kind"`
	// Team names the team of a ScopeTeam scope.
	Team string `json:"team,omitempty"`
}

// Private is the scope of an entry only its author reads.
func Private() Scope { return Scope{Kind: ScopePrivate} }

// Team is the scope of an entry the members of team read.
func Team(team string) Scope { return Scope{Kind: ScopeTeam, Team: team} }

// Global is the scope of an entry every member of the pool reads.
func Global() Scope { return Scope{Kind: ScopeGlobal} }

// String returns "private", "global" or "team:<name>".
func (s Scope) String() string {
	if s.Kind == ScopeTeam {
		return "team:" + s.Team
	}
	return string(s.Kind)
}

// validate checks a scope's form.
func (s Scope) validate() error {
	switch s.Kind {
	case ScopePrivate, ScopeGlobal:
		if s.Team != "" {
			return &agentmem.InvalidError{Field: "scope.team", Reason: "is set on a " + string(s.Kind) + " scope"}
		}
		return nil
	case ScopeTeam:
		return checkName("scope.team", s.Team)
	}
	return &agentmem.InvalidError{Field: "scope.kind", Reason: fmt.Sprintf("%q is not private, team or global", s.Kind)}
}

// Kind says what an entry is.
type Kind string

// The entry kinds.
const (
	// Insight is something an agent learned and passes on.
	Insight Kind = "insight"
	// Fact is a fact an agent registered: the pool keeps one entry per
	// fact and scope.
	Fact Kind = "fact"
)

// Provenance says where an entry came from.
type Provenance struct {
	// Agent is the author; the pool sets it.
	Agent string `json:"agent"`
	// Time is when the author learned it; zero means when it was shared.
	Time time.Time `json:"time,omitzero"`
	// SessionID and Step name the session and step of the author's own
	// memory it came from, when known.
	SessionID string `json:"session_id,omitempty"`
	Step      int64  `json:"step,omitempty"`
	// Source is anything else worth citing: a tool, a URL, a document.
	Source string `json:"source,omitempty"`
}

// Entry is an entry of a pool.
type Entry struct {
	// Seq is the entry's place in the pool's log (1, 2, ...). Entries are
	// delivered and listed in this order, and a gap in what a subscriber
	// received is a dropped entry.
	Seq        int64      `json:"seq"`
	ID         string     `json:"id"`
	Kind       Kind       `json:"kind"`
	Text       string     `json:"text"`
	Author     string     `json:"author"`
	Scope      Scope      `json:"scope"`
	Provenance Provenance `json:"provenance"`
	// Time is when the entry was shared (the pool's clock).
	Time time.Time `json:"time"`
}

// line renders the entry as one line of a context block.
func (e *Entry) line() string {
	return fmt.Sprintf("[%s from %s, %s] %s", e.Kind, e.Author, e.Scope, e.Text)
}

// MaxNameBytes bounds an agent ID and a team name.
const MaxNameBytes = 256

func checkName(field, s string) error {
	switch {
	case s == "":
		return &agentmem.InvalidError{Field: field, Reason: "is empty"}
	case len(s) > MaxNameBytes:
		return &agentmem.InvalidError{Field: field, Reason: fmt.Sprintf("is %d bytes (at most %d)", len(s), MaxNameBytes)}
	case !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return &agentmem.InvalidError{Field: field, Reason: "is not printable UTF-8"}
	}
	return nil
}

// Step metadata keys of a pool entry.
const (
	metaKind       = "pool.kind"
	metaAuthor     = "pool.author"
	metaScope      = "pool.scope"
	metaTeam       = "pool.team"
	metaProvTime   = "pool.prov.time"
	metaProvSess   = "pool.prov.session"
	metaProvStep   = "pool.prov.step"
	metaProvSource = "pool.prov.source"
)

// entryStep is the log step that records an entry.
func entryStep(e *Entry) agentmem.Step {
	md := map[string]string{
		metaKind:   string(e.Kind),
		metaAuthor: e.Author,
		metaScope:  string(e.Scope.Kind),
	}
	if e.Scope.Team != "" {
		md[metaTeam] = e.Scope.Team
	}
	if !e.Provenance.Time.IsZero() {
		md[metaProvTime] = e.Provenance.Time.UTC().Format(time.RFC3339Nano)
	}
	if e.Provenance.SessionID != "" {
		md[metaProvSess] = e.Provenance.SessionID
	}
	if e.Provenance.Step != 0 {
		md[metaProvStep] = strconv.FormatInt(e.Provenance.Step, 10)
	}
	if e.Provenance.Source != "" {
		md[metaProvSource] = e.Provenance.Source
	}
	return &agentmem.ScratchpadStep{StepInfo: agentmem.StepInfo{ID: e.ID, Time: e.Time, Metadata: md}, Content: e.Text}
}

// entryFromStep decodes an entry from its log step. It refuses a step this
// package did not write with an *agentmem.InvalidError, since another
// process or version may have written the log.
func entryFromStep(seq int64, s agentmem.Step) (*Entry, error) {
	note, ok := s.(*agentmem.ScratchpadStep)
	if !ok {
		return nil, &agentmem.InvalidError{Field: "step", Reason: fmt.Sprintf("is a %s step, not a pool entry", s.Kind())}
	}
	md := note.Metadata
	e := &Entry{
		Seq: seq, ID: note.ID, Kind: Kind(md[metaKind]), Text: note.Content, Author: md[metaAuthor],
		Scope: Scope{Kind: ScopeKind(md[metaScope]), Team: md[metaTeam]}, Time: note.Time,
	}
	if e.Kind != Insight && e.Kind != Fact {
		return nil, &agentmem.InvalidError{Field: metaKind, Reason: fmt.Sprintf("%q is not insight or fact", e.Kind)}
	}
	if err := checkName(metaAuthor, e.Author); err != nil {
		return nil, err
	}
	if err := e.Scope.validate(); err != nil {
		return nil, err
	}
	e.Provenance = Provenance{Agent: e.Author, SessionID: md[metaProvSess], Source: md[metaProvSource]}
	if v := md[metaProvTime]; v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return nil, &agentmem.InvalidError{Field: metaProvTime, Reason: fmt.Sprintf("%q is not an RFC 3339 time", v)}
		}
		e.Provenance.Time = t
	}
	if v := md[metaProvStep]; v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, &agentmem.InvalidError{Field: metaProvStep, Reason: fmt.Sprintf("%q is not a step number", v)}
		}
		e.Provenance.Step = n
	}
	return e, nil
}

// factID is the ID of a fact. The same text (up to case and spacing) in
// the same scope is the same fact; for a private fact, so is the author.
// So the store keeps one entry for it, whoever registers it, from
// whichever process. A registration of a stored fact by another author or
// in other words is refused with store.ErrIDReused, and the stored entry
// stands.
func factID(author string, scope Scope, text string) string {
	h := sha256.New()
	who := ""
	if scope.Kind == ScopePrivate {
		who = author
	}
	norm := strings.Join(strings.Fields(strings.ToLower(text)), " ")
	for _, part := range []string{string(scope.Kind), scope.Team, who, norm} {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	return "fact-" + hex.EncodeToString(h.Sum(nil)[:16])
}
