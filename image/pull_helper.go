//go:build !podrun_image

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

	"github.com/podrun/podrun/internal/sibling"
)

// PullOptions configure Pull. Only podrun-image (cmd/podrun-image, built with
// the tag podrun_image) links the registry client and the archive readers
// (go.podman.io/image and storage); the CLI and podrun-shim pull by running it,
// found next to their own binary. It writes the same store.
type PullOptions struct {
	AuthFile string
	Insecure bool
	Progress io.Writer
	Terminal bool
	// OnLayer gets each blob's progress, which podrun-image's pull writes as
	// JSON lines to the pipe given by --layer-progress-fd.
	OnLayer func(LayerProgress)
	// Keyring holds the pod's pull secrets, handed to podrun-image on its
	// stdin (--keyring-stdin), never through a file.
	Keyring *Keyring
}

// HelperPath is podrun-image in the directory of the running binary.
func HelperPath() (string, error) { return sibling.Path(HelperName) }

// Pull runs `podrun-image --root <root> pull -q REF` and returns the image it
// stored. The store's root is `<--root>/images`, so the helper's --root is its parent.
func (s *Store) Pull(ctx context.Context, ref string, opts PullOptions) (*Image, error) {
	helper, err := HelperPath()
	if err != nil {
		return nil, fmt.Errorf("pulling %s: %w", ref, err)
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
	cmd := exec.CommandContext(ctx, helper, append(append(args, "--"), ref)...)
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
		return nil, fmt.Errorf("pulling %s: %s pull printed no image ID", ref, HelperName)
	}
	return s.Lookup(id)
}
