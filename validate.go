package agentmem

import "unicode/utf8"

// validText refuses text that is not valid UTF-8: it cannot be sent to a
// model API as JSON without silent corruption.
func validText(field, s string) error {
	if !utf8.ValidString(s) {
		return invalidf(field, "is not valid UTF-8")
	}
	return nil
}
