package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// searchCorpus fills db with n messages of ~20 words drawn from a Zipf
// distribution over a 5,000-word vocabulary (as natural text is), sent by 20
// agents each to one of the others.
func searchCorpus(b *testing.B, db *DB, n int) (vocab []string) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	vocab = make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%c%c%d", 'a'+i%26, 'a'+(i/26)%26, i)
	}
	zipf := rand.NewZipf(rng, 1.1, 1, uint64(len(vocab)-1))
	onWriter(b, db, func(ctx context.Context, c *sql.Conn) error {
		msg, err := c.PrepareContext(ctx, `INSERT INTO messages (id, workspace, sender, to_addr, content, priority, thread_id, created_at)
			VALUES (?, 'ws', ?, ?, ?, 'normal', ?, ?)`)
		if err != nil {
			return err
		}
		defer msg.Close()
		del, err := c.PrepareContext(ctx, `INSERT INTO deliveries (workspace, recipient, message_seq, rank) VALUES ('ws', ?, ?, 2)`)
		if err != nil {
			return err
		}
		defer del.Close()
		words := make([]string, 20)
		for i := range n {
			for j := range words {
				words[j] = vocab[zipf.Uint64()]
			}
			id := fmt.Sprintf("01JSEARCH%017d", i)
			from, to := fmt.Sprintf("agent%d", i%20), fmt.Sprintf("agent%d", (i+1+i/20)%20)
			res, err := msg.ExecContext(ctx, id, from, to, strings.Join(words, " "), id, time.Now().UnixNano())
			if err != nil {
				return err
			}
			seq, _ := res.LastInsertId()
			if _, err := del.ExecContext(ctx, to, seq); err != nil {
				return err
			}
		}
		return nil
	})
	if err := db.wr.payDebt(context.Background()); err != nil {
		b.Fatal(err)
	}
	return vocab
}

// BenchmarkSearch100k measures search at 100,000 messages beside its floor, a
// bare FTS5 query for the same words on the same read pool (ranked, limited,
// no join, no snippet, no visibility). Queries are one or two words of the
// 30th to 1,000th most common, which each occur in ~0.1% to ~5% of messages;
// the prefix queries are the same words less their last two characters, and
// their floor is the bare query on the unstemmed index. Besides wall-clock
// p50 and p99 it reports the thread CPU time per search (cpu-us/op), which
// a loaded machine distorts far less.
func BenchmarkSearch100k(b *testing.B) {
	db, err := Open(context.Background(), filepath.Join(b.TempDir(), "parley.db"), &Options{synchronous: "OFF"})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	vocab := searchCorpus(b, db, 100_000)
	rng := rand.New(rand.NewPCG(3, 4))
	queries := make([]string, 256)
	for i := range queries {
		q := vocab[30+rng.IntN(970)]
		if i%2 == 1 {
			q += " " + vocab[30+rng.IntN(970)]
		}
		queries[i] = q
	}
	prefixes := make([]string, len(queries))
	for i, q := range queries {
		w := strings.Fields(q)[0]
		prefixes[i] = w[:len(w)-2] + "*"
	}
	ctx := context.Background()
	run := func(b *testing.B, queries []string, fn func(terms []hub.SearchTerm) error) {
		defer lockThread()()
		lat := make([]time.Duration, 0, b.N)
		var cpu time.Duration
		i := 0
		for b.Loop() {
			terms, _ := hub.ParseSearchQuery(queries[i%len(queries)])
			start, c0 := time.Now(), threadCPU()
			if err := fn(terms); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
			cpu += threadCPU() - c0
			i++
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
		b.ReportMetric(float64(cpu.Microseconds())/float64(len(lat)), "cpu-us/op")
	}
	bare := func(index string) func([]hub.SearchTerm) error {
		return func(terms []hub.SearchTerm) error {
			rows, err := db.r.QueryContext(ctx, `SELECT rowid FROM `+index+` WHERE `+index+` MATCH ? ORDER BY rank LIMIT 20`, ftsQuery(terms))
			if err != nil {
				return err
			}
			for rows.Next() {
			}
			rows.Close()
			return rows.Err()
		}
	}
	search := func(viewer string) func([]hub.SearchTerm) error {
		return func(terms []hub.SearchTerm) error {
			_, err := db.Search(ctx, "ws", hub.SearchQuery{Terms: terms, Viewer: viewer, Limit: 20})
			return err
		}
	}
	b.Run("floor=bare-fts5", func(b *testing.B) { run(b, queries, bare("messages_fts")) })
	b.Run("search/person", func(b *testing.B) { run(b, queries, search("")) })
	b.Run("search/agent", func(b *testing.B) { run(b, queries, search("agent7")) })
	b.Run("floor=bare-fts5-prefix", func(b *testing.B) { run(b, prefixes, bare("messages_words")) })
	b.Run("search/person-prefix", func(b *testing.B) { run(b, prefixes, search("")) })
}
