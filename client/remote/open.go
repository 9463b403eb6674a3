package remote

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"

	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/store"
)

// APIKeyEnv is the environment variable store.Open reads the API key from
// when the URL has no api_key parameter.
const APIKeyEnv = "AGENTMEM_API_KEY"

func init() {
	store.Register("http", openURL)
	store.Register("https", openURL)
}

// openURL opens a Store for store.Open: the URL is the server's base URL
// with optional parameters api_key (else $AGENTMEM_API_KEY), tenant (see
// WithTenant) and retries (see client.WithRetries). Any other parameter
// is an error, so a misspelt one is not ignored.
func openURL(_ context.Context, u *url.URL) (store.Driver, error) {
	q := u.Query()
	base := *u
	base.RawQuery, base.ForceQuery = "", false
	var copts []client.Option
	var opts []Option
	key := os.Getenv(APIKeyEnv)
	for name, vs := range q {
		if len(vs) != 1 {
			return nil, fmt.Errorf("agentmem remote: open %s: parameter %q is given %d times", base.Redacted(), name, len(vs))
		}
		v := vs[0]
		switch name {
		case "api_key":
			key = v
		case "tenant":
			opts = append(opts, WithTenant(v))
		case "retries":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("agentmem remote: open %s: retries must be a non-negative integer, not %q", base.Redacted(), v)
			}
			copts = append(copts, client.WithRetries(n))
		default:
			return nil, fmt.Errorf("agentmem remote: open %s: unknown parameter %q (known: api_key, tenant, retries)", base.Redacted(), name)
		}
	}
	if key != "" {
		copts = append(copts, client.WithAPIKey(key))
	}
	// The damaged records of the client's searches go where a local
	// store's go.
	copts = append(copts, client.WithDamageHandler(ReportDamaged))
	c, err := client.New(base.String(), copts...)
	if err != nil {
		return nil, err
	}
	return NewDriver(c, opts...), nil
}
