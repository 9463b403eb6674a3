package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/agentmem/agentmem/recall"
	"github.com/spf13/cobra"
)

func init() { register(newEvalCmd) }

// newEvalCmd builds agentmem eval, the parent of the evaluations.
func newEvalCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Evaluate agentmem's memory on a benchmark",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newEvalRecallCmd(a))
	return cmd
}

// evalRecallFlags are the flags of agentmem eval recall.
type evalRecallFlags struct {
	dataset string
	ks      []int
	k1, b   float64
	nbw     float64
}

func newEvalRecallCmd(_ *app) *cobra.Command {
	var f evalRecallFlags
	cmd := &cobra.Command{
		Use:   "recall --dataset FILE [--k 5,10,25,50]",
		Short: "Measure evidence recall@k of the recall index on a LoCoMo-format dataset",
		Long: `Recall reads a LoCoMo-format JSON file, indexes every turn of each
conversation (its text, speaker, session date and image caption) into a
fresh in-memory BM25 index, retrieves (a turn's score gaining a share,
--neighbour-weight, of the scores of the turns before and after it) the top turns for every question with
evidence, and prints evidence recall@k (a fraction in [0, 1]) overall and
per question category as one JSON line.

It never reads the dataset's observation, session_summary or event_summary
fields, nor the answers.`,
		Example: `  agentmem eval recall --dataset ../shared/data/locomo-dev/locomo-dev.json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.dataset == "" {
				return usagef("--dataset is required")
			}
			for _, k := range f.ks {
				if k < 1 {
					return usagef("--k %d: every cut-off must be at least 1", k)
				}
			}
			if len(f.ks) == 0 {
				return usagef("--k: give at least one cut-off")
			}
			start := time.Now()
			file, err := os.Open(f.dataset)
			if err != nil {
				return failure{err}
			}
			defer file.Close()
			convs, err := recall.DecodeLoCoMo(file)
			if err != nil {
				return failure{err}
			}
			rep, err := recall.Evaluate(convs, f.ks, recall.EvalOptions{
				Index:           recall.Config{K1: f.k1, B: f.b},
				NeighbourWeight: f.nbw,
			})
			if err != nil {
				return failure{err}
			}
			rep.Dataset = f.dataset
			rep.Seconds = time.Since(start).Seconds()
			line, err := json.Marshal(rep)
			if err != nil {
				return failure{err}
			}
			if _, err := fmt.Fprintf(cmd.OutOrStdout(), "%s\n", line); err != nil {
				return failure{err}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dataset, "dataset", "", "the LoCoMo-format JSON `FILE` (required)")
	fl.IntSliceVar(&f.ks, "k", []int{5, 10, 25, 50}, "the cut-offs k of recall@k")
	fl.Float64Var(&f.k1, "k1", recall.DefaultK1, "BM25's term frequency saturation k1")
	fl.Float64Var(&f.b, "b", recall.DefaultB, "BM25's length normalization b")
	fl.Float64Var(&f.nbw, "neighbour-weight", recall.DefaultNeighbourWeight, "the share of the neighbouring turns' scores added to a turn's (0 for plain BM25)")
	return cmd
}
