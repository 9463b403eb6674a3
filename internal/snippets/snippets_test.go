package snippets

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/testenv"
)

// TestSnippets runs the code blocks of README.md and docs/*.md as a
// reader would, each file against a server of its own, and compares what
// they print with the output blocks that follow them. The conventions are
// in the package documentation and docs/testing.md ("Snippets").
//
// Each file's blocks run in order, in a new temporary directory (never the
// repository), with HOME there too, so that `agentmem serve` with no flags
// keeps its data in a fresh SQLite file. Before they run:
//
//   - `go run ./cmd/agentmem` (and any `go run ./PATH` of the repository)
//     becomes the binary the test built from it, first on PATH;
//   - `localhost:8080` and `127.0.0.1:8080` become the address of the
//     file's server, which listens on a free loopback port; in the output
//     printed, that address reads as 127.0.0.1:8080 again, and the HOME
//     directory as ~.
//
// A file with runnable blocks and no server block gets `agentmem serve`
// started before its first block.
func TestSnippets(t *testing.T) {
	root := repoRoot(t)
	files := docFiles(t, root)
	byFile := map[string][]*Block{}
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := Parse(f, src)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, err := range Check(blocks) {
			t.Error(err)
		}
		byFile[f] = blocks
	}
	if t.Failed() {
		return
	}

	testenv.Program(t, "bash", "install bash")
	testenv.Program(t, "curl", "install curl (Debian: apt-get install curl)")
	r := &runner{root: root, bin: t.TempDir()}
	r.build(t, byFile)
	var ran, shown int
	for _, f := range files {
		for _, b := range byFile[f] {
			switch {
			case b.Runnable():
				ran++
			case b.Has(Illustrative):
				shown++
			}
		}
	}
	t.Logf("%d files: %d blocks run, %d illustrative", len(files), ran, shown)
	for _, f := range files {
		blocks := byFile[f]
		if !anyRunnable(blocks) {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			r.runFile(t, blocks)
		})
	}
}

func anyRunnable(blocks []*Block) bool {
	for _, b := range blocks {
		if b.Runnable() {
			return true
		}
	}
	return false
}

// repoRoot is the directory of the module's go.mod, above this package.
func repoRoot(t *testing.T) string {
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the package directory")
		}
		dir = parent
	}
}

// docFiles returns README.md and docs/*.md, relative to root.
func docFiles(t *testing.T, root string) []string {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}
	sort.Strings(files[1:])
	return files
}

// A runner holds what every file shares: the repository and the binaries
// built from it.
type runner struct {
	root   string
	bin    string            // the built binaries, first on the snippets' PATH
	goEnv  map[string]string // the go command's cache and module settings
	goRuns map[string]string // "./cmd/agentmem" -> the binary's name
}

var goRunRE = regexp.MustCompile(`go run (\./[A-Za-z0-9_./-]+)`)

// build builds agentmem and every other program of the repository that a
// runnable block runs with `go run ./PATH`, in one go build, and finds the
// real python3 (not a version manager's shim, which needs the HOME the
// snippets do not have).
func (r *runner) build(t *testing.T, byFile map[string][]*Block) {
	testenv.Program(t, "go", "install Go")
	pkgs := map[string]bool{"./cmd/agentmem": true}
	for _, blocks := range byFile {
		for _, b := range blocks {
			if b.Runnable() && b.Lang != "go" {
				for _, m := range goRunRE.FindAllStringSubmatch(b.Text, -1) {
					pkgs[strings.TrimSuffix(m[1], "/")] = true
				}
			}
		}
	}
	r.goRuns = map[string]string{}
	args := []string{"build", "-o", r.bin + string(filepath.Separator)}
	for p := range pkgs {
		r.goRuns[p] = filepath.Base(p)
		args = append(args, p)
	}
	sort.Strings(args[3:])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = r.root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	goVars := []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOFLAGS", "GOSUMDB", "GONOSUMDB", "GONOPROXY", "GOPRIVATE", "GOINSECURE"}
	out, err := exec.Command("go", append([]string{"env"}, goVars...)...).Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	r.goEnv = map[string]string{}
	for i, name := range goVars {
		if v := strings.Split(string(out), "\n"); i < len(v) {
			r.goEnv[name] = v[i]
		}
	}
	if py, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output(); err == nil {
		if err := os.Symlink(strings.TrimSpace(string(py)), filepath.Join(r.bin, "python3")); err != nil {
			t.Fatal(err)
		}
	}
}

