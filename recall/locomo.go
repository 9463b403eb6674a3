package recall

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
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

// DefaultNeighbourWeight is the neighbour weight agentmem eval recall
// uses: on the LoCoMo development split it raises recall@k at every k over
// plain BM25 (weights 0.1 to 0.5 all do; 0.3 was fixed before the test
// split is seen).
const DefaultNeighbourWeight = 0.3

// EvalOptions set up Evaluate.
type EvalOptions struct {
	// Index configures the index of every conversation.
	Index Config
	// NeighbourWeight, if positive, adds to the score of every turn this
	// share of the scores of the turns just before and after it in the
	// conversation, so that a turn answering (or asked by) a matching turn
	// ranks higher.
	NeighbourWeight float64
}

// search returns the top k turns of ix for the query, documents being
// numbered by their position in the conversation, with the scores of
// neighbours mixed in at weight w.
func search(ix *Index, query string, k int, w float64) []Hit {
	if w <= 0 {
		return ix.Search(query, k, nil)
	}
	hits := ix.Search(query, ix.Len(), nil)
	score := make(map[int]float64, len(hits))
	pos := make([]int, len(hits))
	for j, h := range hits {
		pos[j], _ = strconv.Atoi(h.ID)
		score[pos[j]] = h.Score
	}
	n := len(hits)
	for j := range n {
		i := pos[j]
		hits[j].Score += w * (score[i-1] + score[i+1])
		// A turn that matches nothing but neighbours a hit joins too.
		for _, nb := range []int{i - 1, i + 1} {
			if _, ok := score[nb]; ok {
				continue
			}
			d, ok := ix.Get(strconv.Itoa(nb))
			if !ok {
				continue
			}
			score[nb] = 0
			hits = append(hits, Hit{ID: d.ID, Score: w * (score[nb-1] + score[nb+1]), Doc: d})
			pos = append(pos, nb)
		}
	}
	idx := make([]int, len(hits))
	for j := range idx {
		idx[j] = j
	}
	sort.Slice(idx, func(a, b int) bool {
		ha, hb := hits[idx[a]], hits[idx[b]]
		if ha.Score != hb.Score {
			return ha.Score > hb.Score
		}
		return pos[idx[a]] < pos[idx[b]]
	})
	out := make([]Hit, 0, min(k, len(idx)))
	for _, j := range idx[:min(k, len(idx))] {
		out = append(out, hits[j])
	}
	return out
}

// Evaluate measures evidence recall@k for each k of ks (positive) on the
// conversations, as the LoCoMo paper does: every turn of a conversation is
// indexed (see TurnText) into a fresh Index with cfg, with metadata dia_id
// and session; for every question with evidence the top max(ks) turns are
// retrieved, and recall@k is the fraction of the question's evidence ids
// (see ParseEvidence) among the first k. Ids that name no turn count as
// misses. Questions whose evidence holds no id are skipped.
func Evaluate(convs []Conversation, ks []int, opts EvalOptions) (Report, error) {
	ks = slices.Clone(ks)
	slices.Sort(ks)
	ks = slices.Compact(ks)
	if len(ks) == 0 || ks[0] < 1 {
		return Report{}, fmt.Errorf("recall: the cut-offs must be at least 1, got %v", ks)
	}
	maxK := ks[len(ks)-1]
	type sums struct {
		n   int
		sum []float64
	}
	total := sums{sum: make([]float64, len(ks))}
	byCat := map[int]*sums{}
	for _, c := range convs {
		ix := NewIndex(opts.Index)
		for i, t := range c.Turns {
			// The position keeps IDs unique even if a dia_id repeats.
			ix.Upsert(Doc{
				ID:       strconv.Itoa(i),
				Text:     TurnText(t),
				Metadata: map[string]string{"dia_id": t.DiaID, "session": strconv.Itoa(t.Session)},
			})
		}
		for _, q := range c.Questions {
			ids := ParseEvidence(q.Evidence)
			if len(ids) == 0 {
				continue
			}
			hits := search(ix, q.Text, maxK, opts.NeighbourWeight)
			cat := byCat[q.Category]
			if cat == nil {
				cat = &sums{sum: make([]float64, len(ks))}
				byCat[q.Category] = cat
			}
			total.n++
			cat.n++
			for j, k := range ks {
				found := map[string]bool{}
				for _, h := range hits[:min(k, len(hits))] {
					found[h.Doc.Metadata["dia_id"]] = true
				}
				n := 0
				for _, id := range ids {
					if found[id] {
						n++
					}
				}
				r := float64(n) / float64(len(ids))
				total.sum[j] += r
				cat.sum[j] += r
			}
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
	rep := Report{Questions: total.n, K: ks, Recall: mean(&total), ByCategory: map[string]CategoryReport{}}
	for cat, s := range byCat {
		rep.ByCategory[strconv.Itoa(cat)] = CategoryReport{Questions: s.n, Recall: mean(s)}
	}
	return rep, nil
}
