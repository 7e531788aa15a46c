//go:build podrun_image

// Command podrun-image is the part of podrun that writes images into the store:
// `pull` from a registry and `load` of a docker-archive or oci-archive. It is
// the only binary that links go.podman.io/image and storage (the registry
// client, the archive readers, the signature policy, gRPC through ocicrypt):
// the `podrun` CLI runs it for `podrun pull` and `podrun load`, podrun-shim for a
// pod's pulls, each from its own directory, so that every other command starts
// without them (a third of the CLI's page faults and package initialisers).
// For the same reason it also builds the kustomizations of -k (`kustomize`
// DIR prints their YAML): the kustomize library is the CLI's other heavy one.
// It must be built with the build tag podrun_image (the Makefile does).
//
// Exit codes are the CLI's: 0, 1 when the pull or load failed, 2 for bad usage.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/term"

	"github.com/podrun/podrun/image"
	"github.com/podrun/podrun/store"
)

// version is set by the Makefile (-X main.version=...), as the CLI's.
var version = "v0.0.0-dev"

// errUsage marks an error of the command line (exit 2).
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "error:", strings.TrimSuffix(err.Error(), ": "+errUsage.Error()))
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func usage(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, errUsage)...)
}

func run(ctx context.Context, args []string, stdin *os.File, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(image.HelperName, flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", store.DefaultRoot, "where images, pod records and logs are kept (the store is ROOT/images)")
	if err := fs.Parse(args); err != nil {
		return usage("%v", err)
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return usage("%s pulls and loads images and builds kustomizations for podrun (pull, load, kustomize, version): run `podrun pull`, `podrun load` or podrun with -k", image.HelperName)
	}
	l := store.Layout{Root: *root}
	switch rest[0] {
	case "pull":
		return pull(ctx, l, rest[1:], stdin, stdout, stderr)
	case "load":
		return load(ctx, l, rest[1:], stdin, stdout, stderr)
	case "kustomize":
		return kustomize(rest[1:], stdout)
	case "version":
		fmt.Fprintln(stdout, image.HelperName, version)
		return nil
	default:
		return usage("unknown command %q (pull, load, kustomize, version)", rest[0])
	}
}

// pull is `podrun pull`: --keyring-stdin and --layer-progress-fd serve
// podrun-shim, which hands a pod's pull secrets on stdin (never a file) and
// reads each blob's progress back as JSON lines.
func pull(ctx context.Context, l store.Layout, args []string, stdin *os.File, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pull", flag.ContinueOnError)
	fs.SetOutput(stderr)
	authFile := fs.String("authfile", "", "registry credentials")
	insecure := fs.Bool("insecure", false, "allow HTTP and unverified TLS for this registry")
	quiet := fs.Bool("q", false, "print only the image ID")
	keyringStdin := fs.Bool("keyring-stdin", false, "read the pod's pull secrets (JSON) from stdin")
	progressFD := fs.Int("layer-progress-fd", 0, "write each blob's progress as JSON lines to this descriptor")
	if err := fs.Parse(args); err != nil {
		return usage("pull: %v", err)
	}
	if fs.NArg() != 1 {
		return usage("pull needs one image reference")
	}
	s, err := image.Open(l.ImagesDir())
	if err != nil {
		return err
	}
	opts := image.PullOptions{AuthFile: *authFile, Insecure: *insecure}
	if !*quiet {
		opts.Progress = stderr
		if f, ok := stderr.(*os.File); ok {
			opts.Terminal = term.IsTerminal(int(f.Fd()))
		}
	}
	if *keyringStdin {
		opts.Keyring = &image.Keyring{}
		if err := json.NewDecoder(stdin).Decode(opts.Keyring); err != nil {
			return usage("--keyring-stdin: %v", err)
		}
	}
	if *progressFD > 0 {
		f := os.NewFile(uintptr(*progressFD), "layer-progress")
		if f == nil {
			return usage("--layer-progress-fd %d: not a descriptor", *progressFD)
		}
		defer f.Close()
		enc := json.NewEncoder(f)
		var mu sync.Mutex
		opts.OnLayer = func(lp image.LayerProgress) {
			mu.Lock()
			defer mu.Unlock()
			_ = enc.Encode(lp)
		}
	}
	img, err := s.Pull(ctx, fs.Arg(0), opts)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, img.ID)
	return nil
}

// load is `podrun load`: an archive from -i, or from stdin.
func load(ctx context.Context, l store.Layout, args []string, stdin *os.File, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	input := fs.String("i", "", "the archive (- or none: stdin)")
	tag := fs.String("tag", "", "name the loaded image")
	if err := fs.Parse(args); err != nil {
		return usage("load: %v", err)
	}
	if fs.NArg() != 0 {
		return usage("load takes no arguments: podrun load -i FILE, or an archive on stdin")
	}
	path := *input
	if path == "" || path == "-" {
		if term.IsTerminal(int(stdin.Fd())) {
			return usage("load needs an archive: podrun load -i FILE, or one on stdin")
		}
		// The archive readers need a file they can seek in: stdin is copied
		// next to the store first (same file system, root's).
		tmp, err := stdinToFile(ctx, l.Root, stdin, stderr)
		if err != nil {
			return fmt.Errorf("reading the archive from stdin: %w", err)
		}
		defer os.Remove(tmp)
		path = tmp
	}
	s, err := image.Open(l.ImagesDir())
	if err != nil {
		return err
	}
	imgs, err := s.Load(ctx, path, *tag, stderr)
	if err != nil {
		return err
	}
	for _, img := range imgs {
		fmt.Fprintf(stdout, "Loaded image: %s\n", strings.Join(img.Names, ", "))
	}
	return nil
}

// stdinToFile copies r into a new file under dir and returns its path. A
// read of stdin does not return for a signal: once ctx ends (SIGINT,
// SIGTERM) the copy is removed and the process ends at once (exit 130).
func stdinToFile(ctx context.Context, dir string, r io.Reader, stderr io.Writer) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".load-stdin-*.tar")
	if err != nil {
		return "", err
	}
	stop := context.AfterFunc(ctx, func() {
		os.Remove(f.Name())
		fmt.Fprintln(stderr, "error: interrupted while reading the archive from stdin")
		os.Exit(130)
	})
	defer stop()
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
