package main

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/testenv"
)

// TestReleaseScript builds two targets with scripts/release.sh, the host's
// and another, checks their archives against SHA256SUMS, and runs the
// host's binary: it prints the stamped version and commit.
func TestReleaseScript(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles the binary twice")
	}
	for _, p := range []string{"bash", "git", "tar", "gzip", "zip", "sha256sum"} {
		testenv.Program(t, p, "scripts/test.sh installs what is missing in CI (apt-get install "+p+")")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout, so nothing to stamp: %v", err)
	}
	other := "windows/amd64"
	if runtime.GOOS == "windows" {
		other = "linux/arm64"
	}
	host := runtime.GOOS + "/" + runtime.GOARCH
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "release.sh"), "-o", out, "-t", host+" "+other, "v0.0.0-test.1")
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, b)
	}

	// SHA256SUMS names each archive with its hash.
	sums := map[string]string{}
	f, err := os.Open(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		sums[name] = sum
	}
	archive := func(target string) string {
		os, arch, _ := strings.Cut(target, "/")
		ext := ".tar.gz"
		if os == "windows" {
			ext = ".zip"
		}
		return "agentmem_0.0.0-test.1_" + os + "_" + arch + ext
	}
	for _, target := range []string{host, other} {
		name := archive(target)
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		if got := hex.EncodeToString(h[:]); sums[name] != got {
			t.Errorf("%s: SHA256SUMS says %q, the file hashes to %s", name, sums[name], got)
		}
	}
	if len(sums) != 2 {
		t.Errorf("SHA256SUMS names %d files, want the 2 archives: %v", len(sums), sums)
	}

	// The host's archive holds the binary and the license; the binary
	// reports the version and commit it was stamped with.
	dir := t.TempDir()
	files := untar(t, filepath.Join(out, archive(host)), dir)
	base := strings.TrimSuffix(archive(host), ".tar.gz") + "/"
	for _, want := range []string{"agentmem", "LICENSE", "NOTICE", "README.md"} {
		if !files[base+want] {
			t.Errorf("%s lacks %s: %v", archive(host), want, files)
		}
	}
	bin := filepath.Join(dir, base, "agentmem")
	for _, args := range [][]string{{"--version"}, {"version"}} {
		got, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("agentmem %v: %v", args, err)
		}
		want := "agentmem v0.0.0-test.1 (commit " + strings.TrimSpace(string(head))[:12]
		if !strings.HasPrefix(string(got), want) || !strings.Contains(string(got), ", built ") {
			t.Errorf("agentmem %v printed %q, want it to start %q and name the build date", args, got, want)
		}
	}

	// The other target's archive holds its executable.
	if other == "windows/amd64" {
		z, err := zip.OpenReader(filepath.Join(out, archive(other)))
		if err != nil {
			t.Fatal(err)
		}
		defer z.Close()
		exe := strings.TrimSuffix(archive(other), ".zip") + "/agentmem.exe"
		r, err := z.Open(exe)
		if err != nil {
			t.Fatalf("%s: %v", archive(other), err)
		}
		magic := make([]byte, 2)
		if _, err := io.ReadFull(r, magic); err != nil || string(magic) != "MZ" {
			t.Errorf("%s is not a Windows executable (%q, %v)", exe, magic, err)
		}
		r.Close()
	}
}

// untar extracts a .tar.gz into dir and returns the names it held.
func untar(t *testing.T, path, dir string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names[h.Name] = true
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, os.FileMode(h.Mode)&0o777); err != nil {
				t.Fatal(err)
			}
		}
	}
}
