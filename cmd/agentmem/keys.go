package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/internal/cli"
	"github.com/spf13/cobra"
)

func init() { cli.Register(newKeysCmd) }

// keysFlags are the flags of agentmem keys and its subcommands.
type keysFlags struct {
	store, tenant, name string
	json                bool
}

func newKeysCmd(a *cli.App) *cobra.Command {
	var f keysFlags
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Create, list and revoke API keys",
		Long: `Keys manages the API keys of agentmem serve. A key belongs to one tenant
and reaches only that tenant's sessions. Keys live in the store's database,
beside the sessions: give the same --store (or AGENTMEM_STORE) as serve; the
default is the same SQLite file.

A key is shown once, when it is created: the store keeps only its SHA-256.
Send it as "Authorization: Bearer <key>". Once the store holds any key,
every server on it requires keys, on loopback too (within 2 seconds);
revoking a key stops it working (within 2 seconds) and never turns that
requirement off.`,
		Example: `  KEY=$(agentmem keys create --tenant acme --name ci)
  curl -s -H "Authorization: Bearer $KEY" localhost:8080/v1/sessions
  agentmem keys list --tenant acme
  agentmem keys revoke 3f9c0a7d21be`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().StringVar(&f.store, "store", "", storeFlagUsage)

	create := &cobra.Command{
		Use:   "create --tenant TENANT [--name NAME]",
		Short: "Create a key and print it (once)",
		Long: `Create creates an API key for a tenant and prints it on standard output,
alone on a line: it is not shown again, so keep it now. Its key ID, for
list and revoke, goes to standard error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withKeys(cmd.Context(), a, f.store, func(ctx context.Context, keys *auth.Keys) error {
				if f.tenant == "" {
					return cli.Usagef("--tenant is required")
				}
				first, err := keys.Store().Any(ctx)
				if err != nil {
					return cli.Failure(err)
				}
				token, key, err := keys.Create(ctx, f.tenant, f.name)
				if err != nil {
					return keysErr(err)
				}
				fmt.Fprintln(cmd.OutOrStdout(), token)
				errw := cmd.ErrOrStderr()
				fmt.Fprintf(errw, "Created key %s for tenant %s. It is shown once: keep it now (the store keeps only its hash).\n", key.ID, key.Tenant)
				if !first {
					fmt.Fprintln(errw, "This is the store's first key: from now on, servers on this store require a key on every request, on loopback too.")
				}
				return nil
			})
		},
	}
	create.Flags().StringVar(&f.tenant, "tenant", "", "the `TENANT` whose data the key reaches (1-64 characters from [A-Za-z0-9._:-])")
	create.Flags().StringVar(&f.name, "name", "", "a note for people, such as who or what uses the key")

	list := &cobra.Command{
		Use:   "list [--tenant TENANT]",
		Short: "List keys (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withKeys(cmd.Context(), a, f.store, func(ctx context.Context, keys *auth.Keys) error {
				list, err := keys.List(ctx, f.tenant)
				if err != nil {
					return keysErr(err)
				}
				out := cmd.OutOrStdout()
				if f.json {
					enc := json.NewEncoder(out)
					for _, k := range list {
						if err := enc.Encode(k); err != nil {
							return cli.Failure(err)
						}
					}
					return nil
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tTENANT\tNAME\tCREATED\tLAST USED\tSTATUS")
				for _, k := range list {
					status := "active"
					if k.Revoked() {
						status = "revoked " + stamp(k.RevokedAt)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Tenant, orDash(k.Name), stamp(k.CreatedAt), stamp(k.LastUsedAt), status)
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().StringVar(&f.tenant, "tenant", "", "list only this `TENANT`'s keys")
	list.Flags().BoolVar(&f.json, "json", false, "print one JSON object per key")

	revoke := &cobra.Command{
		Use:   "revoke KEY_ID",
		Short: "Revoke a key: it never works again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withKeys(cmd.Context(), a, f.store, func(ctx context.Context, keys *auth.Keys) error {
				key, err := keys.Revoke(ctx, args[0])
				if err != nil {
					return keysErr(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Revoked key %s of tenant %s (at %s).\n", key.ID, key.Tenant, stamp(key.RevokedAt))
				return nil
			})
		},
	}
	cmd.AddCommand(create, list, revoke, newAssignSessionsCmd(a, &f.store))
	return cmd
}

// withKeys opens the key store of --store, runs fn and closes it.
func withKeys(ctx context.Context, a *cli.App, storeFlag string, fn func(context.Context, *auth.Keys) error) error {
	storeURL, err := resolveStoreURL(a, storeFlag)
	if err != nil {
		return err
	}
	if u, err := url.Parse(storeURL); err == nil && u.Scheme == "mem" {
		return cli.Usagef("--store mem:// keeps nothing after this command: keys need a sqlite:// or postgres:// store")
	}
	ks, err := auth.Open(ctx, storeURL)
	if err != nil {
		return cli.Failure(err)
	}
	defer ks.Close()
	return fn(ctx, auth.NewKeys(ks, auth.KeysOptions{}))
}

// keysErr classifies an error of package auth: bad input is a usage
// error, anything else a failure.
func keysErr(err error) error {
	var inv *agentmem.InvalidError
	if errors.As(err, &inv) {
		if inv.Field == "id" {
			return cli.Usagef("KEY_ID: %s", inv.Reason)
		}
		return cli.Usagef("--%s: %s", inv.Field, inv.Reason)
	}
	return cli.Classify(err)
}

// stamp formats a time for the key list; "-" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
