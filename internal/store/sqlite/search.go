package sqlite

import (
	"context"
	"strings"

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
	for window := q.Limit * searchWindow; ; window *= searchGrowth {
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
// bare FTS5 query), then the viewer's filters on those, then snippets for the
// page only (a SELECT list is computed for every row before ORDER BY sorts,
// and snippets are the costly part). The outer MATCH with a rowid is a seek.
func searchSQL(q hub.SearchQuery) string {
	var b strings.Builder
	b.WriteString(`WITH cand AS (
		SELECT rowid AS seq, rank AS score FROM messages_fts
		WHERE messages_fts MATCH ?1 ORDER BY rank LIMIT ?8),
	top AS (
		SELECT cand.seq, cand.score FROM cand JOIN messages m ON m.seq = cand.seq
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
	b.WriteString(` ORDER BY cand.score, cand.seq DESC LIMIT ?7)
	SELECT snippet(messages_fts, -1, '**', '**', '…', 16), top.score, ` + msgCols + `
	FROM top JOIN messages_fts ON messages_fts.rowid = top.seq JOIN messages m ON m.seq = top.seq
	WHERE messages_fts MATCH ?1
	ORDER BY top.score, m.seq DESC`)
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
		var h hub.SearchHit
		m, err := scanMessage(rows, &h.Snippet, &h.Score)
		if err != nil {
			return nil, err
		}
		h.Message = m
		hits = append(hits, h)
	}
	return hits, rows.Err()
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
