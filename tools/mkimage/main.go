// Command mkimage builds a single-layer container image archive from a root filesystem
// directory:
//
//	go run ./tools/mkimage -rootfs DIR -tag busybox:1.28 -format docker-archive -o busybox.tar \
//	    [-entrypoint ARG]... [-cmd ARG]... [-env K=V]... [-workdir DIR] [-user U] \
//	    [-stopsignal SIG] [-label K=V]... [-expose 80/tcp]... [-arch ARCH] [-os OS]
//
// -entrypoint and -cmd may be repeated (one argument each) or given once as a JSON array.
// With $SOURCE_DATE_EPOCH set, the image's creation time and every file's mtime are
// pinned to it, so the same tree always gives the same image.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	v1 "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/podrun/podrun/tools/mkimage/archive"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// argv turns repeated flags, or a single JSON array, into an argument vector.
func argv(name string, l listFlag) ([]string, error) {
	if len(l) == 1 && strings.HasPrefix(strings.TrimSpace(l[0]), "[") {
		var out []string
		if err := json.Unmarshal([]byte(l[0]), &out); err != nil {
			return nil, fmt.Errorf("-%s: invalid JSON array %q: %w", name, l[0], err)
		}
		return out, nil
	}
	return l, nil
}

func keyValues(name string, l listFlag) (map[string]string, error) {
	if len(l) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range l {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("-%s: want KEY=VALUE, got %q", name, kv)
		}
		m[k] = v
	}
	return m, nil
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	rootfs := fs.String("rootfs", "", "root filesystem directory (required)")
	tag := fs.String("tag", "", "image name, e.g. busybox:1.28 (empty: unnamed)")
	format := fs.String("format", archive.DockerArchive, "docker-archive, oci-archive or oci (a layout directory)")
	out := fs.String("o", "", "output file (required)")
	workdir := fs.String("workdir", "", "working directory")
	user := fs.String("user", "", "user[:group]")
	stopSignal := fs.String("stopsignal", "", "stop signal, e.g. SIGTERM")
	arch := fs.String("arch", "", "architecture (default: this machine's)")
	osName := fs.String("os", "", "operating system (default: linux)")
	var entrypoint, cmd, env, labels, expose listFlag
	fs.Var(&entrypoint, "entrypoint", "entrypoint argument (repeatable) or a JSON array")
	fs.Var(&cmd, "cmd", "cmd argument (repeatable) or a JSON array")
	fs.Var(&env, "env", "environment variable K=V (repeatable)")
	fs.Var(&labels, "label", "label K=V (repeatable)")
	fs.Var(&expose, "expose", "exposed port, e.g. 80/tcp (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rootfs == "" || *out == "" || fs.NArg() != 0 {
		fs.Usage()
		return fmt.Errorf("-rootfs and -o are required, and no positional arguments are accepted")
	}
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("-env: want KEY=VALUE, got %q", kv)
		}
	}
	cfg := v1.ImageConfig{Env: env, WorkingDir: *workdir, User: *user, StopSignal: *stopSignal}
	var err error
	if cfg.Entrypoint, err = argv("entrypoint", entrypoint); err != nil {
		return err
	}
	if cfg.Cmd, err = argv("cmd", cmd); err != nil {
		return err
	}
	if cfg.Labels, err = keyValues("label", labels); err != nil {
		return err
	}
	for _, p := range expose {
		if !strings.Contains(p, "/") {
			p += "/tcp"
		}
		if cfg.ExposedPorts == nil {
			cfg.ExposedPorts = map[string]struct{}{}
		}
		cfg.ExposedPorts[p] = struct{}{}
	}
	img := archive.Image{Layers: []archive.Layer{{Dir: *rootfs}}, Config: cfg, OS: *osName, Architecture: *arch}
	return archive.WriteImage(*out, *format, *tag, img)
}
