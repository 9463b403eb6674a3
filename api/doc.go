// Package api holds the wire types of agentmem's HTTP API: the JSON bodies
// of its requests and answers, its error body and error codes, and its
// limits. The server (package server) encodes them and the Go client
// (package client) decodes them, so the two cannot drift apart, and a
// program that only talks to a server does not link the server's code.
//
// The OpenAPI document the server serves at /v1/openapi.json describes
// the same shapes for clients in other languages.
package api
