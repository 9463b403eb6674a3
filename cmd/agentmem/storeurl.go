package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
)

// storeFlagUsage is the usage of the --store flag every command that opens
// the store shares (serve, keys, inspect, export, import).
const storeFlagUsage = "the store `URL`: sqlite:///path.db, postgres://..., mem:// (default sqlite:// in the user's data directory)"

// resolveStoreURL returns the store URL a command opens: flagValue (from
// --store or AGENTMEM_STORE) when set, or else the default SQLite file of
// defaultStorePath.
func resolveStoreURL(a *app, flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	path, err := defaultStorePath(a.lookupEnv)
	if err != nil {
		return "", failure{err}
	}
	return "sqlite://" + (&url.URL{Path: path}).EscapedPath(), nil
}

// defaultStorePath returns the default SQLite file,
// $XDG_DATA_HOME/agentmem/agentmem.db or ~/.local/share/agentmem/agentmem.db,
// creating its directory (0700) if needed.
func defaultStorePath(lookupEnv func(string) (string, bool)) (string, error) {
	dir, _ := lookupEnv("XDG_DATA_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, _ := lookupEnv("HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("no data directory for the default store (set --store, XDG_DATA_HOME or HOME): %w", err)
			}
			home = h
		}
		dir = filepath.Join(home, ".local", "share")
	}
	dir = filepath.Join(dir, "agentmem")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the data directory: %w", err)
	}
	return filepath.Join(dir, "agentmem.db"), nil
}

// redactURL hides a password in a store URL for the log.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
