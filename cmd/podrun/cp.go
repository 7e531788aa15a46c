package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/runtime"
	"github.com/podrun/podrun/store"
)

func cpCommand() *cli.Command {
	return &cli.Command{
		Name:      "cp",
		Usage:     "copy files and directories to and from containers (tar through exec, as kubectl cp)",
		ArgsUsage: "POD:SRC DEST | SRC POD:DEST",
		Description: `The container needs a tar binary, as with kubectl cp.

Examples:
  # A report out of a pod
  podrun cp tests:/out/report.xml ./report.xml

  # A directory into a pod's container "app"
  podrun cp ./fixtures web:/srv/fixtures -c app`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "container", Aliases: []string{"c"}, Usage: "the container (default: the pod's default container)"},
		},
		Action: runCp,
	}
}

// remoteSpec splits "POD:PATH" (a local path with a ':' needs a '/' or '.' first, as in kubectl).
func remoteSpec(s string) (pod, p string, ok bool) {
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, ".") {
		return "", "", false
	}
	pod, p, ok = strings.Cut(s, ":")
	return pod, p, ok && pod != ""
}

func runCp(c *cli.Context) error {
	if c.NArg() != 2 {
		return usageError("cp needs a source and a destination: podrun cp POD:SRC DEST or podrun cp SRC POD:DEST")
	}
	src, dst := c.Args().Get(0), c.Args().Get(1)
	spod, spath, sremote := remoteSpec(src)
	dpod, dpath, dremote := remoteSpec(dst)
	if sremote == dremote {
		return usageError("one of source and destination must be POD:PATH, the other a local path")
	}
	pod := spod
	if dremote {
		pod = dpod
	}
	l := layout(c)
	rec, err := findPod(l, namespace(c), pod)
	if err != nil {
		return failed("%v", err)
	}
	container := c.String("container")
	if container == "" {
		names, inits := store.ContainerNames(rec.Pod)
		container = defaultContainer(rec, names, inits)
	}
	exec := func(cmd []string, stdin io.Reader, stdout io.Writer) error {
		var stderr bytes.Buffer
		code, err := execInPod(l, rec, container, cmd, runtime.ExecOptions{Stdin: stdin, Stdout: stdout, Stderr: &stderr})
		if err != nil {
			return err
		}
		if code != 0 {
			return fmt.Errorf("%s exited with code %d: %s", strings.Join(cmd, " "), code, strings.TrimSpace(stderr.String()))
		}
		return nil
	}
	if sremote {
		return cpFrom(exec, spath, dst)
	}
	return cpTo(exec, src, dpath)
}

type execFunc func(cmd []string, stdin io.Reader, stdout io.Writer) error

// cpFrom runs `tar cf - -C DIR BASE` in the container and unpacks it locally:
// into DEST/BASE when DEST is a directory, else as DEST.
func cpFrom(exec execFunc, remote, local string) error {
	remote = path.Clean(remote)
	dir, base := path.Split(remote)
	if dir == "" {
		dir = "."
	}
	target := local
	if st, err := os.Stat(local); err == nil && st.IsDir() {
		target = filepath.Join(local, base)
	}
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := exec([]string{"tar", "cf", "-", "-C", dir, base}, nil, pw)
		pw.CloseWithError(err)
		errc <- err
	}()
	n, err := untar(pr, base, target)
	_, _ = io.Copy(io.Discard, pr)
	if xerr := <-errc; xerr != nil {
		return failed("copying %s out of the container: %v", remote, xerr)
	}
	if err != nil {
		return failed("copying %s: %v", remote, err)
	}
	if n == 0 {
		return failed("%s: no such file or directory in the container", remote)
	}
	return nil
}

// untar writes the entries under base to target, refusing any that would land
// outside it (CVE-2019-1002101 is why kubectl cp checks this too).
func untar(r io.Reader, base, target string) (int, error) {
	tr := tar.NewReader(r)
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		name := path.Clean(h.Name)
		rel, ok := strings.CutPrefix(name, base)
		if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
			continue
		}
		out := filepath.Join(target, filepath.FromSlash(rel))
		if out != target && !strings.HasPrefix(out, filepath.Clean(target)+string(os.PathSeparator)) {
			return n, fmt.Errorf("%s: outside the destination", h.Name)
		}
		n++
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(out, 0o755); err != nil {
				return n, err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return n, err
			}
			f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fs.FileMode(h.Mode)&0o777)
			if err != nil {
				return n, err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return n, err
			}
		default:
			// Links and devices are skipped, as kubectl cp skips them.
			n--
		}
	}
}

// cpTo packs the local path and unpacks it in the container with
// `tar xmf - -C DIR`: into REMOTE/BASE when REMOTE is a directory there, else as REMOTE.
func cpTo(exec execFunc, local, remote string) error {
	if _, err := os.Stat(local); err != nil {
		return usageError("%s: %v", local, err)
	}
	remote = path.Clean(remote)
	dir, name := remote, filepath.Base(filepath.Clean(local))
	if exec([]string{"test", "-d", remote}, nil, io.Discard) != nil {
		dir, name = path.Split(remote)
		if dir == "" {
			dir = "."
		}
	}
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(local, p)
			entry := path.Join(name, filepath.ToSlash(rel))
			info, err := d.Info()
			if err != nil {
				return err
			}
			if !info.Mode().IsRegular() && !info.IsDir() {
				return nil
			}
			h, err := tar.FileInfoHeader(info, "")
			if err != nil {
				return err
			}
			h.Name = entry
			if info.IsDir() {
				h.Name += "/"
			}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if info.Mode().IsRegular() {
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				defer f.Close()
				_, err = io.Copy(tw, f)
				return err
			}
			return nil
		})
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	if err := exec([]string{"tar", "xmf", "-", "-C", dir}, pr, io.Discard); err != nil {
		return failed("copying %s into the container: %v", local, err)
	}
	return nil
}