// A fileRun is the state of one file's blocks: its directories, its
// server and its Python interpreter.
type fileRun struct {
	r               *runner
	home, work, tmp string
	addr            string // the server's host:port, once it runs
	server          *exec.Cmd
	serverDone      chan error
	serverLog       *syncBuffer
	python          *pythonSession
	hasServerBlock  bool
}

func (r *runner) runFile(t *testing.T, blocks []*Block) {
	dir := t.TempDir()
	fr := &fileRun{r: r, home: filepath.Join(dir, "home"), work: filepath.Join(dir, "work"), tmp: filepath.Join(dir, "tmp")}
	for _, d := range []string{fr.home, fr.work, fr.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(fr.stop)
	for _, b := range blocks {
		if b.Has(Server) && b.Runnable() {
			fr.hasServerBlock = true
		}
	}
	for _, b := range blocks {
		if !b.Runnable() {
			continue
		}
		// A block whose program failed leaves the file's state unknown,
		// so the later blocks are not run; one whose output differs from
		// the output shown does not.
		ran := false
		t.Run(fmt.Sprintf("L%d_%s", b.Line, b.Lang), func(t *testing.T) { ran = fr.run(t, b) })
		if !ran {
			t.Logf("%s did not run: the file's later blocks are not run", b)
			return
		}
	}
	fr.stopServer(t)
}

// run runs one block and compares its output; it reports whether the
// block ran (or was skipped) as opposed to failing.
func (fr *fileRun) run(t *testing.T, b *Block) (ran bool) {
	defer func() {
		if t.Skipped() {
			ran = true
		}
	}()
	if fr.server == nil && !fr.hasServerBlock && !b.Has(Server) {
		fr.startServer(t, "agentmem serve")
	}
	src := fr.rewrite(b.Text)
	var out string
	switch {
	case b.Has(Server):
		fr.startServer(t, src)
		return true
	case b.IsShell():
		out = fr.runShell(t, b, src)
	case b.Lang == "python":
		out = fr.runPython(t, b, src)
	case b.Lang == "go":
		out = fr.runGo(t, b, src)
	default:
		t.Fatalf("%s: no way to run %s", b, b.Lang)
	}
	out = fr.unrewrite(out)
	t.Logf("%s printed:\n%s", b, out)
	if b.Output != nil {
		if err := Compare(b.Output, out); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
	return true
}

// rewrite makes a block's source run here: `go run ./PATH` becomes the
// binary built from it, and the documented address the server's.
func (fr *fileRun) rewrite(src string) string {
	src = goRunRE.ReplaceAllStringFunc(src, func(m string) string {
		p := strings.TrimSuffix(strings.TrimPrefix(m, "go run "), "/")
		if name, ok := fr.r.goRuns[p]; ok {
			return name
		}
		return m
	})
	if fr.addr != "" {
		src = strings.NewReplacer("localhost:8080", fr.addr, "127.0.0.1:8080", fr.addr).Replace(src)
	}
	return src
}

// unrewrite turns the output of a block back into what a reader would
// see: the server's address as the documented one, the HOME directory
// as ~.
func (fr *fileRun) unrewrite(out string) string {
	if fr.addr != "" {
		out = strings.ReplaceAll(out, fr.addr, "127.0.0.1:8080")
	}
	return strings.ReplaceAll(out, fr.home, "~")
}

// env is the environment of every command a block runs: nothing of the
// test's own but PATH and the go command's caches, so that a block sees
// what a reader's fresh shell would.
func (fr *fileRun) env() []string {
	env := []string{
		"PATH=" + fr.r.bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + fr.home,
		"TMPDIR=" + fr.tmp,
		"LANG=C.UTF-8",
		"TZ=UTC",
		"TERM=dumb",
		"GOTOOLCHAIN=local",
		"PYTHONPATH=" + filepath.Join(fr.r.root, "clients", "python"),
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONUNBUFFERED=1",
	}
	for k, v := range fr.r.goEnv {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	if fr.addr != "" {
		env = append(env, "AGENTMEM_URL=http://"+fr.addr)
	}
	return env
}

var endpointsRE = regexp.MustCompile(`msg=endpoints api=https?://([^/\s]+)/v1`)

// startServer runs command (a block's, or the default) in the background
// on a free loopback port and waits until it logs its endpoints.
func (fr *fileRun) startServer(t *testing.T, command string) {
	fr.stopServer(t)
	command = stripComments(command)
	ctx := context.Background()
	cmd := exec.CommandContext(ctx, "bash", "-c", "exec "+strings.TrimSpace(command))
	cmd.Dir = fr.work
	cmd.Env = append(fr.env(), "AGENTMEM_ADDR=127.0.0.1:0")
	log := &syncBuffer{}
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(log, pw)
	cmd.Stdout = log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %q: %v", command, err)
	}
	fr.server, fr.serverLog, fr.serverDone = cmd, log, make(chan error, 1)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := endpointsRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		io.Copy(io.Discard, pr)
	}()
	go func() { err := cmd.Wait(); pw.Close(); fr.serverDone <- err }()
	select {
	case fr.addr = <-found:
	case err := <-fr.serverDone:
		fr.server = nil
		t.Fatalf("%q exited before it served (%v):\n%s", command, err, log.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("%q logged no endpoints within 60s:\n%s", command, log.String())
	}
}

// stopServer stops the file's server, if it runs, as Ctrl-C would, and
// checks that it shut down cleanly.
func (fr *fileRun) stopServer(t *testing.T) {
	if fr.server == nil {
		return
	}
	cmd := fr.server
	fr.server, fr.addr = nil, ""
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-fr.serverDone:
		if err != nil && t != nil {
			t.Errorf("the server exited with %v:\n%s", err, fr.serverLog.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-fr.serverDone
		if t != nil {
			t.Errorf("the server did not stop within 30s of SIGINT:\n%s", fr.serverLog.String())
		}
	}
}

func (fr *fileRun) stop() {
	if fr.python != nil {
		fr.python.close()
	}
	fr.stopServer(nil)
}

// stripComments removes a shell block's comment lines and trailing
// comments, for the one command of a server block.
func stripComments(src string) string {
	var out []string
	for _, line := range strings.Split(src, "\n") {
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func (fr *fileRun) runShell(t *testing.T, b *Block, src string) string {
	path := filepath.Join(fr.tmp, fmt.Sprintf("L%d.sh", b.Line))
	if err := os.WriteFile(path, []byte("set -eo pipefail\n"+src), 0o644); err != nil {
		t.Fatal(err)
	}
	return fr.command(t, b, time.Minute, "bash", path)
}

// command runs a program of a block in the file's work directory and
// returns its standard output; it fails the test when the program fails.
func (fr *fileRun) command(t *testing.T, b *Block, timeout time.Duration, name string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = fr.work
	cmd.Env = fr.env()
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n--- stdout\n%s--- stderr\n%s", b, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// runGo builds a go block as a program of its own module, which requires
// this repository's module through a replace directive, and runs it.
func (fr *fileRun) runGo(t *testing.T, b *Block, src string) string {
	dir := filepath.Join(fr.tmp, fmt.Sprintf("go%d", b.Line))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	goMod := fmt.Sprintf("module snippet\n\ngo 1.26\n\nrequire github.com/agentmem/agentmem v0.0.0-00010101000000-000000000000\n\nreplace github.com/agentmem/agentmem => %s\n", fr.r.root)
	sum, err := os.ReadFile(filepath.Join(fr.r.root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": []byte(goMod), "go.sum": sum, "main.go": []byte(src)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(fr.tmp, fmt.Sprintf("snippet%d", b.Line))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-mod=mod", "-o", exe, ".")
	cmd.Dir = dir
	cmd.Env = fr.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: go build: %v\n%s", b, err, out)
	}
	return fr.command(t, b, time.Minute, exe)
}

// runPython runs a python block in the file's interpreter, started with
// the file's first python block: later blocks see what earlier ones
// defined, as in a tutorial read from the top.
func (fr *fileRun) runPython(t *testing.T, b *Block, src string) string {
	testenv.Program(t, "python3", "install Python 3.9 or later (Debian: apt-get install python3)")
	if fr.python == nil {
		p, err := startPython(fr)
		if err != nil {
			t.Fatal(err)
		}
		fr.python = p
	}
	// The block's lines keep their numbers in the page, for tracebacks.
	path := filepath.Join(fr.tmp, fmt.Sprintf("L%d.py", b.Line))
	if err := os.WriteFile(path, []byte(strings.Repeat("\n", b.Line)+src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, ok, err := fr.python.run(path, b.File, time.Minute)
	if err == nil && !ok {
		err = fmt.Errorf("the block raised an exception")
	}
	if err != nil {
		t.Fatalf("%s: %v\n--- stdout\n%s--- stderr\n%s", b, err, out, errOut)
	}
	return out
}

// pythonDriver executes the files named on its standard input, one per
// line ("PATH\tNAME"), in one namespace, and ends each one's output with
// a marker line and its status.
const pythonDriver = `import sys, traceback
marker = sys.argv[1]
namespace = {"__name__": "__main__"}
for line in sys.stdin:
    path, name = line.rstrip("\n").split("\t", 1)
    status = 0
    try:
        with open(path, encoding="utf-8") as f:
            code = compile(f.read(), name, "exec")
        exec(code, namespace)
    except SystemExit as e:
        status = 0 if e.code in (None, 0) else 1
    except BaseException:
        traceback.print_exc()
        status = 1
    sys.stdout.flush()
    sys.stderr.write(marker + "\n")
    sys.stderr.flush()
    sys.stdout.write(marker + " %d\n" % status)
    sys.stdout.flush()
`

type pythonSession struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *bufio.Reader
	marker string
}

func startPython(fr *fileRun) (*pythonSession, error) {
	driver := filepath.Join(fr.tmp, "driver.py")
	if err := os.WriteFile(driver, []byte(pythonDriver), 0o644); err != nil {
		return nil, err
	}
	marker := fmt.Sprintf("--snippet-done-%d--", time.Now().UnixNano())
	cmd := exec.Command("python3", driver, marker)
	cmd.Dir = fr.work
	cmd.Env = fr.env()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &pythonSession{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout), stderr: bufio.NewReader(stderr), marker: marker}, nil
}

// run executes one file and returns its standard output and error, and
// whether it ran without an exception.
func (p *pythonSession) run(path, name string, timeout time.Duration) (stdout, stderr string, ok bool, err error) {
	if _, err := fmt.Fprintf(p.stdin, "%s\t%s\n", path, name); err != nil {
		return "", "", false, err
	}
	type result struct {
		text string
		err  error
	}
	readTo := func(r *bufio.Reader, ch chan<- result) {
		var buf strings.Builder
		for {
			line, err := r.ReadString('\n')
			if i := strings.Index(line, p.marker); i >= 0 {
				buf.WriteString(line[:i])
				ch <- result{buf.String() + "\x00" + strings.TrimSpace(line[i+len(p.marker):]), nil}
				return
			}
			buf.WriteString(line)
			if err != nil {
				ch <- result{buf.String(), fmt.Errorf("python3 ended: %v", err)}
				return
			}
		}
	}
	outc, errc := make(chan result, 1), make(chan result, 1)
	go readTo(p.stdout, outc)
	go readTo(p.stderr, errc)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var o, e result
	for n := 0; n < 2; n++ {
		select {
		case o = <-outc:
		case e = <-errc:
		case <-timer.C:
			p.cmd.Process.Kill()
			return "", "", false, fmt.Errorf("python3 ran for more than %v", timeout)
		}
	}
	if o.err != nil {
		return o.text, e.text, false, o.err
	}
	text, status, _ := strings.Cut(o.text, "\x00")
	errText, _, _ := strings.Cut(e.text, "\x00")
	return text, errText, status == "0", nil
}

func (p *pythonSession) close() {
	p.stdin.Close()
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
