// Package compose holds what the memory patterns share: a block of text
// lines rendered as one system message that fits a token budget, the
// insertion of such blocks into a memory's rendered context, and the
// summary of a batch of steps with a configured agentmem.Summarizer.
package compose
