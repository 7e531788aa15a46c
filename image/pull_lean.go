//go:build podrun_lean

package image

import (
	"bytes"
	"context"
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
	cmd := exec.CommandContext(ctx, cli, append(args, ref)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if opts.Progress != nil {
		cmd.Stderr = io.MultiWriter(&stderr, opts.Progress)
	}
	if err := cmd.Run(); err != nil {
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
