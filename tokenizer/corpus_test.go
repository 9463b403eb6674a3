package tokenizer

import (
	"fmt"
	"strings"
	"sync"
)

// The test corpus: about 1 MiB of mixed text (prose in several scripts,
// JSON, Go source, stack traces, logs) generated from a fixed seed with a
// self-contained PRNG, so it is the same on every Go version and machine.
// testdata/golden_tiktoken.json holds the token IDs that OpenAI's tiktoken
// gives for it; changing the generator means regenerating that file (see
// TestGoldenTiktoken).

const corpusSeed = 0x61676e746d656d // "agntmem"

const corpusSize = 1 << 20

var corpusOnce = sync.OnceValue(func() []string { return genCorpus(corpusSeed, corpusSize) })

// corpusDocs returns the corpus as documents of a few kB each.
func corpusDocs() []string { return corpusOnce() }

// corpusText returns the corpus as one text.
func corpusText() string { return strings.Join(corpusDocs(), "\n\n") }

// rng is splitmix64.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

func pick[T any](r *rng, xs []T) T { return xs[r.intn(len(xs))] }

func genCorpus(seed uint64, size int) []string {
	r := &rng{s: seed}
	gens := []func(*rng) string{genProse, genProse, genJSON, genGo, genStack, genLog}
	var docs []string
	total := 0
	for total < size {
		d := pick(r, gens)(r)
		docs = append(docs, d)
		total += len(d) + 2
	}
	return docs
}

var words = strings.Fields(`the of and to in is that it was for on are as with his they
at be this from have or by one had not but what all were when we there can an your
which their said if do will each about how up out them then she many some so these
would other into has more her two like him see time could no make than first been its
who now people my made over did down only way find use may water long little very after
words called just where most know get through back much before go good new write our
used me man too any day same right look think also around another came come work three
word must because does part even place well such here take why things help put years
different away again off went old number memory agent context token budget retrieval
embedding vector summary episode conversation assistant tool result error retry cache
latency throughput deterministic concurrency goroutine channel mutex deadline`)

var foreign = []string{
	"naïve café", "Größe", "façade", "smörgåsbord", "jalapeño", "Ærøskøbing",
	"Привет, мир", "Съешь же ещё этих мягких французских булок",
	"こんにちは世界", "東京都は日本の首都です", "カタカナ", "你好，世界", "机器学习模型",
	"안녕하세요", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก",
	"Γειά σου Κόσμε", "Ελληνικά", "🙂", "👩‍💻", "🇫🇷", "❤️", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "e\u0301",
	"don't", "I'LL", "we've", "it's", "THEY'RE", "you'd", "O'Neil", "Ｆｕｌｌｗｉｄｔｈ",
}

func genSentence(r *rng) string {
	var b strings.Builder
	n := 4 + r.intn(18)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		var w string
		switch x := r.intn(40); {
		case x == 0:
			w = fmt.Sprint(r.intn(100000))
		case x == 1:
			w = fmt.Sprintf("%d.%02d", r.intn(1000), r.intn(100))
		case x == 2:
			w = fmt.Sprintf("%04d-%02d-%02d", 1990+r.intn(40), 1+r.intn(12), 1+r.intn(28))
		case x < 6:
			w = pick(r, foreign)
		case x == 6:
			w = "(" + pick(r, words) + ")"
		case x == 7:
			w = "\"" + pick(r, words) + "\""
		case x == 8:
			w = strings.ToUpper(pick(r, words))
		default:
			w = pick(r, words)
		}
		if i == 0 && len(w) > 0 && w[0] >= 'a' && w[0] <= 'z' {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		b.WriteString(w)
		if i < n-1 && r.intn(12) == 0 {
			b.WriteString(pick(r, []string{",", ";", ":", " —", "..."}))
		}
	}
	b.WriteString(pick(r, []string{".", ".", ".", "!", "?", "?!", "…"}))
	return b.String()
}

