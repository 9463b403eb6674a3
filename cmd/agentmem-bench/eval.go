package main

import (
	"os"
	"path/filepath"
	"time"

	"github.com/agentmem/agentmem/internal/bench/locomo"
	"github.com/agentmem/agentmem/internal/cli"
	"github.com/agentmem/agentmem/recall"
	recallsqlite "github.com/agentmem/agentmem/recall/sqlite"
	"github.com/spf13/cobra"
)

func init() { cli.Register(newEvalCmd) }

// newEvalCmd builds agentmem-bench eval, the parent of the evaluations.
func newEvalCmd(a *cli.App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Evaluate agentmem's memory on a benchmark",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newEvalRecallCmd(a))
	return cmd
}

// evalRecallFlags are the flags of agentmem-bench eval recall.
type evalRecallFlags struct {
	dataset string
	ks      []int
	unit    string
	backend string
	k1, b   float64
	ranking recall.Ranking
}

func newEvalRecallCmd(_ *cli.App) *cobra.Command {
	f := evalRecallFlags{ranking: recall.DefaultRanking}
	cmd := &cobra.Command{
		Use:   "recall --dataset FILE [--k 5,10,25,50] [--unit turn|session] [--backend mem|sqlite]",
		Short: "Measure evidence recall@k of the recall index on a LoCoMo-format dataset",
		Long: `Recall reads a LoCoMo-format JSON file, indexes every turn of each
conversation (its speaker, text, image caption and session date; its
session as the group and its place in the session as the sequence number)
into a fresh tenant of a recall index, searches it with every question
that has evidence, and prints evidence recall@k (a fraction in [0, 1])
overall and per question category as one JSON line.

The search is the recall index's default ranking (flags below tune it):
BM25 candidates, pseudo-relevance feedback, a share of the neighbouring
turns' and of the session's scores, and no neural model.

--unit turn (the default) counts evidence turns: recall@k is the share of
a question's evidence turns among the first k turns retrieved. --unit
session counts sessions: the ranking of turns becomes a ranking of
sessions (each at the rank of its best turn), and recall@k is the share
of the sessions holding evidence among the first k sessions.

--backend mem indexes in memory; --backend sqlite indexes into a
temporary SQLite file (FTS5), removed afterwards, to show that backend's
recall.

It never reads the dataset's observation, session_summary or event_summary
fields, nor the answers.`,
		Example: `  agentmem-bench eval recall --dataset locomo10.json
  agentmem-bench eval recall --dataset locomo.json --k 10 --unit session --backend sqlite`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.dataset == "" {
				return cli.Usagef("--dataset is required")
			}
			if len(f.ks) == 0 {
				return cli.Usagef("--k: give at least one cut-off")
			}
			for _, k := range f.ks {
				if k < 1 {
					return cli.Usagef("--k %d: every cut-off must be at least 1", k)
				}
			}
			if f.unit != locomo.UnitTurn && f.unit != locomo.UnitSession {
				return cli.Usagef("--unit %q: turn or session", f.unit)
			}
			start := time.Now()
			file, err := os.Open(f.dataset)
			if err != nil {
				return cli.Failure(err)
			}
			defer file.Close()
			convs, err := locomo.DecodeLoCoMo(file)
			if err != nil {
				return cli.Failure(err)
			}
			opts := locomo.EvalOptions{
				Memory:  recall.MemoryOptions{K1: f.k1, B: f.b},
				Ranking: &f.ranking,
				Unit:    f.unit,
			}
			switch f.backend {
			case "mem":
			case "sqlite":
				dir, err := os.MkdirTemp("", "agentmem-eval-")
				if err != nil {
					return cli.Failure(err)
				}
				defer os.RemoveAll(dir)
				b, err := recallsqlite.Open(cmd.Context(), filepath.Join(dir, "recall.db"), recallsqlite.Options{})
				if err != nil {
					return cli.Failure(err)
				}
				defer b.Close()
				opts.Backend = b
			default:
				return cli.Usagef("--backend %q: mem or sqlite", f.backend)
			}
			rep, err := locomo.Evaluate(cmd.Context(), convs, f.ks, opts)
			if err != nil {
				return cli.Failure(err)
			}
			rep.Dataset = f.dataset
			rep.Seconds = time.Since(start).Seconds()
			if err := cli.PrintJSONLine(cmd.OutOrStdout(), rep); err != nil {
				return err
			}
			return nil
		},
	}
	fl := cmd.Flags()
	r := &f.ranking
	fl.StringVar(&f.dataset, "dataset", "", "the LoCoMo-format JSON `FILE` (required)")
	fl.IntSliceVar(&f.ks, "k", []int{5, 10, 25, 50}, "the cut-offs k of recall@k")
	fl.StringVar(&f.unit, "unit", locomo.UnitTurn, "what is counted: turn or session (see above)")
	fl.StringVar(&f.backend, "backend", "mem", "the index backend: mem or sqlite")
	fl.Float64Var(&f.k1, "k1", recall.DefaultK1, "BM25's term frequency saturation k1 (mem backend)")
	fl.Float64Var(&f.b, "b", recall.DefaultB, "BM25's length normalization b (mem backend)")
	fl.Float64Var(&r.NeighbourWeight, "neighbour-weight", r.NeighbourWeight, "the share of the neighbouring turns' scores added to a turn's (negative: off)")
	fl.Float64Var(&r.GroupWeight, "group-weight", r.GroupWeight, "the share of its session's score added to a turn's (negative: off)")
	fl.IntVar(&r.FeedbackDocs, "feedback-docs", r.FeedbackDocs, "pseudo-relevance feedback: the top turns read for expansion terms (negative: off)")
	fl.IntVar(&r.FeedbackTerms, "feedback-terms", r.FeedbackTerms, "pseudo-relevance feedback: the expansion terms searched")
	fl.Float64Var(&r.FeedbackWeight, "feedback-weight", r.FeedbackWeight, "pseudo-relevance feedback: the weight of the expansion terms' scores")
	fl.Float64Var(&r.GroupDecay, "group-decay", r.GroupDecay, "diversity: the factor of each further turn of one session (1 or negative: off)")
	fl.IntVar(&r.Candidates, "candidates", r.Candidates, "the lexical candidates scored per question (0: max(200, 10 k))")
	return cmd
}
