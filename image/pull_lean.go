//go:build podrun_lean

package image

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// PullOptions configure Pull. The lean build (podrun-shim: the supervisor and the
// container init) has no registry client of its own: it pulls by running the CLI's
// `podrun pull`, found next to its own binary, which writes the same store.
type PullOptions struct {
	AuthFile string
	Insecure bool
	Progress io.Writer
	Terminal bool
	// OnLayer gets each blob's progress, which the CLI's pull writes as JSON
	// lines to the pipe given by --layer-progress-fd.
	OnLayer func(LayerProgress)
	// Keyring holds the pod's pull secrets, handed to the CLI's pull on its
	// stdin (--keyring-stdin), never through a file.
	Keyring *Keyring
}

// CLIName is the CLI binary the lean build runs for pulls, in its own directory.
const CLIName = "podrun"

// Pull runs `podrun --root <root> pull -q REF` and returns the image it stored. The
// store's root is `<--root>/images`, so the CLI's --root is its parent.
func (s *Store) Pull(ctx context.Context, ref string, opts PullOptions) (*Image, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("pulling %s: finding the podrun CLI: %w", ref, err)
	}
	cli := filepath.Join(filepath.Dir(self), CLIName)
	if _, err := os.Stat(cli); err != nil {
		return nil, fmt.Errorf("pulling %s: the podrun CLI must be installed next to %s: %w", ref, self, err)
	}
	args := []string{"--root", filepath.Dir(s.root), "pull", "-q"}
	if opts.AuthFile != "" {
		args = append(args, "--authfile", opts.AuthFile)
	}
	if opts.Insecure {
		args = append(args, "--insecure")
	}
	if opts.Keyring != nil {
		args = append(args, "--keyring-stdin")
	}
	var progR, progW *os.File
	if opts.OnLayer != nil {
		if progR, progW, err = os.Pipe(); err != nil {
			return nil, err
		}
		defer progR.Close()
		defer progW.Close()
		args = append(args, "--layer-progress-fd", "3")
	}
	cmd := exec.CommandContext(ctx, cli, append(args, ref)...)
	if progW != nil {
		cmd.ExtraFiles = []*os.File{progW}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if opts.Progress != nil {
		cmd.Stderr = io.MultiWriter(&stderr, opts.Progress)
	}
	if opts.Keyring != nil {
		b, err := json.Marshal(opts.Keyring)
		if err != nil {
			return nil, err
		}
		cmd.Stdin = bytes.NewReader(b)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pulling %s: %w", ref, err)
	}
	relayed := make(chan struct{})
	if progR != nil {
		progW.Close() // the child holds its own copy: EOF when it exits
		go func(r *os.File) {
			defer close(relayed)
			dec := json.NewDecoder(r)
			for {
				var lp LayerProgress
				if dec.Decode(&lp) != nil {
					return
				}
				opts.OnLayer(lp)
			}
		}(progR)
	} else {
		close(relayed)
	}
	err = cmd.Wait()
	<-relayed
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndex(msg, "\nerror: "); i >= 0 {
			msg = msg[i+1:]
		}
		msg = strings.TrimPrefix(msg, "error: ")
		if msg == "" {
			msg = err.Error()
		}
		return nil, errors.New(msg)
	}
	id := strings.TrimSpace(stdout.String())
	if id == "" {
		return nil, fmt.Errorf("pulling %s: podrun pull printed no image ID", ref)
	}
	return s.Lookup(id)
}
