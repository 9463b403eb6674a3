package main

import (
	"context"
	"fmt"

	"github.com/agentmem/agentmem/internal/cli"
	"github.com/agentmem/agentmem/store"
	"github.com/spf13/cobra"
)

func init() { cli.Register(newFeedCmd) }

// newFeedCmd is agentmem feed: the store's change feed and its consumers.
func newFeedCmd(a *cli.App) *cobra.Command {
	var storeFlag string
	cmd := &cobra.Command{
		Use:   "feed",
		Short: "Manage the consumers of the store's change feed",
		Long: `The store keeps a feed of its changes (appends, forks, deletes) that the
recall index, and any other consumer, follows from a cursor saved in the
store. The feed keeps a change until every consumer with a cursor has read
it, so a consumer retired for good (a recall index moved elsewhere, a
follower you no longer run) holds it back, and it grows, until its cursor
is dropped.`,
	}
	cmd.PersistentFlags().StringVar(&storeFlag, "store", "", storeFlagUsage)
	cmd.AddCommand(&cobra.Command{
		Use:   "cursor CONSUMER",
		Short: "Print a consumer's cursor",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withFeed(cmd.Context(), a, storeFlag, func(ctx context.Context, f store.Feed) error {
				c, err := f.LoadCursor(ctx, args[0])
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\ttx %d\tpos %d\n", args[0], c.Tx, c.Pos)
				return err
			})
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "drop-cursor CONSUMER",
		Short: "Drop a retired consumer's cursor, so that it no longer holds the feed back",
		Long: `Drop-cursor removes a consumer's cursor and trims the changes every
remaining consumer has read. Dropping a cursor that does not exist does
nothing. Do not drop the cursor of a consumer that still runs: the recall
index of 'agentmem serve' is "recall"; if it runs again it starts over
from the oldest change the feed still has, and what was trimmed before
it is not indexed ('agentmem recall backfill' indexes it).`,
		Example: `  agentmem feed drop-cursor old-indexer --store postgres://db.internal/agentmem`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withFeed(cmd.Context(), a, storeFlag, func(ctx context.Context, f store.Feed) error {
				if err := f.DropCursor(ctx, args[0]); err != nil {
					return err
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "dropped the cursor of %s\n", args[0])
				return err
			})
		},
	})
	return cmd
}

// withFeed runs fn with the feed of the store storeFlag names.
func withFeed(ctx context.Context, a *cli.App, storeFlag string, fn func(context.Context, store.Feed) error) error {
	st, err := openSessionStore(ctx, a, storeFlag, true)
	if err != nil {
		return err
	}
	defer st.Close()
	f, ok := st.Feed()
	if !ok {
		return cli.Usagef("the store %T has no change feed", st)
	}
	if err := fn(ctx, f); err != nil {
		return cli.Classify(err)
	}
	return nil
}
