package hub

import (
	"context"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// SearchQuery is a parsed search.
type SearchQuery struct {
	Terms  []SearchTerm
	Viewer string    // "" sees the whole workspace (a person); else what this agent may read (HistoryQuery.Viewer)
	From   string    // only messages of this sender
	Thread string    // only this thread
	Since  time.Time // only messages created at or after this
	Limit  int
}

// A SearchTerm is a word or a quoted phrase; Prefix makes its last word match
// any word it starts.
type SearchTerm struct {
	Words  []string
	Prefix bool
}

// SearchHit is one found message.
type SearchHit struct {
	Message *Message
	Snippet string
	Score   float64 // lower is better (BM25 as SQLite reports it)
}

// Search limits.
const (
	DefaultSearchLimit = 20
	MaxSearchLimit     = 100
	MaxSearchQuery     = 1024
	maxSearchTerms     = 32
)

// SearchRequest searches a workspace's messages.
type SearchRequest struct {
	Workspace string
	Viewer    string // see SearchQuery.Viewer
	Query     string
	From      string
	Thread    string
	Since     time.Time
	Limit     int // 0: DefaultSearchLimit
}

// Search finds messages by words: every word must occur (in any form the
// stemmer folds together: "parse" finds "parsing"), "quoted phrases" must occur
// in order, and word* matches any word that starts with word.
func (h *Hub) Search(ctx context.Context, r SearchRequest) ([]SearchHit, error) {
	const op = "search"
	if err := ValidWorkspace(r.Workspace); err != nil {
		return nil, withOp(op, err)
	}
	terms, err := ParseSearchQuery(r.Query)
	if err != nil {
		return nil, withOp(op, err)
	}
	switch {
	case r.Limit < 0 || r.Limit > MaxSearchLimit:
		return nil, Errorf(op, Invalid, "limit %d is out of range: want 1 to %d", r.Limit, MaxSearchLimit)
	case r.Limit == 0:
		r.Limit = DefaultSearchLimit
	}
	hits, err := h.store.Search(ctx, r.Workspace, SearchQuery{Terms: terms, Viewer: r.Viewer, From: r.From,
		Thread: r.Thread, Since: r.Since, Limit: r.Limit})
	if err != nil {
		return nil, withOp(op, err)
	}
	return hits, nil
}

// ParseSearchQuery splits a query into terms: words, "quoted phrases", and a
// trailing * for a prefix. Punctuation separates words, as the index does; a
// query with no word at all is an error.
func ParseSearchQuery(q string) ([]SearchTerm, error) {
	if len(q) > MaxSearchQuery {
		return nil, Errorf("", Invalid, "query is too long: at most %d bytes", MaxSearchQuery)
	}
	if !utf8.ValidString(q) {
		return nil, Errorf("", Invalid, "query is not UTF-8")
	}
	var terms []SearchTerm
	for len(q) > 0 {
		q = strings.TrimLeftFunc(q, func(r rune) bool { return !isWordRune(r) && r != '"' })
		if q == "" {
			break
		}
		var chunk string
		phrase := q[0] == '"'
		if phrase {
			end := strings.IndexByte(q[1:], '"')
			if end < 0 {
				chunk, q = q[1:], ""
			} else {
				chunk, q = q[1:1+end], q[2+end:]
			}
		} else {
			end := strings.IndexFunc(q, func(r rune) bool { return unicode.IsSpace(r) || r == '"' })
			if end < 0 {
				end = len(q)
			}
			chunk, q = q[:end], q[end:]
		}
		prefix := strings.HasSuffix(chunk, "*")
		words := strings.FieldsFunc(chunk, func(r rune) bool { return !isWordRune(r) })
		if len(words) == 0 {
			continue
		}
		if !phrase && len(words) > 1 {
			// "a.go" or "user_id": punctuation inside a token keeps its
			// words together, as a phrase, the way the index stored them.
			phrase = true
		}
		for i, w := range words {
			words[i] = strings.ToLower(w)
		}
		terms = append(terms, SearchTerm{Words: words, Prefix: prefix})
		if len(terms) > maxSearchTerms {
			return nil, Errorf("", Invalid, "query has too many terms: at most %d", maxSearchTerms)
		}
	}
	if len(terms) == 0 {
		return nil, Errorf("", Invalid, "query has no words to search for")
	}
	return terms, nil
}

// isWordRune is what the index counts as part of a word (SQLite's unicode61
// tokenizer: letters, digits and marks).
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r)
}
