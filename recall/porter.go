package recall

// Stem reduces an English word to its stem with the Porter stemming
// algorithm (M. F. Porter, "An algorithm for suffix stripping", 1980, in
// the form of the author's reference implementation). The word must be in
// lower case; words of two letters or less, and words with a byte outside
// a-z, are returned unchanged.
func Stem(word string) string {
	if len(word) <= 2 {
		return word
	}
	for i := 0; i < len(word); i++ {
		if word[i] < 'a' || word[i] > 'z' {
			return word
		}
	}
	w := []byte(word)
	w = step1a(w)
	w = step1b(w)
	w = step1c(w)
	w = step2(w)
	w = step3(w)
	w = step4(w)
	w = step5(w)
	return string(w)
}

// cons reports whether w[i] is a consonant: not a, e, i, o or u, and not a
// y that follows a consonant.
func cons(w []byte, i int) bool {
	switch w[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !cons(w, i-1)
	}
	return true
}

// measure is m, the number of vowel-consonant sequences in w, seen as
// [C](VC){m}[V].
func measure(w []byte) int {
	n, i := 0, 0
	for i < len(w) && cons(w, i) {
		i++
	}
	for i < len(w) {
		for i < len(w) && !cons(w, i) {
			i++
		}
		if i == len(w) {
			break
		}
		for i < len(w) && cons(w, i) {
			i++
		}
		n++
	}
	return n
}

// hasVowel reports whether w contains a vowel.
func hasVowel(w []byte) bool {
	for i := range w {
		if !cons(w, i) {
			return true
		}
	}
	return false
}

// doubleCons reports whether w ends with a double consonant.
func doubleCons(w []byte) bool {
	n := len(w)
	return n >= 2 && w[n-1] == w[n-2] && cons(w, n-1)
}

// cvc reports whether w ends consonant-vowel-consonant, the last not w, x
// or y (as in hop, not in snow).
func cvc(w []byte) bool {
	n := len(w)
	if n < 3 || !cons(w, n-1) || cons(w, n-2) || !cons(w, n-3) {
		return false
	}
	c := w[n-1]
	return c != 'w' && c != 'x' && c != 'y'
}

func hasSuffix(w []byte, s string) bool {
	return len(w) >= len(s) && string(w[len(w)-len(s):]) == s
}

// replace swaps suffix for repl.
func replace(w []byte, suffix, repl string) []byte {
	return append(w[:len(w)-len(suffix)], repl...)
}

func step1a(w []byte) []byte {
	switch {
	case hasSuffix(w, "sses"):
		return replace(w, "sses", "ss")
	case hasSuffix(w, "ies"):
		return replace(w, "ies", "i")
	case hasSuffix(w, "ss"):
		return w
	case hasSuffix(w, "s"):
		return w[:len(w)-1]
	}
	return w
}

func step1b(w []byte) []byte {
	if hasSuffix(w, "eed") {
		if measure(w[:len(w)-3]) > 0 {
			return w[:len(w)-1]
		}
		return w
	}
	var stem []byte
	switch {
	case hasSuffix(w, "ed") && hasVowel(w[:len(w)-2]):
		stem = w[:len(w)-2]
	case hasSuffix(w, "ing") && hasVowel(w[:len(w)-3]):
		stem = w[:len(w)-3]
	default:
		return w
	}
	switch {
	case hasSuffix(stem, "at"), hasSuffix(stem, "bl"), hasSuffix(stem, "iz"):
		return append(stem, 'e')
	case doubleCons(stem):
		switch stem[len(stem)-1] {
		case 'l', 's', 'z':
			return stem
		}
		return stem[:len(stem)-1]
	case measure(stem) == 1 && cvc(stem):
		return append(stem, 'e')
	}
	return stem
}

func step1c(w []byte) []byte {
	if hasSuffix(w, "y") && hasVowel(w[:len(w)-1]) {
		w[len(w)-1] = 'i'
	}
	return w
}

// rule is a suffix and its replacement.
type rule struct{ suffix, repl string }

// applyRules replaces the longest suffix of w among rules by its
// replacement if the stem's measure is above min; when the longest suffix
// does not qualify, w is left alone.
func applyRules(w []byte, rules []rule, min int) []byte {
	best := -1
	for i, r := range rules {
		if hasSuffix(w, r.suffix) && (best < 0 || len(r.suffix) > len(rules[best].suffix)) {
			best = i
		}
	}
	if best < 0 {
		return w
	}
	r := rules[best]
	if measure(w[:len(w)-len(r.suffix)]) > min {
		return replace(w, r.suffix, r.repl)
	}
	return w
}

var step2Rules = []rule{
	{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"},
	{"izer", "ize"}, {"bli", "ble"}, {"alli", "al"}, {"entli", "ent"},
	{"eli", "e"}, {"ousli", "ous"}, {"ization", "ize"}, {"ation", "ate"},
	{"ator", "ate"}, {"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"},
	{"ousness", "ous"}, {"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"},
	{"logi", "log"},
}

func step2(w []byte) []byte { return applyRules(w, step2Rules, 0) }

var step3Rules = []rule{
	{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"},
	{"ical", "ic"}, {"ful", ""}, {"ness", ""},
}

func step3(w []byte) []byte { return applyRules(w, step3Rules, 0) }

var step4Suffixes = []string{
	"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment",
	"ent", "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
}

func step4(w []byte) []byte {
	best := ""
	for _, s := range step4Suffixes {
		if hasSuffix(w, s) && len(s) > len(best) {
			best = s
		}
	}
	if best == "" {
		return w
	}
	stem := w[:len(w)-len(best)]
	if best == "ion" && !(hasSuffix(stem, "s") || hasSuffix(stem, "t")) {
		return w
	}
	if measure(stem) > 1 {
		return stem
	}
	return w
}

func step5(w []byte) []byte {
	if hasSuffix(w, "e") {
		stem := w[:len(w)-1]
		if m := measure(stem); m > 1 || m == 1 && !cvc(stem) {
			w = stem
		}
	}
	if hasSuffix(w, "ll") && measure(w) > 1 {
		w = w[:len(w)-1]
	}
	return w
}
