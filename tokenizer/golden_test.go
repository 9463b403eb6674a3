package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// testdata/golden_tiktoken.json holds what OpenAI's tiktoken (its Rust core,
// through the npm package "tiktoken", encode_ordinary) gives for the test
// corpus and for goldenCases. To regenerate it after changing either, from
// the repository root:
//
//	TOKENIZER_GOLDEN_INPUT=/tmp/golden_input.json go test -run TestWriteGoldenInput ./tokenizer/
//	mkdir -p /tmp/oracle && cp tokenizer/testdata/gen_golden.mjs /tmp/oracle/
//	(cd /tmp/oracle && npm install tiktoken@1.0.22 >&2 && node gen_golden.mjs /tmp/golden_input.json) > tokenizer/testdata/golden_tiktoken.json

const goldenFile = "testdata/golden_tiktoken.json"

// goldenCases are edge cases, all valid UTF-8 (tiktoken takes only text).
var goldenCases = []string{
	"", " ", "  ", "\n", "\r\n", " \n ", "\n\n\n", "\t", " \t\n\r ",
	"hello world", "Hello World", "HELLO WORLD", "tiktoken is great!",
	"The quick brown fox jumps over the lazy dog.",
	"<|endoftext|>", "<|endofprompt|>", "<|fim_prefix|>x<|fim_suffix|>y<|fim_middle|>",
	"hi<|endoftext|>there", "<|endoftext",
	"I'LL we've THEY'RE don't it's O'Neil 's 'S",
	"   leading", "trailing   ", "tabs\t\tand\tspaces", "a  b   c    d",
	"a\u00a0b", "\u3000full width space", "x\u2028y\u2029z", "\u0085next line", "\u200bzero width",
	"12345678901", "3.14159", "-42", "1,000,000", "١٢٣٤٥", "ⅫⅣ", "²³",
	"e\u0301", "ä̸̢̛̗ḿ̈́", "👩‍💻🇫🇷❤️", "🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂",
	"日本語のテキスト、句読点。", "你好，世界！", "สวัสดีชาวโลก", "русский ТЕКСТ", "Ελληνικά", "مرحبا", "हिन्दी",
	"CamelCaseIdentifierHTTPServer", "snake_case_identifier", "ALLCAPSword", "xMLHttpRequest",
	"https://example.com/a/b?c=d&e=f#g", `C:\path\to\file.txt`, "x = y+z*(w-1)/2; // comment",
	"func main() {\n\tfmt.Println(\"hi\")\n}\n", "{\"a\": [1, 2.5, null, true]}",
	"\x00\x01\x02\x7f", "\ufffd", "\ufeffBOM", "\U0010ffff", "\uffff",
	strings.Repeat("=", 200), strings.Repeat("-", 1000), strings.Repeat(" ", 500) + "x",
	strings.Repeat("a", 300), strings.Repeat("1", 100), strings.Repeat("ab", 400), strings.Repeat("\n", 50),
	strings.Repeat("🙂", 300), strings.Repeat("日本", 200), strings.Repeat(" .", 300), strings.Repeat("\t ", 100) + "\n",
}

type goldenInput struct {
	CorpusSHA256 string   `json:"corpus_sha256"`
	Docs         []string `json:"docs"`
	Cases        []string `json:"cases"`
}

type goldenCase struct {
	Text string `json:"text"`
	IDs  []int  `json:"ids"`
}

type goldenEncoding struct {
	DocCounts []int        `json:"doc_counts"`
	DocHashes []string     `json:"doc_hashes"`
	Cases     []goldenCase `json:"cases"`
}

type golden struct {
	Generator    string                    `json:"generator"`
	CorpusSHA256 string                    `json:"corpus_sha256"`
	Encodings    map[string]goldenEncoding `json:"encodings"`
}

// idsHash is the first 16 hex digits of the SHA-256 of the IDs in decimal,
// comma-separated. gen_golden.mjs computes the same.
func idsHash(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	sum := sha256.Sum256([]byte(strings.Join(s, ",")))
	return hex.EncodeToString(sum[:8])
}

func corpusHash() string {
	sum := sha256.Sum256([]byte(strings.Join(corpusDocs(), "\x00")))
	return hex.EncodeToString(sum[:])
}

// TestWriteGoldenInput writes the input of gen_golden.mjs when
// TOKENIZER_GOLDEN_INPUT names a file.
func TestWriteGoldenInput(t *testing.T) {
	path := os.Getenv("TOKENIZER_GOLDEN_INPUT")
	if path == "" {
		t.Skip("TOKENIZER_GOLDEN_INPUT not set")
	}
	b, err := json.Marshal(goldenInput{CorpusSHA256: corpusHash(), Docs: corpusDocs(), Cases: goldenCases})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGoldenTiktoken checks every token ID against OpenAI's tiktoken.
func TestGoldenTiktoken(t *testing.T) {
	b, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if g.CorpusSHA256 != corpusHash() {
		t.Fatalf("%s was made from another corpus: regenerate it (see golden_test.go)", goldenFile)
	}
	docs := corpusDocs()
	for _, name := range []string{O200kBase, CL100kBase} {
		t.Run(name, func(t *testing.T) {
			enc, err := GetEncoder(name)
			if err != nil {
				t.Fatal(err)
			}
			ge, ok := g.Encodings[name]
			if !ok || len(ge.DocCounts) != len(docs) || len(ge.DocHashes) != len(docs) || len(ge.Cases) != len(goldenCases) {
				t.Fatalf("%s: missing or short entry for %s", goldenFile, name)
			}
			tokens := 0
			for i, d := range docs {
				ids := enc.Encode(d)
				tokens += len(ids)
				if len(ids) != ge.DocCounts[i] || idsHash(ids) != ge.DocHashes[i] {
					t.Errorf("doc %d (%.60q...): %d tokens (hash %s), tiktoken: %d (hash %s)",
						i, d, len(ids), idsHash(ids), ge.DocCounts[i], ge.DocHashes[i])
				}
			}
			for i, c := range ge.Cases {
				if c.Text != goldenCases[i] {
					t.Fatalf("case %d is %.40q in %s but %.40q in goldenCases: regenerate", i, c.Text, goldenFile, goldenCases[i])
				}
				if got := enc.Encode(c.Text); !slices.Equal(got, c.IDs) {
					t.Errorf("Encode(%.60q) = %v, tiktoken: %v", c.Text, got, c.IDs)
				}
			}
			t.Logf("%d docs, %d tokens, %d cases match tiktoken", len(docs), tokens, len(ge.Cases))
		})
	}
}
