package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// samples is a set of durations measured the same way.
type samples []time.Duration

// quantile is the q-quantile (0 ≤ q ≤ 1) with linear interpolation between
// the closest ranks (numpy's default), so the median of an even count is the
// mean of the two middle values. It is 0 for no samples.
func (s samples) quantile(q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	sorted := slices.Clone(s)
	slices.Sort(sorted)
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	frac := pos - float64(lo)
	return sorted[lo] + time.Duration(math.Round(frac*float64(sorted[hi]-sorted[lo])))
}

func (s samples) min() time.Duration    { return s.quantile(0) }
func (s samples) median() time.Duration { return s.quantile(0.5) }
func (s samples) p90() time.Duration    { return s.quantile(0.9) }
func (s samples) p99() time.Duration    { return s.quantile(0.99) }
func (s samples) max() time.Duration    { return s.quantile(1) }

// ms formats a duration in milliseconds with a precision that suits its size.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case d == 0:
		return "0"
	case v < 10:
		return fmt.Sprintf("%.2f ms", v)
	case v < 1000:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f s", v/1000)
}

// ratio formats a/b, or "–" when b is zero.
func ratio(a, b time.Duration) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

// pairRatio is the median of a[i]/b[i] over the pairs both have: each pair
// ran one right after the other, so each ratio saw the same load.
func pairRatio(a, b samples) (float64, bool) {
	var rs []float64
	for i := 0; i < len(a) && i < len(b); i++ {
		if b[i] > 0 {
			rs = append(rs, float64(a[i])/float64(b[i]))
		}
	}
	if len(rs) == 0 {
		return 0, false
	}
	slices.Sort(rs)
	n := len(rs)
	if n%2 == 1 {
		return rs[n/2], true
	}
	return (rs[n/2-1] + rs[n/2]) / 2, true
}

// mib formats a byte count in MiB.
func mib(bytes int64) string {
	return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20))
}

// table is a Markdown table.
type table struct {
	header []string
	// right says which columns are numbers (right-aligned).
	right []bool
	rows  [][]string
}

func newTable(header ...string) *table {
	t := &table{header: header, right: make([]bool, len(header))}
	for i := 1; i < len(header); i++ {
		t.right[i] = true
	}
	return t
}

func (t *table) add(cells ...string) {
	for len(cells) < len(t.header) {
		cells = append(cells, "")
	}
	t.rows = append(t.rows, cells)
}

// addSamples adds a row with a label and min / median / p90 of s.
func (t *table) addSamples(label string, s samples, extra ...string) {
	t.add(append([]string{label, ms(s.min()), ms(s.median()), ms(s.p90())}, extra...)...)
}

func (t *table) String() string {
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteString("\n")
	}
	line(t.header)
	b.WriteString("|")
	for _, r := range t.right {
		if r {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		line(r)
	}
	return b.String()
}

// joinMs lists durations in ms, comma-separated, in their order.
func joinMs(s samples) string {
	var parts []string
	for _, d := range s {
		parts = append(parts, ms(d))
	}
	return strings.Join(parts, ", ")
}
