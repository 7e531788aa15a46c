package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	units "github.com/docker/go-units"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/podrun/podrun/store"
)

// waitProgress shows what `apply --wait` waits for: each STATUS change of a
// pod and its image pulls. On a terminal a pull is drawn as progress bars,
// one per layer (mpb, the library containers/image draws its own with);
// elsewhere (CI logs) each change is one plain line: a pull started, a pull
// finished with the image's size, or failed.
type waitProgress struct {
	w        io.Writer
	terminal bool
	status   map[string]string    // pod key → the STATUS last shown
	pulls    map[string]pullShown // pod key + image → the pull last shown
	bars     *mpb.Progress        // while a pull is drawn on the terminal
	layers   map[string]*mpb.Bar  // pod key + image + digest → its bar
}

type pullShown struct {
	started  time.Time
	finished bool
}

func newWaitProgress(w io.Writer) *waitProgress {
	p := &waitProgress{w: w, status: map[string]string{}, pulls: map[string]pullShown{}, layers: map[string]*mpb.Bar{}}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.terminal = true
	}
	return p
}

// line prints one line above the bars, or alone.
func (p *waitProgress) line(format string, args ...any) {
	s := fmt.Sprintf(format, args...) + "\n"
	if p.bars != nil {
		if _, err := p.bars.Write([]byte(s)); err == nil {
			return
		}
	}
	io.WriteString(p.w, s)
}

// showStatus prints the pod's STATUS when it changed.
func (p *waitProgress) showStatus(key, name, status string) {
	if p.status[key] != status {
		p.status[key] = status
		p.line("pod/%s %s", name, status)
	}
}

// showPulls shows the changes of the pod's image pulls since the last call.
func (p *waitProgress) showPulls(key, name string, pulls []store.ImagePull) {
	for _, pl := range pulls {
		k := key + "\x00" + pl.Image
		seen, known := p.pulls[k]
		if known && seen.started.Equal(pl.Started) && seen.finished {
			continue
		}
		if !known || !seen.started.Equal(pl.Started) {
			if !p.terminal {
				p.line("pod/%s pulling image %q", name, pl.Image)
			}
			seen = pullShown{started: pl.Started}
		}
		if p.terminal {
			p.drawLayers(k, pl)
		}
		if pl.Finished != nil {
			seen.finished = true
			took := pl.Finished.Sub(pl.Started).Truncate(time.Millisecond)
			if pl.Error != "" {
				p.line("pod/%s failed to pull image %q after %s: %s", name, pl.Image, took, pl.Error)
			} else {
				p.line("pod/%s pulled image %q in %s (%s, %s downloaded)", name, pl.Image, took, humanBytes(pl.Size), humanBytes(downloaded(pl)))
			}
		}
		p.pulls[k] = seen
	}
	p.settle()
}

func downloaded(pl store.ImagePull) int64 {
	var n int64
	for _, l := range pl.Layers {
		n += l.Offset
	}
	return n
}

// drawLayers adds or moves the bar of each layer of a pull.
func (p *waitProgress) drawLayers(k string, pl store.ImagePull) {
	for _, l := range pl.Layers {
		bk := k + "\x00" + l.Digest
		bar := p.layers[bk]
		if bar == nil {
			if p.bars == nil {
				p.bars = mpb.New(mpb.WithOutput(p.w), mpb.WithWidth(40), mpb.WithRefreshRate(150*time.Millisecond))
			}
			total := max(l.Size, 0)
			bar = p.bars.AddBar(total,
				mpb.PrependDecorators(decor.Name(fmt.Sprintf("%s %s ", shortImage(pl.Image), shortDigest(l.Digest)))),
				mpb.AppendDecorators(decor.OnComplete(decor.CountersKibiByte("% .1f / % .1f"), "done")),
			)
			p.layers[bk] = bar
		}
		if l.Size <= 0 {
			bar.SetTotal(max(l.Offset, 1), l.Done)
			continue
		}
		bar.SetCurrent(l.Offset)
		if l.Done && !bar.Completed() {
			bar.SetTotal(l.Size, true)
		}
	}
	if pl.Finished != nil {
		// A failed pull leaves its unfinished layers: end their bars.
		for _, l := range pl.Layers {
			if bar := p.layers[k+"\x00"+l.Digest]; bar != nil && !bar.Completed() {
				bar.Abort(false)
			}
		}
	}
}

// settle stops drawing once every bar is done, so that an idle wait has no
// refresh ticking.
func (p *waitProgress) settle() {
	if p.bars == nil {
		return
	}
	for _, b := range p.layers {
		if !b.AbortedOrCompleted() {
			return
		}
	}
	p.bars.Wait()
	p.bars = nil
	p.layers = map[string]*mpb.Bar{}
}

// close ends the bars that are still drawn (the wait is over).
func (p *waitProgress) close() {
	if p.bars == nil {
		return
	}
	for _, b := range p.layers {
		if !b.AbortedOrCompleted() {
			b.Abort(false)
		}
	}
	p.bars.Wait()
	p.bars = nil
}

func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		d = d[:12]
	}
	return d
}

// shortImage is an image name short enough for a bar's label.
func shortImage(img string) string {
	if i := strings.LastIndexByte(img, '/'); i >= 0 {
		img = img[i+1:]
	}
	if len(img) > 30 {
		img = img[:29] + "…"
	}
	return img
}

// humanBytes is a size as docker and podman print them (1000-based).
func humanBytes(n int64) string {
	return units.CustomSize("%.1f %s", float64(n), 1000, decimalAbbrs)
}

var decimalAbbrs = []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}
