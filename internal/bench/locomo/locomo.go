// Package locomo evaluates the retrieval of package recall on
// LoCoMo-format conversations (DecodeLoCoMo, Evaluate). Every turn of a
// conversation is indexed with its speaker, its session's date and its
// image caption. Evidence recall@k is measured for every question, as the
// LoCoMo paper defines it. The benchmark command's "eval recall"
// runs it.
package locomo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem/recall"
)

// Conversation is a LoCoMo conversation: its turns and the questions
// about them.
type Conversation struct {
	// ID is the sample_id, e.g. "conv-26".
	ID string
	// Turns are the turns of every session, in session then turn order.
	Turns []Turn
	// Questions are the questions about the conversation.
	Questions []Question
}

// Turn is a turn of a LoCoMo conversation.
type Turn struct {
	// DiaID names the turn, normalized to "D<session>:<turn>".
	DiaID string
	// Session is the number of the turn's session.
	Session int
	// Speaker is who spoke.
	Speaker string
	// Date is the session's date string, e.g. "1:56 pm on 8 May, 2023".
	Date string
	// Text is what was said.
	Text string
	// Caption is the caption of a shared image, if any.
	Caption string
}

// Question is a LoCoMo question: only the question, its evidence and
// category, never its answer.
type Question struct {
	// Text is the question.
	Text string
	// Evidence are the dia_ids of the turns that hold the answer, as given
	// (see ParseEvidence).
	Evidence []string
	// Category is 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop or
	// 5 adversarial.
	Category int
}

// The types the dataset is decoded into name only what retrieval may see.
// They deliberately have no field for a conversation's observation,
// session_summary or event_summary (facts written by the dataset's authors
// with knowledge of the evidence), nor for a question's answer or
// adversarial_answer, so encoding/json skips those values without
// interpreting them.
type (
	locomoSample struct {
		SampleID     string                     `json:"sample_id"`
		Conversation map[string]json.RawMessage `json:"conversation"`
		QA           []locomoQA                 `json:"qa"`
	}
	locomoQA struct {
		Question string   `json:"question"`
		Evidence []string `json:"evidence"`
		Category int      `json:"category"`
	}
	locomoTurn struct {
		Speaker     string `json:"speaker"`
		DiaID       string `json:"dia_id"`
		Text        string `json:"text"`
		BlipCaption string `json:"blip_caption"`
	}
)

var (
	sessionKey = regexp.MustCompile(`^session_(\d+)$`)
	evidenceID = regexp.MustCompile(`D:?(\d+):(\d+)`)
)

// DecodeLoCoMo reads a LoCoMo-format JSON file: a list of conversations.
// Of a conversation it reads only sample_id, the session_N turn lists and
// their session_N_date_time, and the questions' question, evidence and
// category. Turns are ordered by session, then as listed.
func DecodeLoCoMo(r io.Reader) ([]Conversation, error) {
	var samples []locomoSample
	if err := json.NewDecoder(r).Decode(&samples); err != nil {
		return nil, fmt.Errorf("locomo: %w", err)
	}
	convs := make([]Conversation, 0, len(samples))
	for i, s := range samples {
		c := Conversation{ID: s.SampleID}
		if c.ID == "" {
			c.ID = "conversation-" + strconv.Itoa(i+1)
		}
		type session struct {
			n   int
			key string
		}
		var sessions []session
		for key := range s.Conversation {
			if m := sessionKey.FindStringSubmatch(key); m != nil {
				n, err := strconv.Atoi(m[1])
				if err != nil {
					return nil, fmt.Errorf("locomo: %s: %s: %w", c.ID, key, err)
				}
				sessions = append(sessions, session{n, key})
			}
		}
		sort.Slice(sessions, func(i, j int) bool {
			if sessions[i].n != sessions[j].n {
				return sessions[i].n < sessions[j].n
			}
			return sessions[i].key < sessions[j].key
		})
		for _, ss := range sessions {
			n, key := ss.n, ss.key
			var turns []locomoTurn
			if err := json.Unmarshal(s.Conversation[key], &turns); err != nil {
				return nil, fmt.Errorf("locomo: %s: %s: %w", c.ID, key, err)
			}
			var date string
			if raw, ok := s.Conversation[key+"_date_time"]; ok {
				if err := json.Unmarshal(raw, &date); err != nil {
					return nil, fmt.Errorf("locomo: %s: %s_date_time: %w", c.ID, key, err)
				}
			}
			for _, t := range turns {
				id := t.DiaID
				if ids := ParseEvidence([]string{id}); len(ids) == 1 {
					id = ids[0]
				}
				c.Turns = append(c.Turns, Turn{DiaID: id, Session: n, Speaker: t.Speaker, Date: date, Text: t.Text, Caption: t.BlipCaption})
			}
		}
		for _, q := range s.QA {
			c.Questions = append(c.Questions, Question{Text: q.Question, Evidence: q.Evidence, Category: q.Category})
		}
		convs = append(convs, c)
	}
	return convs, nil
}

