// Command freeport prints a TCP port on 127.0.0.1 that is free right now.
//
// scripts/pg-start.sh uses it to pick the port of a throwaway PostgreSQL
// server. The kernel chooses the port; it stays free until someone binds it,
// so a caller that loses the race should pick again.
//
// Usage:
//
//	go run ./internal/testenv/cmd/freeport
package main

import (
	"fmt"
	"net"
	"os"
)

func main() {
	port, err := freePort()
	if err != nil {
		fmt.Fprintln(os.Stderr, "freeport:", err)
		os.Exit(1)
	}
	fmt.Println(port)
}

// freePort asks the kernel for an unused port on the IPv4 loopback address.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
