// Command standin runs the stand-in provider of package proxytest on a
// free loopback port. It serves tests in other languages, such as the
// TypeScript client's proxy tests. They point a real OpenAI or Anthropic
// client at an agentmem server in front of it. It prints its base URL on
// the first line of its output and serves until it is killed.
//
// Besides the two APIs (POST /v1/chat/completions, POST /v1/messages) it
// serves POST /_proxytest/check and GET /_proxytest/replies. The first
// checks every request received (proxytest.Check): the budget counted with
// the exact tokenizer, the system prompt and first task kept, every tool
// call answered. The second returns what it answered.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentmem/agentmem/proxy/proxytest"
)

func main() {
	u := proxytest.New()
	defer u.Close()
	fmt.Println(u.URL)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
}
