package sqlite

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"unicode"

	"github.com/parley-dev/parley/internal/hub"
)

// Search runs an FTS5 query, best first by the index's rank: BM25 with
// content weighing most, then payload text, then metadata values. Words are
// matched in messages_fts, which folds word forms together with the porter
// stemmer; prefix terms in messages_words, which does not (porter stems the
// prefix too: deploy* would look for deploi*, which "deployment", indexed as
// deploy, does not start with). See migrations 0005 and 0008.
func (db *DB) Search(ctx context.Context, ws string, q hub.SearchQuery) ([]hub.SearchHit, error) {
	const op = "search"
	var words, prefixes []hub.SearchTerm
	for _, t := range q.Terms {
		if t.Prefix {
			prefixes = append(prefixes, t)
		} else {
			words = append(words, t)
		}
	}
	// The terms of one kind rank the matches; the prefix terms of a mixed
	// query filter them.
	index, match, filter := "messages_fts", ftsQuery(words), ""
	if len(words) == 0 {
		index, match = "messages_words", ftsQuery(prefixes)
	} else if len(prefixes) > 0 {
		filter = ftsQuery(prefixes)
	}
	if match == "" {
		return nil, hub.Errorf(op, hub.Invalid, "query has no words to search for")
	}
	if q.Limit <= 0 {
		q.Limit = hub.DefaultSearchLimit
	}
	// A send commits its message with the search indexing it owes (a row of
	// search_pending), and the writer pays that debt later (writer.run), so
	// first pay what is owed: every write that committed before this search
	// began set the writer's count before its caller heard of the commit,
	// so a search sees each message whose send has returned, as it did when
	// every commit indexed. With nothing owed, which is the common case, it
	// costs one atomic load.
	if err := db.wr.payDebt(ctx); err != nil {
		return nil, db.writeErr(ctx, op, err)
	}
	// A person's search of the whole workspace first takes the best
	// matches straight from the index (quickSearchSQL); only when some of
	// them belong to other workspaces does it need the filtered scan.
	if filter == "" && q.Viewer == "" && q.From == "" && q.Thread == "" && q.Since.IsZero() {
		hits, read, err := db.runSearch(ctx, quickSearchSQL(index), q.Terms, match, ws, q.Limit)
		// Fewer rows than asked for were all the index had.
		if err != nil || len(hits) == q.Limit || read < q.Limit {
			return hits, err
		}
	}
	args := []any{match, ws, q.Viewer, q.From, q.Thread, nanos(q.Since), q.Limit}
	if filter != "" {
		args = append(args, filter)
	}
	hits, _, err := db.runSearch(ctx, searchSQL(q, index, filter != ""), q.Terms, args...)
	return hits, err
}

// runSearch runs a search query (see pageSQL) and reads its hits: the rows
// whose first column says they are in the workspace searched. read is how
// many rows it read in all.
func (db *DB) runSearch(ctx context.Context, query string, terms []hub.SearchTerm, args ...any) (hits []hub.SearchHit, read int, err error) {
	const op = "search"
	stmt, err := db.searchStmt(ctx, query)
	if err != nil {
		return nil, 0, db.mapErr(ctx, op, err)
	}
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, 0, db.mapErr(ctx, op, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			h                 hub.SearchHit
			inWorkspace       bool
			payload, metadata sql.NullString
		)
		m, err := scanMessage(rows, &inWorkspace, &payload, &metadata, &h.Score)
		if err != nil {
			return nil, 0, db.mapErr(ctx, op, err)
		}
		read++
		if !inWorkspace {
			continue
		}
		h.Message = m
		h.Snippet = makeSnippet(terms, m.Content, payload.String, metadata.String)
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, db.mapErr(ctx, op, err)
	}
	return hits, read, nil
}

