package sqlite

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"unicode"

	"github.com/parley-dev/parley/internal/hub"
)

var _ hub.Searcher = (*DB)(nil)

// searchWindow is how many of the best-ranked matches a search first looks at
// per hit it wants. The index spans every workspace and every agent's mail, so
// some of the best matches may not be the viewer's to see; looking them up for
// every match of a common word (thousands) cost ten times the search itself.
// Most searches fill their page from the first window; the rest look again in
// a window searchGrowth times larger, and finally at every match.
const (
	searchWindow = 8
	searchGrowth = 16
	maxWindow    = 1 << 16
)

// Search runs an FTS5 query over messages_fts (see migrations/0005_reservations_search.sql), best first by
// the index's rank: BM25 with content weighing most, then payload text, then
// metadata values.
func (db *DB) Search(ctx context.Context, ws string, q hub.SearchQuery) ([]hub.SearchHit, error) {
	const op = "search"
	match := ftsQuery(q.Terms)
	if match == "" {
		return nil, hub.Errorf(op, hub.Invalid, "query has no words to search for")
	}
	if q.Limit <= 0 {
		q.Limit = hub.DefaultSearchLimit
	}
	query := searchSQL(q)
	window := q.Limit * searchWindow
	if q.Viewer != "" || q.From != "" || q.Thread != "" || !q.Since.IsZero() {
		window *= searchGrowth // filters keep fewer of the best matches
	}
	for ; ; window *= searchGrowth {
		if window > maxWindow {
			window = -1 // every match
		}
		hits, err := db.search(ctx, query, match, ws, q, window)
		if err != nil {
			return nil, db.mapErr(ctx, op, err)
		}
		if len(hits) == q.Limit || window < 0 {
			return hits, nil
		}
		// Fewer than a page: either that is all there is, or the window cut
		// off matches the viewer may see. Count to tell, before paying for
		// a wider window.
		var n int
		if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM messages_fts
			WHERE messages_fts MATCH ?1 LIMIT ?2)`, match, window+1).Scan(&n); err != nil {
			return nil, db.mapErr(ctx, op, err)
		}
		if n <= window {
			return hits, nil
		}
	}
}

// searchSQL builds the query: the window's best candidates by rank alone (the
// bare FTS5 query), then the viewer's filters on those, then the page. The
// snippet is made in Go (makeSnippet): FTS5's snippet() needs the match
// again for each row, and asking the index for one rowid at a time re-ran
// the whole match, twenty times the cost of the search. CROSS JOIN keeps the
// candidates the outer loop: planned the other way, SQLite walked every
// message of the workspace by its index and looked each up in the candidates.
func searchSQL(q hub.SearchQuery) string {
	var b strings.Builder
	b.WriteString(`WITH cand AS (
		SELECT rowid AS seq, rank AS score FROM messages_fts
		WHERE messages_fts MATCH ?1 ORDER BY rank LIMIT ?8)
	SELECT t.payload, t.metadata, cand.score, ` + msgCols + `
	FROM cand CROSS JOIN messages m ON m.seq = cand.seq
	LEFT JOIN message_search_text t ON t.seq = cand.seq
	WHERE m.workspace = ?2`)
	if q.Viewer != "" {
		b.WriteString(` AND (m.sender = ?3 OR EXISTS (SELECT 1 FROM deliveries d
			WHERE d.message_seq = m.seq AND d.recipient = ?3))`)
	}
	if q.From != "" {
		b.WriteString(` AND m.sender = ?4`)
	}
	if q.Thread != "" {
		b.WriteString(` AND m.thread_id = ?5`)
	}
	if !q.Since.IsZero() {
		b.WriteString(` AND m.created_at >= ?6`)
	}
	b.WriteString(` ORDER BY cand.score, cand.seq DESC LIMIT ?7`)
	return b.String()
}

func (db *DB) search(ctx context.Context, query, match, ws string, q hub.SearchQuery, window int) ([]hub.SearchHit, error) {
	rows, err := db.r.QueryContext(ctx, query, match, ws, q.Viewer, q.From, q.Thread, nanos(q.Since), q.Limit, window)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var hits []hub.SearchHit
	for rows.Next() {
		var (
			h                 hub.SearchHit
			payload, metadata sql.NullString
		)
		m, err := scanMessage(rows, &payload, &metadata, &h.Score)
		if err != nil {
			return nil, err
		}
		h.Message = m
		h.Snippet = makeSnippet(q.Terms, m.Content, payload.String, metadata.String)
		hits = append(hits, h)
	}
	return hits, rows.Err()
}

// snippetWords is how many words a snippet shows around the first match.
const snippetWords = 16

// makeSnippet shows the words around the first match in the first text that
// has one, each matching word marked **like this**. A word matches a term
// when it starts with the term's word less a common English ending, which
// is close to what the porter stemmer folds together ("parsing" marks for
// "parse").
func makeSnippet(terms []hub.SearchTerm, texts ...string) string {
	var stems []string
	for _, t := range terms {
		for _, w := range t.Words {
			stems = append(stems, stemPrefix(w))
		}
	}
	matches := func(word string) bool {
		w := strings.ToLower(strings.TrimFunc(word, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }))
		for _, s := range stems {
			if s != "" && strings.HasPrefix(w, s) {
				return true
			}
		}
		return false
	}
	for _, text := range texts {
		words := strings.Fields(text)
		first := slices.IndexFunc(words, matches)
		if first < 0 {
			continue
		}
		lo := max(0, first-snippetWords/4)
		hi := min(len(words), lo+snippetWords)
		var b strings.Builder
		if lo > 0 {
			b.WriteString("… ")
		}
		for i, w := range words[lo:hi] {
			if i > 0 {
				b.WriteByte(' ')
			}
			if matches(w) {
				b.WriteString("**" + w + "**")
			} else {
				b.WriteString(w)
			}
		}
		if hi < len(words) {
			b.WriteString(" …")
		}
		return b.String()
	}
	// The match is in a form the prefix rule misses: show the start.
	for _, text := range texts {
		if words := strings.Fields(text); len(words) > 0 {
			s := strings.Join(words[:min(len(words), snippetWords)], " ")
			if len(words) > snippetWords {
				s += " …"
			}
			return s
		}
	}
	return ""
}

// stemPrefix cuts a common English ending off a lowercase word.
func stemPrefix(w string) string {
	for _, suf := range []string{"ations", "ation", "ings", "ing", "ers", "er", "ies", "es", "ed", "s", "e", "y"} {
		if len(w) > len(suf)+2 && strings.HasSuffix(w, suf) {
			return w[:len(w)-len(suf)]
		}
	}
	return w
}

// ftsQuery renders terms in FTS5's syntax: every word quoted (so nothing the
// user types is read as an operator), phrases as one string, terms ANDed.
func ftsQuery(terms []hub.SearchTerm) string {
	var b strings.Builder
	for _, t := range terms {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(strings.Join(t.Words, " "), `"`, `""`))
		b.WriteByte('"')
		if t.Prefix {
			b.WriteByte('*')
		}
	}
	return b.String()
}