// ParseEvidence extracts the dia_ids of evidence strings, normalized to
// "D<session>:<turn>": every match of D:?(\d+):(\d+), so that malformed
// strings such as "D8:6; D9:17" and "D:11:26" still count. Duplicates are
// kept once, in order of appearance.
func ParseEvidence(evidence []string) []string {
	var ids []string
	for _, e := range evidence {
		for _, m := range evidenceID.FindAllStringSubmatch(e, -1) {
			s, err1 := strconv.Atoi(m[1])
			t, err2 := strconv.Atoi(m[2])
			if err1 != nil || err2 != nil {
				continue
			}
			id := "D" + strconv.Itoa(s) + ":" + strconv.Itoa(t)
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// TurnText is what is indexed of a turn: the speaker, the text, the image
// caption if any and the session's date.
func TurnText(t Turn) string {
	s := t.Speaker + ": " + t.Text
	if t.Caption != "" {
		s += " [image: " + t.Caption + "]"
	}
	if t.Date != "" {
		s += " (" + t.Date + ")"
	}
	return s
}

// Report is the result of Evaluate. Recall figures are fractions in
// [0, 1], keyed by k in decimal.
type Report struct {
	// Dataset names the evaluated file; Evaluate leaves it empty.
	Dataset string `json:"dataset"`
	// Questions is the number of questions scored: those with at least
	// one evidence id.
	Questions int `json:"questions"`
	// K are the cut-offs, ascending.
	K []int `json:"k"`
	// Unit is what was scored: UnitTurn or UnitSession.
	Unit string `json:"unit"`
	// Recall is the mean evidence recall@k over all questions.
	Recall map[string]float64 `json:"recall"`
	// ByCategory is the same per question category, keyed by category.
	ByCategory map[string]CategoryReport `json:"by_category"`
	// Seconds is the evaluation's wall time; Evaluate leaves it zero.
	Seconds float64 `json:"seconds"`
}

// CategoryReport is the evidence recall of one question category.
type CategoryReport struct {
	// Questions is the number of questions scored in the category.
	Questions int `json:"questions"`
	// Recall is the mean evidence recall@k of the category.
	Recall map[string]float64 `json:"recall"`
}

// Evaluation units: what a retrieved item and an evidence id are.
const (
	// UnitTurn scores turns: recall@k is the fraction of a question's
	// evidence turns among the first k turns retrieved.
	UnitTurn = "turn"
	// UnitSession scores sessions: the ranking of turns becomes a ranking
	// of sessions (each at the rank of its best turn), and recall@k is the
	// fraction of the sessions holding the question's evidence turns
	// among the first k sessions.
	UnitSession = "session"
)

// EvalOptions set up Evaluate. The zero value evaluates turns with a
// fresh in-memory backend and the default ranking.
type EvalOptions struct {
	// Backend, when set, is the backend the conversations are indexed
	// into, one tenant per conversation (tenant "locomo/<sample_id>");
	// Evaluate clears those tenants before and after. Nil means a new
	// recall.Memory backend with Memory.
	Backend recall.Backend
	// Memory configures the default backend's BM25.
	Memory recall.MemoryOptions
	// Ranking tunes the search; nil means recall.DefaultRanking.
	Ranking *recall.Ranking
	// Unit is UnitTurn (the default) or UnitSession.
	Unit string
}

// Evaluate measures evidence recall@k for each k of ks (positive) on the
// conversations, as the LoCoMo paper does. Every turn of a conversation is
// indexed (see TurnText) into a fresh tenant of a recall.Index, with its
// session as Group and its place in the session as Seq. For every
// question with evidence the top max(ks) turns are retrieved. Recall@k is
// the fraction of the question's evidence ids (see ParseEvidence) among
// the first k (see EvalOptions.Unit for sessions).
// Ids that name no turn count as misses. Questions whose evidence holds
// no id are skipped.
func Evaluate(ctx context.Context, convs []Conversation, ks []int, opts EvalOptions) (Report, error) {
	ks = slices.Clone(ks)
	slices.Sort(ks)
	ks = slices.Compact(ks)
	if len(ks) == 0 || ks[0] < 1 {
		return Report{}, fmt.Errorf("locomo: the cut-offs must be at least 1, got %v", ks)
	}
	switch opts.Unit {
	case "":
		opts.Unit = UnitTurn
	case UnitTurn, UnitSession:
	default:
		return Report{}, fmt.Errorf("locomo: unknown evaluation unit %q (turn or session)", opts.Unit)
	}
	b := opts.Backend
	if b == nil {
		b = recall.NewMemory(opts.Memory)
		defer b.Close()
	}
	ix := recall.New(b, recall.Options{Ranking: opts.Ranking})
	maxK := ks[len(ks)-1]
	type sums struct {
		n   int
		sum []float64
	}
	total := sums{sum: make([]float64, len(ks))}
	byCat := map[int]*sums{}
	for ci, c := range convs {
		tenant := "locomo/" + strconv.Itoa(ci) + "/" + c.ID
		if _, err := b.Clear(ctx, tenant, recall.Filter{}); err != nil {
			return Report{}, err
		}
		if err := indexConversation(ctx, ix, tenant, c); err != nil {
			return Report{}, err
		}
		for _, q := range c.Questions {
			ids := ParseEvidence(q.Evidence)
			if len(ids) == 0 {
				continue
			}
			k := maxK
			if opts.Unit == UnitSession {
				k = len(c.Turns) // every turn, to rank every session
			}
			hits, err := ix.Search(ctx, recall.Query{Tenant: tenant, Text: q.Text, K: max(k, 1)})
			if err != nil {
				return Report{}, err
			}
			ranked := make([]string, 0, len(hits))
			for _, h := range hits {
				ranked = append(ranked, h.Doc.Metadata["dia_id"])
			}
			if opts.Unit == UnitSession {
				ranked, ids = sessionsOf(ranked), sessionsOf(ids)
			}
			cat := byCat[q.Category]
			if cat == nil {
				cat = &sums{sum: make([]float64, len(ks))}
				byCat[q.Category] = cat
			}
			total.n++
			cat.n++
			for j, k := range ks {
				r := recallAt(ranked, ids, k)
				total.sum[j] += r
				cat.sum[j] += r
			}
		}
		if _, err := b.Clear(ctx, tenant, recall.Filter{}); err != nil {
			return Report{}, err
		}
	}
	mean := func(s *sums) map[string]float64 {
		m := make(map[string]float64, len(ks))
		for j, k := range ks {
			if s.n > 0 {
				m[strconv.Itoa(k)] = s.sum[j] / float64(s.n)
			} else {
				m[strconv.Itoa(k)] = 0
			}
		}
		return m
	}
	rep := Report{Questions: total.n, K: ks, Unit: opts.Unit, Recall: mean(&total), ByCategory: map[string]CategoryReport{}}
	for cat, s := range byCat {
		rep.ByCategory[strconv.Itoa(cat)] = CategoryReport{Questions: s.n, Recall: mean(s)}
	}
	return rep, nil
}

// indexConversation upserts every turn of c into the tenant, in batches.
func indexConversation(ctx context.Context, ix *recall.Index, tenant string, c Conversation) error {
	docs := make([]recall.Doc, 0, len(c.Turns))
	seq := map[int]int64{}
	for i, t := range c.Turns {
		seq[t.Session]++
		// The position keeps IDs unique even if a dia_id repeats.
		docs = append(docs, recall.Doc{
			ID:       strconv.Itoa(i),
			Tenant:   tenant,
			Text:     TurnText(t),
			Metadata: map[string]string{"dia_id": t.DiaID, "session": strconv.Itoa(t.Session)},
			Group:    "session_" + strconv.Itoa(t.Session),
			Seq:      seq[t.Session],
		})
	}
	for start := 0; start < len(docs); start += 500 {
		if err := ix.Upsert(ctx, docs[start:min(start+500, len(docs))]...); err != nil {
			return err
		}
	}
	return nil
}

// sessionsOf maps dia_ids ("D3:7") to their sessions ("D3"), keeping the
// first occurrence of each, in order.
func sessionsOf(ids []string) []string {
	var out []string
	for _, id := range ids {
		s, _, _ := strings.Cut(id, ":")
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// recallAt is the fraction of want found among the first k of ranked.
func recallAt(ranked, want []string, k int) float64 {
	found := map[string]bool{}
	for _, id := range ranked[:min(k, len(ranked))] {
		found[id] = true
	}
	n := 0
	for _, id := range want {
		if found[id] {
			n++
		}
	}
	return float64(n) / float64(len(want))
}
