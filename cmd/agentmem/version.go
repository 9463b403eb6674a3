package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/agentmem/agentmem/internal/cli"
	"github.com/spf13/cobra"
)

// The release, commit and build time, stamped at build time by
// scripts/release.sh with
//
//	-ldflags "-X main.version=v1.2.3 -X main.commit=abc1234 -X main.date=2026-11-27T12:00:00Z"
//
// Unstamped builds take them from the build information. That is the
// module's version for `go install …@v1.2.3`, and the VCS revision and its
// time for a `go build` in a git checkout.
var version, commit, date string

func init() { cli.Register(newVersionCmd) }

func newVersionCmd(*cli.App) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine(readBuild()))
			return err
		},
	}
}

// buildStamp is what a binary knows about how it was built.
type buildStamp struct {
	Version, Commit, Date string
	Modified              bool // built from a checkout with uncommitted changes
}

// readBuild returns the stamped values, each completed from the build
// information when it was not stamped.
func readBuild() buildStamp {
	b := buildStamp{Version: version, Commit: commit, Date: date}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	if commit == "" {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.time":
				if b.Date == "" {
					b.Date = s.Value
				}
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	return b
}

// versionLine is what `agentmem version` and `agentmem --version` print:
// one line, so that scripts can read it.
func versionLine(b buildStamp) string {
	v := b.Version
	if v == "" {
		v = "devel"
	}
	var parts []string
	if b.Commit != "" {
		c := b.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		if b.Modified {
			c += "-dirty"
		}
		parts = append(parts, "commit "+c)
	}
	if b.Date != "" {
		parts = append(parts, "built "+b.Date)
	}
	parts = append(parts, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH)
	return "agentmem " + v + " (" + strings.Join(parts, ", ") + ")"
}

// buildVersion is the version servers report (MCP's serverInfo, /metrics):
// the stamped or module version, else "devel".
func buildVersion() string {
	if v := readBuild().Version; v != "" {
		return v
	}
	return "devel"
}
