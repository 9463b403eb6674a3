package auth_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/agentmem/agentmem/auth"
)

// Create a key, then authenticate a request that carries it: the
// request's tenant is the key's.
func Example() {
	ctx := context.Background()
	keys := auth.NewKeys(auth.NewMemStore(), auth.KeysOptions{})
	token, key, err := keys.Create(ctx, "acme", "ci")
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.HasPrefix(token, "am_"+key.ID+"_"), len(token))

	a := auth.NewAuthenticator(keys, auth.AuthenticatorOptions{Require: true})
	r := httptest.NewRequest("GET", "/v1/sessions", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	id, err := a.Authenticate(r)
	fmt.Println(id.Tenant, err)

	// A handler confines the request to that tenant.
	ctx = auth.NewContext(ctx, id)
	fmt.Println(auth.TenantFrom(ctx))

	// Without a key: 401 material.
	_, err = a.Authenticate(httptest.NewRequest("GET", "/v1/sessions", nil))
	fmt.Println(err)
	// Output:
	// true 59
	// acme <nil>
	// acme
	// auth: an API key is required: send "Authorization: Bearer <key>" (create one with agentmem keys create --tenant T)
}
