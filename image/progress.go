//go:build podrun_image

package image

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"go.podman.io/image/v5/copy"
	"go.podman.io/image/v5/types"
	"golang.org/x/term"
)

// reporter writes progress: containers/image's per-layer progress bars when the output
// is a terminal, one plain line per blob otherwise (CI logs); and hands each blob's
// progress to onLayer when set.
type reporter struct {
	w       io.Writer // nil: silent
	bars    bool
	onLayer func(LayerProgress)
	mu      sync.Mutex
}

func newReporter(w io.Writer, terminal bool) *reporter {
	r := &reporter{w: w}
	if f, ok := w.(*os.File); ok && terminal && term.IsTerminal(int(f.Fd())) {
		r.bars = true
	}
	return r
}

func (r *reporter) printf(format string, args ...any) {
	if r == nil || r.w == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.w, format, args...)
}

// layerInterval is how often a blob's progress reaches onLayer while it downloads.
const layerInterval = 200 * time.Millisecond

// attach configures opts for this reporter and returns a function to call once
// copy.Image has returned.
func (r *reporter) attach(opts *copy.Options) (done func()) {
	if r == nil {
		return func() {}
	}
	plain := r.w != nil && !r.bars
	if r.w != nil && r.bars {
		opts.ReportWriter = r.w
	}
	if !plain && r.onLayer == nil {
		return func() {}
	}
	ch := make(chan types.ProgressProperties, 16)
	opts.Progress = ch
	opts.ProgressInterval = time.Second
	if r.onLayer != nil {
		opts.ProgressInterval = layerInterval
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for p := range ch {
			kind := "blob"
			if strings.Contains(p.Artifact.MediaType, "config") {
				kind = "config"
			}
			if r.onLayer != nil && kind == "blob" {
				lp := LayerProgress{Digest: p.Artifact.Digest.String(), Size: p.Artifact.Size, Offset: int64(p.Offset)}
				switch p.Event {
				case types.ProgressEventDone, types.ProgressEventSkipped:
					lp.Done = true
					if lp.Size > 0 {
						lp.Offset = lp.Size
					}
				}
				r.onLayer(lp)
			}
			if !plain {
				continue
			}
			switch p.Event {
			case types.ProgressEventDone:
				r.printf("Copying %s %s done %s\n", kind, shortDigest(p.Artifact.Digest), humanSize(int64(p.Offset)))
			case types.ProgressEventSkipped:
				r.printf("Copying %s %s skipped: already exists\n", kind, shortDigest(p.Artifact.Digest))
			}
		}
	}()
	return func() {
		close(ch)
		<-finished
	}
}
