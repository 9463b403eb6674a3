package auth_test

import (
	"testing"

	"github.com/agentmem/agentmem/auth"
	"github.com/agentmem/agentmem/auth/authtest"
)

func TestMemStoreConformance(t *testing.T) {
	authtest.Run(t, authtest.Config{New: func(*testing.T) auth.KeyStore { return auth.NewMemStore() }})
}
