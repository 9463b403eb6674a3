package server

import (
	_ "embed"
	"net/http"
	"strconv"
)

// openAPIDocument is the OpenAPI 3 document of the API, served at
// /v1/openapi.json. A test checks that it describes exactly the routes
// the server registers.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPI returns the OpenAPI 3 document of the API (JSON). The slice is
// the caller's.
func OpenAPI() []byte { return append([]byte(nil), openAPIDocument...) }

// serveOpenAPI serves GET /v1/openapi.json.
func (s *Server) serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(openAPIDocument)))
	_, _ = w.Write(openAPIDocument)
}