func genProse(r *rng) string {
	var b strings.Builder
	for p := 1 + r.intn(6); p > 0; p-- {
		if r.intn(5) == 0 {
			b.WriteString(pick(r, []string{"# ", "## ", "- ", "* ", "> ", "1. "}))
		}
		for s := 1 + r.intn(7); s > 0; s-- {
			b.WriteString(genSentence(r))
			b.WriteString(pick(r, []string{" ", " ", " ", "  ", "\n"}))
		}
		b.WriteString(pick(r, []string{"\n\n", "\n\n", "\n", "\r\n\r\n", "\n\n\n", "   \n\n"}))
	}
	return b.String()
}

func genJSONValue(r *rng, depth int) string {
	switch x := r.intn(10); {
	case depth < 3 && x == 0:
		var items []string
		for i := r.intn(5); i > 0; i-- {
			items = append(items, genJSONValue(r, depth+1))
		}
		return "[" + strings.Join(items, ", ") + "]"
	case depth < 3 && x == 1:
		return genJSONObject(r, depth+1)
	case x == 2:
		return fmt.Sprint(r.intn(1 << 20))
	case x == 3:
		return fmt.Sprintf("%d.%d", r.intn(100), r.intn(1000000))
	case x == 4:
		return pick(r, []string{"true", "false", "null"})
	case x == 5:
		return fmt.Sprintf("\"%08x-%04x-%04x-%04x-%012x\"", r.next()&0xffffffff, r.intn(1<<16), r.intn(1<<16), r.intn(1<<16), r.next()&0xffffffffffff)
	default:
		return fmt.Sprintf("%q", genSentence(r))
	}
}

func genJSONObject(r *rng, depth int) string {
	keys := []string{"id", "role", "content", "name", "type", "created_at", "tokens",
		"score", "tags", "metadata", "tool_call_id", "arguments", "embedding", "session", "userId"}
	indent := strings.Repeat("  ", depth+1)
	var b strings.Builder
	b.WriteString("{\n")
	n := 1 + r.intn(6)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%s%q: %s", indent, pick(r, keys), genJSONValue(r, depth))
		if i < n-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString(strings.Repeat("  ", depth) + "}")
	return b.String()
}

func genJSON(r *rng) string {
	if r.intn(3) == 0 { // compact, as in a tool result
		s := genJSONObject(r, 0)
		s = strings.ReplaceAll(s, "\n", "")
		for strings.Contains(s, "  ") {
			s = strings.ReplaceAll(s, "  ", "")
		}
		return s
	}
	return genJSONObject(r, 0)
}

func genIdent(r *rng) string {
	a := pick(r, words)
	b := pick(r, words)
	if r.intn(2) == 0 {
		return a + strings.ToUpper(b[:1]) + b[1:]
	}
	return a + "_" + b
}

func genGo(r *rng) string {
	var b strings.Builder
	fmt.Fprintf(&b, "// %s returns the %s of the %s.\n", genIdent(r), pick(r, words), pick(r, words))
	fmt.Fprintf(&b, "func (s *%s) %s(ctx context.Context, n int, opts ...Option) (map[string][]byte, error) {\n",
		strings.ToUpper(genIdent(r)[:1])+"tore", genIdent(r))
	for i := 2 + r.intn(10); i > 0; i-- {
		switch r.intn(6) {
		case 0:
			fmt.Fprintf(&b, "\tif err := s.%s(ctx, %d); err != nil {\n\t\treturn nil, fmt.Errorf(\"%s: %%w\", err)\n\t}\n",
				genIdent(r), r.intn(1000), pick(r, words))
		case 1:
			fmt.Fprintf(&b, "\tfor i := 0; i < len(%s); i++ {\n\t\t%s[i] += 0x%x\n\t}\n", genIdent(r), genIdent(r), r.intn(1<<16))
		case 2:
			fmt.Fprintf(&b, "\t%s := make(chan struct{}, %d) // %s\n", genIdent(r), r.intn(64), genSentence(r))
		case 3:
			fmt.Fprintf(&b, "\tswitch x := %s.(type) {\n\tcase *%s:\n\t\treturn x.m, nil\n\tdefault:\n\t}\n", genIdent(r), genIdent(r))
		case 4:
			fmt.Fprintf(&b, "\ts.mu.Lock()\n\tdefer s.mu.Unlock()\n")
		default:
			fmt.Fprintf(&b, "\t%s, ok := s.cache[%q]\n\tif !ok && n >= %d || n != -1 {\n\t\treturn nil, errors.New(%q)\n\t}\n",
				genIdent(r), genIdent(r), r.intn(10), genSentence(r))
		}
	}
	b.WriteString("\treturn nil, nil\n}\n")
	return b.String()
}

