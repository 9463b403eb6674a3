package agentmem

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
)

// DefaultMMRLambda is the default weight of relevance against diversity in
// MMR.
const DefaultMMRLambda = 0.7

// MMROptions configures the MMR strategy. At least one of Budget and Keep
// must be set.
type MMROptions struct {
	// KeepRecent is the number of newest unpinned steps kept as they are,
	// outside the selection. Zero means DefaultKeepRecent (6); a negative
	// value keeps none.
	KeepRecent int
	// Budget, when above zero, bounds the total cost (Env.Tokens) of the
	// older steps selected. Pinned and recent steps are kept whatever they
	// cost; to bound the whole request, follow MMR with TokenBudget or
	// render with a ContextOptions.Budget.
	Budget int
	// Keep, when above zero, bounds the number of older steps selected.
	Keep int
	// Lambda weighs relevance against diversity: a step's score is
	// Lambda·relevance − (1−Lambda)·(its greatest similarity to a step
	// already selected). Zero means DefaultMMRLambda (0.7); a negative
	// value means 0 (diversity only); values above 1 mean 1 (relevance
	// only).
	Lambda float64
	// Query is the text relevance is measured against. Empty means the
	// text of the pinned tasks and of the recent steps kept: what the
	// agent is doing now.
	Query string
	// Embedder, when set, measures similarity as the cosine of its
	// vectors. Otherwise similarity is lexical: the cosine of TF-IDF
	// vectors of the steps' lower-cased words, with document frequencies
	// taken over the older steps. Lexical similarity needs no model and no
	// network.
	Embedder Embedder
}

