package tokenizer_test

import (
	"errors"
	"fmt"

	"github.com/agentmem/agentmem/tokenizer"
)

func Example() {
	c, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Name(), c.Count("hello world"))

	e, _ := tokenizer.GetEncoder(tokenizer.CL100kBase)
	ids := e.Encode("tiktoken is great!")
	fmt.Println(ids, e.Decode(ids))

	// Special-token markers are counted as the text they are.
	fmt.Println(e.Count("<|endoftext|>"))

	fmt.Println(tokenizer.NewHeuristic().Count("hello world"))

	_, err = tokenizer.Get("gpt2")
	fmt.Println(errors.Is(err, tokenizer.ErrUnknownEncoding))
	fmt.Println(err)
	// Output:
	// o200k_base 2
	// [83 1609 5963 374 2294 0] tiktoken is great!
	// 7
	// 3
	// true
	// tokenizer: unknown encoding "gpt2" (known: cl100k_base, heuristic, o200k_base)
}
