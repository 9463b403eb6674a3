package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"github.com/agentmem/agentmem/internal/cli"
	sqlitestore "github.com/agentmem/agentmem/store/sqlite"
)

// storeFlagUsage is the usage of the --store flag every command that opens
// the store shares (serve, keys, inspect, export, import).
const storeFlagUsage = "the store `URL`: sqlite:///path.db, postgres://..., mem:// (default sqlite:// in the user's data directory)"

// resolveStoreURL returns the store URL a command opens: flagValue (from
// --store or AGENTMEM_STORE) when set, or else the default SQLite file of
// defaultStorePath.
func resolveStoreURL(a *cli.App, flagValue string) (string, error) {
	return storeURL(a, flagValue, true)
}

// resolveExistingStoreURL is resolveStoreURL for commands that only read
// (inspect, export, recall search). A SQLite file must exist: opening a
// missing one would create an empty store and report on it, and a typo
// would leave a new file behind.
func resolveExistingStoreURL(a *cli.App, flagValue string) (string, error) {
	raw, err := storeURL(a, flagValue, false)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != sqlitestore.Scheme {
		return raw, nil // the backend reports a bad URL
	}
	path, _, err := sqlitestore.ParseURL(u)
	if err != nil || path == sqlitestore.MemoryPath {
		return raw, nil
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", cli.Failure(fmt.Errorf("no store at %s: this command only reads, and creates none (agentmem serve or import creates one; --store names another)", path))
		}
		return "", cli.Failure(err)
	}
	return raw, nil
}

func storeURL(a *cli.App, flagValue string, create bool) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	path, err := defaultStorePath(a.LookupEnv, create)
	if err != nil {
		return "", cli.Failure(err)
	}
	return "sqlite://" + (&url.URL{Path: path}).EscapedPath(), nil
}

// defaultStorePath returns the default SQLite file,
// $XDG_DATA_HOME/agentmem/agentmem.db or ~/.local/share/agentmem/agentmem.db,
// creating its directory (0700) if create is set and it is missing.
func defaultStorePath(lookupEnv func(string) (string, bool), create bool) (string, error) {
	dir, err := dataDir(lookupEnv, "", create)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "agentmem.db"), nil
}

// dataDir returns agentmem's data directory, $XDG_DATA_HOME/agentmem or
// ~/.local/share/agentmem, or its subdirectory sub: where the default
// store lives and where commands put the files they write by themselves
// (backups), never the current directory. With create, a missing
// directory is made (0700).
func dataDir(lookupEnv func(string) (string, bool), sub string, create bool) (string, error) {
	dir, _ := lookupEnv("XDG_DATA_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, _ := lookupEnv("HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("no data directory (set --store, XDG_DATA_HOME or HOME): %w", err)
			}
			home = h
		}
		dir = filepath.Join(home, ".local", "share")
	}
	dir = filepath.Join(dir, "agentmem", sub)
	if !create {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the data directory: %w", err)
	}
	return dir, nil
}

// redactURL hides a password in a store URL for the log.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
