// Package suggest finds the words close to a mistyped one, for the "did you mean" of an error
// message: a channel, a name, a role, a configuration key or a COTAL_ variable. It is one rule
// for every such guess, so a typo is caught the same way wherever it is made.
package suggest

import (
	"cmp"
	"slices"
	"strings"
)

// DidYouMean ends an error message with its guesses: "; did you mean a or b?", or nothing.
func DidYouMean(guesses []string) string {
	if len(guesses) == 0 {
		return ""
	}
	return "; did you mean " + strings.Join(guesses, " or ") + "?"
}

// Close returns the candidates within a small edit distance of word, case-insensitive,
// closest first, at most three: the "did you mean" of a mistyped channel or name.
func Close(word string, candidates []string) []string {
	w := strings.ToLower(word)
	limit := 1
	if len(w) >= 4 {
		limit = min(3, max(2, len(w)/3))
	}
	type match struct {
		s string
		d int
	}
	var found []match
	seen := map[string]bool{}
	for _, c := range candidates {
		if seen[c] || c == "" {
			continue
		}
		seen[c] = true
		lc := strings.ToLower(c)
		d := editDistance(w, lc)
		if d <= limit || (len(w) >= 3 && (strings.HasPrefix(lc, w) || strings.HasPrefix(w, lc))) {
			found = append(found, match{c, d})
		}
	}
	slices.SortStableFunc(found, func(a, b match) int { return cmp.Compare(a.d, b.d) })
	out := make([]string, 0, 3)
	for _, m := range found[:min(3, len(found))] {
		out = append(out, m.s)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, by bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// AtNames writes each name as a target, @name.
func AtNames(names []string) []string { return Prefixed("@", names) }

// Prefixed returns each of words with prefix in front.
func Prefixed(prefix string, words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = prefix + w
	}
	return out
}