func genStack(r *rng) string {
	var b strings.Builder
	switch r.intn(3) {
	case 0:
		fmt.Fprintf(&b, "panic: runtime error: index out of range [%d] with length %d\n\ngoroutine %d [running]:\n",
			r.intn(100), r.intn(100), 1+r.intn(5000))
		for i := 3 + r.intn(12); i > 0; i-- {
			fmt.Fprintf(&b, "github.com/agentmem/agentmem/%s.(*%s).%s(0xc%09x, {0x%x, 0x%x})\n\t/home/dev/src/agentmem/%s/%s.go:%d +0x%x\n",
				pick(r, words), genIdent(r), genIdent(r), r.next()&0xfffffffff, r.intn(1<<24), r.intn(256),
				pick(r, words), pick(r, words), 1+r.intn(2000), r.intn(4096))
		}
		b.WriteString("exit status 2\n")
	case 1:
		fmt.Fprintf(&b, "Exception in thread \"main\" java.lang.IllegalStateException: %s\n", genSentence(r))
		for i := 3 + r.intn(15); i > 0; i-- {
			fmt.Fprintf(&b, "\tat com.example.%s.%s.%s(%s.java:%d)\n", pick(r, words), genIdent(r), genIdent(r), genIdent(r), 1+r.intn(900))
		}
		fmt.Fprintf(&b, "\t... %d more\n", r.intn(40))
	default:
		b.WriteString("Traceback (most recent call last):\n")
		for i := 2 + r.intn(8); i > 0; i-- {
			fmt.Fprintf(&b, "  File \"/usr/lib/python3/%s/%s.py\", line %d, in %s\n    %s = %s(%s)\n",
				pick(r, words), genIdent(r), 1+r.intn(3000), genIdent(r), genIdent(r), genIdent(r), genIdent(r))
		}
		fmt.Fprintf(&b, "KeyError: '%s'\n", genIdent(r))
	}
	return b.String()
}

func genLog(r *rng) string {
	var b strings.Builder
	for i := 5 + r.intn(30); i > 0; i-- {
		fmt.Fprintf(&b, "2025-%02d-%02dT%02d:%02d:%02d.%06dZ %-5s [%s] %s latency_ms=%d status=%d path=/v1/%s/%d\n",
			1+r.intn(12), 1+r.intn(28), r.intn(24), r.intn(60), r.intn(60), r.intn(1000000),
			pick(r, []string{"INFO", "WARN", "ERROR", "DEBUG"}), genIdent(r), genSentence(r),
			r.intn(5000), pick(r, []int{200, 201, 204, 400, 404, 429, 500, 503}), pick(r, words), r.intn(1<<20))
	}
	if r.intn(4) == 0 {
		b.WriteString(strings.Repeat("=", 20+r.intn(200)) + "\n")
		b.WriteString(strings.Repeat(" ", r.intn(300)) + "|\t\t" + strings.Repeat("-", r.intn(300)) + "\n")
	}
	return b.String()
}