// searchStmt returns the prepared statement for query, preparing it once: a
// search query has a few dozen shapes at most, and preparing one anew took a
// fifth of a search.
func (db *DB) searchStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := db.searchStmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := db.r.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := db.searchStmts.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// searchSQL builds the query of a filtered search: an agent's (which sees
// only what hub.HistoryQuery.Viewer admits), or one with a sender, thread,
// time or prefix filter. The filters (the workspace, the viewer's
// visibility, sender, thread, time, prefixes) are checked on every match as
// the index hands it out, in rowid order, by SQLite, outside the index, and
// only the matches that pass are ranked: ranking (bm25 reads each row's
// length from the index's docsize table) costs more per match than the
// filters' index probes, and FTS5's own ORDER BY rank would rank every match
// first, then rank each one handed out a second time. Ordered by +rank,
// which FTS5 does not take, SQLite computes the rank once, of the rows that
// passed, and keeps the best ?7. (Filters the index would take, such as a
// rowid IN list, would make FTS5 re-run the match once per row; the + in
// +f.rowid keeps the prefix filter out of its hands.) Only then are the
// page's messages read. The snippet is made in Go (makeSnippet): FTS5's
// snippet() re-ran the match for each row too.
func searchSQL(q hub.SearchQuery, index string, prefixFilter bool) string {
	var b strings.Builder
	b.WriteString(`SELECT f.rowid AS seq, f.rank AS score FROM ` + index + ` f
		WHERE f.` + index + ` MATCH ?1`)
	// Each filter probes an index that holds what it checks, rather than
	// reading the message's row: the rows of a match are scattered over the
	// whole table, while the indexes are a fraction of its size and stay in
	// the page cache. (INDEXED BY: on seq alone, the primary key, SQLite
	// would read the row.)
	if q.Viewer != "" {
		// Its own messages first, by the cheap probes; then the rest of
		// its threads (viewerSQL), which reads the match's row.
		b.WriteString(`
		AND (EXISTS (SELECT 1 FROM messages m INDEXED BY messages_by_sender
				WHERE m.workspace = ?2 AND m.sender = ?3 AND m.seq = f.rowid)
			OR (EXISTS (SELECT 1 FROM deliveries d WHERE d.message_seq = f.rowid AND d.recipient = ?3)
				AND EXISTS (SELECT 1 FROM messages m INDEXED BY messages_by_workspace
					WHERE m.workspace = ?2 AND m.seq = f.rowid))
			OR EXISTS (SELECT 1 FROM messages m WHERE m.seq = f.rowid AND m.workspace = ?2
				AND ` + viewerSQL("m", "?2", "?3") + `))`)
	}
	if q.From != "" || q.Thread != "" || !q.Since.IsZero() {
		b.WriteString(`
		AND EXISTS (SELECT 1 FROM messages m WHERE m.seq = f.rowid AND m.workspace = ?2`)
		if q.From != "" {
			b.WriteString(` AND m.sender = ?4`)
		}
		if q.Thread != "" {
			b.WriteString(` AND m.thread_id = ?5`)
		}
		if !q.Since.IsZero() {
			b.WriteString(` AND m.created_at >= ?6`)
		}
		b.WriteString(`)`)
	} else if q.Viewer == "" {
		b.WriteString(`
		AND EXISTS (SELECT 1 FROM messages m INDEXED BY messages_by_workspace
			WHERE m.workspace = ?2 AND m.seq = f.rowid)`)
	}
	if prefixFilter {
		b.WriteString(`
		AND +f.rowid IN (SELECT rowid FROM messages_words WHERE messages_words MATCH ?8)`)
	}
	b.WriteString(`
		ORDER BY +f.rank, f.rowid DESC LIMIT ?7`)
	return pageSQL("1", b.String())
}

// quickSearchSQL is a person's search of a whole workspace. FTS5's own
// ORDER BY rank ranks every match in a statement of its own, and then
// computes the rank of each row it hands out a second time, learning the
// terms' weights over again (the bm25 of a rank column read): together
// about a third more than ranking once. Ordered by +rank, which FTS5 does
// not take, the index hands out matches with their rank computed once, and
// SQLite keeps the best ?3 of them as they come. The workspace is checked on
// those only, by runSearch, from the first column; if some were in other
// workspaces and the index gave all ?3, Search runs the filtered scan.
func quickSearchSQL(index string) string {
	return pageSQL("m.workspace = ?2", `SELECT f.rowid AS seq, f.rank AS score FROM `+index+` f
		WHERE f.`+index+` MATCH ?1 ORDER BY +f.rank, f.rowid DESC LIMIT ?3`)
}

// pageSQL reads the messages of best, a query of the best matches' seq and
// score, in rank order, with inWorkspace as the first column (see
// runSearch). best is a subquery that SQLite runs as a coroutine, row by row
// into the join: not flattened into it (it has a LIMIT), nor written to a
// table first (a MATERIALIZED CTE cost a search about a tenth more).
func pageSQL(inWorkspace, best string) string {
	return `SELECT ` + inWorkspace + `, t.payload, t.metadata, best.score, ` + msgCols + `
	FROM (` + best + `) best
	CROSS JOIN messages m ON m.seq = best.seq
	LEFT JOIN message_search_text t ON t.seq = best.seq
	ORDER BY best.score, best.seq DESC`
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