// MMR returns the semantic pruning strategy the seeds leave as future
// work. It keeps the pinned steps and the newest opts.KeepRecent unpinned
// steps. From the older unpinned steps it selects, by maximal marginal
// relevance, those to keep within opts.Budget tokens and opts.Keep steps.
// Steps are picked one at a time, each time the one with the best score
// Lambda·relevance − (1−Lambda)·redundancy that still fits the
// budget. Relevance is a step's similarity to the query, and redundancy
// its greatest similarity to the steps already picked. So of several
// near-duplicate observations one is kept, and the budget goes to steps
// that add something. Equal scores go to the newer step, and the result is
// deterministic. The kept steps are returned unchanged and in their
// original order.
//
// When the older steps already fit, all are kept and the Embedder is not
// called. Apply returns an error wrapping ErrInvalid if neither Budget nor
// Keep is set, and the Embedder's error if it fails.
func MMR(opts MMROptions) Strategy {
	keepRecent := opts.KeepRecent
	switch {
	case keepRecent == 0:
		keepRecent = DefaultKeepRecent
	case keepRecent < 0:
		keepRecent = 0
	}
	lambda := opts.Lambda
	switch {
	case lambda == 0:
		lambda = DefaultMMRLambda
	case lambda < 0:
		lambda = 0
	case lambda > 1:
		lambda = 1
	}
	return StrategyFunc(func(ctx context.Context, steps []Step, env *Env) ([]Step, error) {
		if opts.Budget <= 0 && opts.Keep <= 0 {
			return nil, invalidf("MMROptions", "needs a Budget or a Keep above zero")
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		env, pinned := pinEnv(steps, env)
		keep := slices.Clone(pinned)
		var unpinned []int
		for i := range steps {
			if !pinned[i] {
				unpinned = append(unpinned, i)
			}
		}
		split := max(len(unpinned)-keepRecent, 0)
		cands, recent := unpinned[:split], unpinned[split:]
		for _, i := range recent {
			keep[i] = true
		}
		costs := make([]int, len(cands))
		total := 0
		for j, i := range cands {
			costs[j] = env.Tokens(steps[i])
			total += costs[j]
		}
		if (opts.Budget <= 0 || total <= opts.Budget) && (opts.Keep <= 0 || len(cands) <= opts.Keep) {
			for _, i := range cands {
				keep[i] = true
			}
			return keepMasked(steps, keep), nil
		}

		query := opts.Query
		if query == "" {
			var b strings.Builder
			for i, s := range steps {
				if (pinned[i] && s.Kind() == KindTask) || (keep[i] && !pinned[i]) {
					b.WriteString(stepSearchText(s))
				}
			}
			query = b.String()
		}
		texts := make([]string, len(cands))
		for j, i := range cands {
			texts[j] = stepSearchText(steps[i])
		}
		var sim mmrSimilarity
		if opts.Embedder != nil {
			d, err := embedForMMR(ctx, opts.Embedder, texts, query)
			if err != nil {
				return nil, err
			}
			sim = d
		} else {
			sim = newTFIDFSim(texts, query)
		}
		for _, j := range selectMMR(sim, costs, opts.Budget, opts.Keep, lambda) {
			keep[cands[j]] = true
		}
		return keepMasked(steps, keep), nil
	})
}

// selectMMR greedily selects candidates by maximal marginal relevance
// within budget tokens and keep picks (either unchecked when zero or
// less). It returns the indexes selected.
func selectMMR(sim mmrSimilarity, costs []int, budget, keep int, lambda float64) []int {
	n := len(costs)
	rel := make([]float64, n)
	for i := range n {
		rel[i] = sim.relevance(i)
	}
	redundancy := make([]float64, n) // greatest similarity to a selected candidate
	selected := make([]bool, n)
	var picked []int
	used := 0
	for keep <= 0 || len(picked) < keep {
		best, bestScore := -1, 0.0
		for i := n - 1; i >= 0; i-- { // newest first: equal scores go to the newer step
			if selected[i] || (budget > 0 && used+costs[i] > budget) {
				continue
			}
			score := lambda*rel[i] - (1-lambda)*redundancy[i]
			if best < 0 || score > bestScore {
				best, bestScore = i, score
			}
		}
		if best < 0 {
			break
		}
		selected[best] = true
		picked = append(picked, best)
		used += costs[best]
		for i := range n {
			if !selected[i] {
				redundancy[i] = max(redundancy[i], sim.between(i, best))
			}
		}
	}
	return picked
}

// mmrSimilarity measures candidates against the query and each other.
type mmrSimilarity interface {
	relevance(i int) float64 // similarity of candidate i to the query
	between(i, j int) float64
}

// stepSearchText is the text of a step as the model sees it: its rendered
// messages, with tool calls' names and arguments.
func stepSearchText(s Step) string {
	var b strings.Builder
	for _, m := range s.Messages(RenderOptions{}) {
		b.WriteString(m.Text())
		b.WriteByte('\n')
		for _, tc := range m.ToolCalls {
			b.WriteString(tc.Name + " " + tc.Arguments + "\n")
		}
		for _, ac := range m.AgentCalls {
			b.WriteString(ac.Agent + " " + ac.Request + "\n")
		}
	}
	return b.String()
}

// denseSim is similarity over embedding vectors, normalized to unit length.
type denseSim struct {
	docs  [][]float64
	query []float64 // nil when there is no query
}

func (d *denseSim) relevance(i int) float64 { return denseDot(d.docs[i], d.query) }
func (d *denseSim) between(i, j int) float64 {
	return denseDot(d.docs[i], d.docs[j])
}

// embedForMMR embeds the candidates' texts and the query in one call.
func embedForMMR(ctx context.Context, e Embedder, texts []string, query string) (*denseSim, error) {
	in := texts
	if query != "" {
		in = append(slices.Clone(texts), query)
	}
	vecs, err := e.Embed(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("agentmem: MMR: embed %d texts: %w", len(in), err)
	}
	if len(vecs) != len(in) {
		return nil, invalidf("embeddings", "got %d vectors for %d texts", len(vecs), len(in))
	}
	d := &denseSim{docs: make([][]float64, len(texts))}
	dim := -1
	for i, v := range vecs {
		if dim >= 0 && len(v) != dim {
			return nil, invalidf(fmt.Sprintf("embeddings[%d]", i), "has %d dimensions, not %d", len(v), dim)
		}
		dim = len(v)
		u := unitVector(v)
		if i < len(texts) {
			d.docs[i] = u
		} else {
			d.query = u
		}
	}
	return d, nil
}

// unitVector returns v scaled to unit length (all zeros for a zero vector).
func unitVector(v []float32) []float64 {
	out := make([]float64, len(v))
	var norm float64
	for i, x := range v {
		out[i] = float64(x)
		norm += out[i] * out[i]
	}
	if norm > 0 && !math.IsInf(norm, 0) && !math.IsNaN(norm) {
		norm = math.Sqrt(norm)
		for i := range out {
			out[i] /= norm
		}
	} else {
		clear(out)
	}
	return out
}

func denseDot(a, b []float64) float64 {
	var s float64
	for i := range min(len(a), len(b)) {
		s += a[i] * b[i]
	}
	return s
}

// tfidfSim is lexical similarity: cosine over sparse TF-IDF vectors. It
// uses sublinear term frequency (1 + ln tf) and smoothed inverse document
// frequency ln((1+N)/(1+df)) + 1 over the N candidates. Vectors are sorted
// by term id so that every sum runs in the same order: the result does not
// depend on map iteration.
type tfidfSim struct {
	docs  []sparseVec
	query sparseVec
}

// sparseVec is a unit vector of (term id, weight) pairs sorted by id.
type sparseVec []termWeight

type termWeight struct {
	term   int
	weight float64
}

func newTFIDFSim(texts []string, query string) *tfidfSim {
	vocab := make(map[string]int)
	counts := make([]map[int]int, len(texts))
	var df []int
	for d, text := range texts {
		counts[d] = make(map[int]int)
		for _, w := range lexicalWords(text) {
			id, ok := vocab[w]
			if !ok {
				id = len(vocab)
				vocab[w] = id
				df = append(df, 0)
			}
			if counts[d][id] == 0 {
				df[id]++
			}
			counts[d][id]++
		}
	}
	n := float64(len(texts))
	idf := make([]float64, len(df))
	for id, f := range df {
		idf[id] = math.Log((1+n)/(1+float64(f))) + 1
	}
	t := &tfidfSim{docs: make([]sparseVec, len(texts))}
	for d := range texts {
		t.docs[d] = tfidfVector(counts[d], idf)
	}
	q := make(map[int]int)
	for _, w := range lexicalWords(query) {
		if id, ok := vocab[w]; ok { // words no candidate has cannot match
			q[id]++
		}
	}
	t.query = tfidfVector(q, idf)
	return t
}

func (t *tfidfSim) relevance(i int) float64  { return t.docs[i].dot(t.query) }
func (t *tfidfSim) between(i, j int) float64 { return t.docs[i].dot(t.docs[j]) }

// tfidfVector turns term counts into a unit TF-IDF vector.
func tfidfVector(counts map[int]int, idf []float64) sparseVec {
	v := make(sparseVec, 0, len(counts))
	for id, c := range counts {
		v = append(v, termWeight{id, (1 + math.Log(float64(c))) * idf[id]})
	}
	slices.SortFunc(v, func(a, b termWeight) int { return a.term - b.term })
	var norm float64
	for _, tw := range v {
		norm += tw.weight * tw.weight
	}
	if norm > 0 {
		norm = math.Sqrt(norm)
		for i := range v {
			v[i].weight /= norm
		}
	}
	return v
}

// dot is the dot product of two sparse vectors, merged by term id.
func (a sparseVec) dot(b sparseVec) float64 {
	var s float64
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i].term < b[j].term:
			i++
		case a[i].term > b[j].term:
			j++
		default:
			s += a[i].weight * b[j].weight
			i++
			j++
		}
	}
	return s
}

// lexicalWords splits text into lower-cased runs of letters and digits.
func lexicalWords(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}
