package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/parley-dev/parley/internal/hub"
)

// Message search (migrations 8 and 12) with PostgreSQL's full-text search: a
// stored tsvector per message under a GIN index, ts_rank for the order and
// ts_headline for the snippet. The tsvector has each word twice, stemmed
// (parley_english) and as written (simple): whole words are matched
// stemmed, so "deploying" finds "deployed"; prefixes as written, so
// "deploy*" finds "deployment" but not "redeploy".

// tsqueries writes the parsed terms as two tsqueries, for to_tsquery with
// parley_english (the whole-word terms, which it stems) and with simple
// (the prefix terms, as written); either may be empty. Every term must
// match (&), a phrase's words in order (<->), a prefix term's last word as a
// prefix (:*). Words are quoted lexemes, so nothing a user types is query
// syntax.
func tsqueries(terms []hub.SearchTerm) (stemmed, prefix string) {
	var st, pr strings.Builder
	for _, t := range terms {
		b := &st
		if t.Prefix {
			b = &pr
		}
		if b.Len() > 0 {
			b.WriteString(" & ")
		}
		b.WriteByte('(')
		for j, w := range t.Words {
			if j > 0 {
				b.WriteString(" <-> ")
			}
			b.WriteString("'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(w) + "'")
			if t.Prefix && j == len(t.Words)-1 {
				b.WriteString(":*")
			}
		}
		b.WriteByte(')')
	}
	return st.String(), pr.String()
}

// searchText is what ts_headline marks the words in: the indexed text, in
// the order the tsvector has it.
const searchText = `m.content
	|| coalesce(' ' || (SELECT string_agg(x #>> '{}', ' ') FROM jsonb_path_query(m.payload::jsonb, 'strict $.** ? (@.type() == "string")') x), '')
	|| coalesce(' ' || (SELECT string_agg(value, ' ') FROM jsonb_each_text(m.metadata)), '')`

// Search finds the messages of ws with every term of q, best first.
func (db *DB) Search(ctx context.Context, ws string, q hub.SearchQuery) ([]hub.SearchHit, error) {
	const op = "search"
	if len(q.Terms) == 0 || q.Limit <= 0 {
		return nil, nil
	}
	args := []any{ws}
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	var query []string
	stemmed, prefix := tsqueries(q.Terms)
	if stemmed != "" {
		query = append(query, `to_tsquery('parley_english', `+arg(stemmed)+`)`)
	}
	if prefix != "" {
		query = append(query, `to_tsquery('simple', `+arg(prefix)+`)`)
	}
	var where strings.Builder
	if q.Viewer != "" {
		v := arg(q.Viewer)
		where.WriteString(` AND ` + viewerSQL("m", "$1", v))
	}
	if q.From != "" {
		where.WriteString(` AND m.sender = ` + arg(q.From))
	}
	if q.Thread != "" {
		where.WriteString(` AND m.thread_id = ` + arg(q.Thread))
	}
	if !q.Since.IsZero() {
		where.WriteString(` AND m.created_at >= ` + arg(q.Since))
	}
	// The filters apply before the limit, so a viewer's one match is found
	// however many better ones others see; snippets only for the hits.
	sql := `WITH q AS (SELECT ` + strings.Join(query, " && ") + ` AS q),
		top AS (
			SELECT m.seq, -ts_rank(m.search, q.q) AS score FROM messages m, q
			WHERE m.workspace = $1 AND m.search @@ q.q` + where.String() + `
			ORDER BY score, m.seq DESC LIMIT ` + arg(q.Limit) + `
		)
		SELECT ts_headline('parley_english', ` + searchText + `, q.q, 'StartSel=**, StopSel=**, MaxWords=24, MinWords=8'),
			top.score, ` + msgCols + `
		FROM top JOIN messages m ON m.seq = top.seq, q
		ORDER BY top.score, m.seq DESC`
	rows, err := db.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	hits, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.SearchHit, error) {
		var h hub.SearchHit
		m, err := scanMessage(prefixed{r, []any{&h.Snippet, &h.Score}})
		h.Message = m
		return h, err
	})
	if err != nil {
		return nil, db.mapErr(ctx, op, err)
	}
	return hits, nil
}

// prefixed scans leading columns into lead, then the rest as the caller asks.
type prefixed struct {
	row  pgx.Row
	lead []any
}

func (p prefixed) Scan(dest ...any) error { return p.row.Scan(append(p.lead, dest...)...) }
