// Package summarize provides the two agentmem.Summarizer implementations.
// LLM asks any OpenAI-compatible chat-completions endpoint (OpenAI,
// Ollama, vLLM, llama.cpp server) for a summary. Extractive needs no
// model: it builds a bounded digest of what the agent did from the steps
// themselves.
//
// Either plugs into the memory's summarization strategy:
//
//	sum := summarize.NewLLM(client, summarize.LLMOptions{})
//	mem := agentmem.New(agentmem.Options{Policy: &agentmem.Policy{
//		MaxTokens: 100_000,
//		Strategy:  agentmem.Summarize(sum, agentmem.SummarizeOptions{KeepRecent: 8}),
//	}})
package summarize
