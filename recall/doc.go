// Package recall is agentmem's long-term recall index: documents (a text,
// an ID and string metadata) are indexed and searched by relevance to a
// query, with an optional metadata filter.
//
// The in-memory Index ranks with Okapi BM25 over analyzed tokens: text is
// lower-cased, split on anything that is not a Unicode letter or digit,
// English stop words are dropped and the rest is reduced with the Porter
// stemmer (see Tokenize and Stem). It needs no model and no network, and is
// safe for concurrent use.
//
// The package also evaluates retrieval on LoCoMo-format conversations
// (DecodeLoCoMo, Evaluate): every turn of a conversation is indexed with its
// speaker, its session's date and its image caption, and evidence
// recall@k is measured for every question, as the LoCoMo paper defines it.
package recall
