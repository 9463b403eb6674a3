// Package compose holds what the memory patterns share. A block of text
// lines is rendered as one system message that fits a token budget, and
// such blocks are inserted into a memory's rendered context. A batch of
// steps is summarized with a configured agentmem.Summarizer.
package compose
