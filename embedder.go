package agentmem

import "context"

// An Embedder turns texts into vectors whose cosine similarity measures
// how alike the texts are in meaning. MMR's similarity, the relevance of
// package facts and the vector search of package recall all take one. An
// *llm.Client is one (any OpenAI-compatible /v1/embeddings endpoint).
//
// Embed returns one vector per text, in order. EmbeddingModel names the
// model that computed them. Vectors of different models are not
// comparable, so a store of vectors records it and re-embeds those of
// another model (recall.Index.Reembed).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	EmbeddingModel() string
}
