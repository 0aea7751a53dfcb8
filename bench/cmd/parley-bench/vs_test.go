package main

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestVsRatio(t *testing.T) {
	fill := func(n int, f func(i int) time.Duration) []time.Duration {
		ds := make([]time.Duration, n)
		for i := range ds {
			ds[i] = f(i)
		}
		return ds
	}
	// 250 cycles: two whole blocks and a partial one, which no block counts.
	// This build is twice as slow in the first block and as fast in the
	// second; the partial block would make it slower again.
	this := fill(250, func(i int) time.Duration {
		if i < vsBlock || i >= 2*vsBlock {
			return 2 * time.Millisecond
		}
		return time.Millisecond
	})
	other := fill(250, func(int) time.Duration { return time.Millisecond })
	r := vsRow{this: this, other: other}.ratio()
	if r.of != 2 || r.worse != 1 {
		t.Errorf("blocks: %d slower of %d, want 1 of 2", r.worse, r.of)
	}
	if r.blockMedian != 2 { // the upper middle of {1, 2}
		t.Errorf("median of block ratios %v, want 2", r.blockMedian)
	}
	if r.this != 2*time.Millisecond || r.other != time.Millisecond || r.ratio != 2 {
		t.Errorf("p50s %v against %v, ratio %v; want 2ms against 1ms, 2", r.this, r.other, r.ratio)
	}
	// The samples are not reordered: a later block still sees its own.
	if this[vsBlock] != time.Millisecond {
		t.Error("ratio sorted the samples in place")
	}
}

func TestVsRowAdd(t *testing.T) {
	var r vsRow
	r.add(0, time.Millisecond)
	r.add(1, 2*time.Millisecond)
	r.add(1, 3*time.Millisecond)
	if len(r.this) != 1 || r.this[0] != time.Millisecond || len(r.other) != 2 || r.other[1] != 3*time.Millisecond {
		t.Errorf("this %v, other %v: build 0 is this build, 1 is -vs", r.this, r.other)
	}
}

func TestInterleave(t *testing.T) {
	defer func(n int) { *flagN = n }(*flagN)
	*flagN = 4
	var order []int
	row := vsRow{name: "row"}
	err := interleave(&row, func(i, n int) (time.Duration, error) {
		order = append(order, i)
		return time.Duration(n+vsWarm) * time.Millisecond, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != 2*(vsWarm+4) {
		t.Fatalf("%d samples taken, want %d: %d warm-up and 4 kept of each build", len(order), 2*(vsWarm+4), vsWarm)
	}
	for c := 0; c < len(order); c += 2 {
		if order[c] == order[c+1] || (c > 0 && order[c] == order[c-2]) {
			t.Fatalf("order %v: each cycle takes both builds, and the first alternates", order)
		}
	}
	want := []time.Duration{50 * time.Millisecond, 51 * time.Millisecond, 52 * time.Millisecond, 53 * time.Millisecond}
	if !slices.Equal(row.this, want) || !slices.Equal(row.other, want) {
		t.Errorf("kept %v and %v, want the samples after the warm-up, %v", row.this, row.other, want)
	}
	bad := vsRow{name: "bad"}
	if err := interleave(&bad, func(int, int) (time.Duration, error) { return 0, errors.New("gone") }); err == nil || err.Error() != "bad: gone" {
		t.Errorf("error %v, want %q", err, "bad: gone")
	}
}
