// Package authtest is the conformance suite every auth.KeyStore backend
// runs, so that the in-memory, SQLite and PostgreSQL key stores cannot
// drift apart. A backend's test calls Run once:
//
//	func TestConformance(t *testing.T) {
//		authtest.Run(t, authtest.Config{
//			New: func(t *testing.T) auth.KeyStore { ... },
//		})
//	}
//
// Each subtest gets a new, empty key store from Config.New.
package authtest
