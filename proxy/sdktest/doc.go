// Package sdktest tests the proxy (package proxy) with the official Go
// SDKs of OpenAI (github.com/openai/openai-go) and Anthropic
// (github.com/anthropics/anthropic-sdk-go), unmodified. They are pointed
// at an agentmem server in front of a stand-in provider (package
// proxytest). It is a module of its own. So the SDKs, which only its tests
// use, stay out of the core module's dependencies.
package sdktest
