package door

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestScratchOpencode(t *testing.T) {
	if os.Getenv("SCRATCH") == "" {
		t.Skip()
	}
	ctx := context.Background()
	u, v, err := OpencodeServer(ctx, 10014, "/tmp/dx/oproj")
	t.Log(u, v, err)
	o := &Opencode{URL: u, Directory: "/tmp/dx/oproj"}
	p, err := o.Write(ctx, "[Parley bus · letter 01SCRATCH] hi GO-LETTER")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	t.Log("carried:", p.Carried(cctx), time.Since(start), p.Session)
}
