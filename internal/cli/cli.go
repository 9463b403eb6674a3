// Package cli holds the conventions agentmem's commands (agentmem and
// agentmem-bench) share, so that both behave alike. Every flag can be
// given by an AGENTMEM_* environment variable, and --log-level sets up the
// logger. The exit code is 0 on success, 1 when a command fails and 2 for
// a usage error.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// EnvPrefix starts the environment variable of every flag.
const EnvPrefix = "AGENTMEM_"

// App is what a command's subcommands share: the logger and the process's
// environment.
type App struct {
	// Log is set up before any subcommand runs, from --log-level.
	Log *slog.Logger
	// LookupEnv reads an environment variable (os.LookupEnv in main).
	LookupEnv func(string) (string, bool)
	// SetDefault makes the logger slog's default too; main sets it, tests,
	// which run commands side by side, do not.
	SetDefault bool
	logLevel   string
}

// Run the PersistentPreRunE hooks of every ancestor, not only the nearest.
// A subcommand that adds its own hook keeps the root's, which reads the
// environment and sets up the logger.
func init() { cobra.EnableTraverseRunHooks = true }

// commands holds the constructors of the subcommands. Each subcommand
// lives in its own file and adds its constructor from an init function
// with Register, so adding a command touches no other file. A binary has
// the subcommands of the files it is built from.
var commands []func(*App) *cobra.Command

// Register adds a subcommand constructor, for Root; call it from init.
func Register(newCmd func(*App) *cobra.Command) { commands = append(commands, newCmd) }

// Root gives root the shared conventions: the environment variables of the
// flags, --log-level, usage errors for bad flags, no completion command,
// and errors printed by Execute rather than cobra. It sets its input and
// outputs, adds a subcommand built by each registered constructor, and
// returns it. Each call builds a fresh tree, so tests can run commands
// side by side.
func (a *App) Root(root *cobra.Command, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	if a.Log == nil {
		a.Log = slog.New(slog.NewTextHandler(stderr, nil))
	}
	root.SilenceErrors = true
	root.SilenceUsage = true
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := BindEnv(cmd.Flags(), a.LookupEnv); err != nil {
			return err
		}
		return a.setupLog(stderr)
	}
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "info", "diagnostics on stderr at or above `LEVEL`: debug, info, warn or error")
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError(err) })
	root.CompletionOptions.DisableDefaultCmd = true
	for _, newCmd := range commands {
		root.AddCommand(newCmd(a))
	}
	return root
}

// Execute runs root (built by Root) on the command line args and returns
// the exit code. That is 0, 1 when the command failed (it returned a
// Failure), or 2 for a usage error (anything else, cobra's own errors
// included). Errors go to stderr, prefixed with the root's name.
func Execute(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer) int {
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	var fail failure
	if errors.As(err, &fail) {
		fmt.Fprintf(stderr, "%s %s: %v\n", root.Name(), cmd.Name(), fail.err)
		return 1
	}
	// Everything else is a usage error: ours, or cobra's own (an unknown
	// command or flag, wrong arguments).
	var ue usageError
	if errors.As(err, &ue) {
		err = ue.err
	}
	fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", root.Name(), err, cmd.CommandPath())
	return 2
}

// PrintJSONLine writes v to w as one line of JSON, as the commands that
// report figures print them. A failure to write is a Failure.
func PrintJSONLine(w io.Writer, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return Failure(err)
	}
	if _, err := fmt.Fprintf(w, "%s\n", line); err != nil {
		return Failure(err)
	}
	return nil
}

// usageError is a command line that does not make sense: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// UsageError marks err as a usage error: exit code 2.
func UsageError(err error) error { return usageError{err} }

// Usagef returns a usage error: exit code 2.
func Usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// failure is a command that could not do its work: exit code 1.
type failure struct{ err error }

func (e failure) Error() string { return e.err.Error() }
func (e failure) Unwrap() error { return e.err }

// Failure marks err as a command that could not do its work: exit code 1.
func Failure(err error) error { return failure{err} }

// Classify marks an error of the library: bad input (agentmem.ErrInvalid)
// is a usage error, anything else a failure.
func Classify(err error) error {
	if errors.Is(err, agentmem.ErrInvalid) {
		return UsageError(err)
	}
	return Failure(err)
}

// BindEnv sets every flag not given on the command line from its
// environment variable, AGENTMEM_<NAME> (see EnvName), if that is set.
func BindEnv(flags *pflag.FlagSet, lookupEnv func(string) (string, bool)) error {
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "help" {
			return
		}
		name := EnvName(f.Name)
		v, ok := lookupEnv(name)
		if !ok {
			return
		}
		if e := flags.Set(f.Name, v); e != nil {
			err = Usagef("environment variable %s=%q: %v", name, v, e)
		}
	})
	return err
}

// EnvName is the environment variable of a flag: "max-line" becomes
// "AGENTMEM_MAX_LINE".
func EnvName(flag string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// setupLog makes the logger from --log-level.
func (a *App) setupLog(stderr io.Writer) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
		return Usagef("--log-level %q: want debug, info, warn or error", a.logLevel)
	}
	a.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	// Packages opened by URL (the registry's backends) log to the default
	// logger: make it this one, so that every line has one format.
	if a.SetDefault {
		slog.SetDefault(a.Log)
	}
	return nil
}
