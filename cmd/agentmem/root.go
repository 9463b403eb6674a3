package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// envPrefix starts the environment variable of every flag.
const envPrefix = "AGENTMEM_"

// app is what the subcommands share: the logger and the process's
// environment.
type app struct {
	// log is set up before any subcommand runs, from --log-level.
	log *slog.Logger
	// lookupEnv reads an environment variable (os.LookupEnv in main).
	lookupEnv func(string) (string, bool)
	logLevel  string
	// setDefault makes the logger slog's default too; main sets it, tests,
	// which run commands side by side, do not.
	setDefault bool
}

// Run the PersistentPreRunE hooks of every ancestor, not only the
// nearest: a subcommand that adds its own hook keeps the root's (which
// reads the environment and sets up the logger).
func init() { cobra.EnableTraverseRunHooks = true }

// commands holds the constructors of the subcommands. Each subcommand
// lives in its own file and adds its constructor here from an init
// function, so adding a command touches no other file.
var commands []func(*app) *cobra.Command

// register adds a subcommand constructor; call it from init.
func register(newCmd func(*app) *cobra.Command) { commands = append(commands, newCmd) }

// newRoot builds the command tree. Each call builds a fresh tree, so
// tests can run commands side by side.
func newRoot(a *app, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "agentmem",
		Short: "agentmem is the memory layer for LLM agents",
		Long: `agentmem is the memory layer for LLM agents: an agent's run as a log of
typed steps, rendered to valid chat messages that fit an exact token budget.

Every flag can also be given by an environment variable: AGENTMEM_ and the
flag's name in upper case, dashes as underscores (AGENTMEM_TOKENIZER for
--tokenizer, AGENTMEM_LOG_LEVEL for --log-level). A flag given on the
command line wins over its variable.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := bindEnv(cmd.Flags(), a.lookupEnv); err != nil {
				return err
			}
			return a.setupLog(stderr)
		},
	}
	// --version prints what `agentmem version` does.
	root.Version = versionLine(readBuild())
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "info", "diagnostics on stderr at or above `LEVEL`: debug, info, warn or error")
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.CompletionOptions.DisableDefaultCmd = true
	for _, newCmd := range commands {
		root.AddCommand(newCmd(a))
	}
	return root
}

// execute runs the command line args and returns the exit code: 0, 1 when
// the command failed, 2 for a usage error. Errors go to stderr.
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	return executeApp(ctx, &app{lookupEnv: lookupEnv}, args, stdin, stdout, stderr)
}

// executeApp is execute with the app given: main's makes its logger
// slog's default.
func executeApp(ctx context.Context, a *app, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a.log = slog.New(slog.NewTextHandler(stderr, nil))
	root := newRoot(a, stdin, stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	var fail failure
	if errors.As(err, &fail) {
		fmt.Fprintf(stderr, "agentmem %s: %v\n", cmd.Name(), fail.err)
		return 1
	}
	// Everything else is a usage error: ours, or cobra's own (an unknown
	// command or flag, wrong arguments).
	var ue usageError
	if errors.As(err, &ue) {
		err = ue.err
	}
	fmt.Fprintf(stderr, "agentmem: %v\nRun '%s --help' for usage.\n", err, cmd.CommandPath())
	return 2
}

// usageError is a command line that does not make sense: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usageError.
func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// failure is a command that could not do its work: exit code 1.
type failure struct{ err error }

func (e failure) Error() string { return e.err.Error() }
func (e failure) Unwrap() error { return e.err }

// bindEnv sets every flag not given on the command line from its
// environment variable, AGENTMEM_<NAME> (see envName), if that is set.
func bindEnv(flags *pflag.FlagSet, lookupEnv func(string) (string, bool)) error {
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "help" {
			return
		}
		name := envName(f.Name)
		v, ok := lookupEnv(name)
		if !ok {
			return
		}
		if e := flags.Set(f.Name, v); e != nil {
			err = usagef("environment variable %s=%q: %v", name, v, e)
		}
	})
	return err
}

// envName is the environment variable of a flag: "max-line" becomes
// "AGENTMEM_MAX_LINE".
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// setupLog makes the logger from --log-level.
func (a *app) setupLog(stderr io.Writer) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
		return usagef("--log-level %q: want debug, info, warn or error", a.logLevel)
	}
	a.log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	// Packages opened by URL (the registry's backends) log to the default
	// logger: make it this one, so that every line has one format.
	if a.setDefault {
		slog.SetDefault(a.log)
	}
	return nil
}
