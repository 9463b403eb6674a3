// Package api holds the wire types of agentmem's HTTP API: the JSON bodies
// of its requests and answers, its error body and error codes, and its
// limits. The server (package server) encodes them and the Go client
// (package client) decodes them, so the two cannot drift apart, and a
// program that only talks to a server does not link the server's code.
//
// The package imports nothing of agentmem's domain (the core, the stores,
// recall, facts, the renderers): its types are plain structs that mirror
// the JSON of the domain's, and steps travel as their JSON text (see
// StepHeader). The server converts the domain's values to them, and so
// does the client's store adapter (package client/remote), each with the
// same conversions, whose tests check that a value encodes to the same
// bytes either way.
//
// The OpenAPI document the server serves at /v1/openapi.json describes
// the same shapes for clients in other languages.
package api
