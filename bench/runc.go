package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// runcBench runs `runc run` of an OCI bundle made from the same busybox
// image, with state and cgroups of its own.
type runcBench struct {
	dir, bundle, state, cgroup string
	n                          int
}

func newRunc(image string) (*runcBench, error) {
	dir, err := os.MkdirTemp("", "podrun-bench-runc-")
	if err != nil {
		return nil, err
	}
	tmp, err := runTmpfs(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r := &runcBench{
		dir:    dir,
		bundle: filepath.Join(dir, "bundle"),
		state:  filepath.Join(tmp, "state"),
		cgroup: fmt.Sprintf("/podrun-bench-%d-runc", os.Getpid()),
	}
	if err := r.makeBundle(image); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// makeBundle unpacks the docker-archive's layers into a rootfs and writes
// runc's default spec running `true`.
func (r *runcBench) makeBundle(image string) error {
	img := filepath.Join(r.dir, "image")
	rootfs := filepath.Join(r.bundle, "rootfs")
	for _, d := range []string{img, rootfs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if out, err := exec.Command("tar", "-xf", image, "-C", img).CombinedOutput(); err != nil {
		return fmt.Errorf("unpacking %s: %w: %s", image, err, out)
	}
	var manifest []struct{ Layers []string }
	data, err := os.ReadFile(filepath.Join(img, "manifest.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &manifest); err != nil || len(manifest) != 1 {
		return fmt.Errorf("reading the manifest of %s: %v", image, err)
	}
	for _, layer := range manifest[0].Layers {
		if out, err := exec.Command("tar", "-xf", filepath.Join(img, layer), "-C", rootfs).CombinedOutput(); err != nil {
			return fmt.Errorf("unpacking layer %s: %w: %s", layer, err, out)
		}
	}
	if out, err := exec.Command("runc", "spec", "--bundle", r.bundle).CombinedOutput(); err != nil {
		return fmt.Errorf("runc spec: %w: %s", err, out)
	}
	cfgPath := filepath.Join(r.bundle, "config.json")
	data, err = os.ReadFile(cfgPath)
	if err != nil {
		return err
	}
	var spec map[string]any
	if err := json.Unmarshal(data, &spec); err != nil {
		return err
	}
	proc := spec["process"].(map[string]any)
	proc["args"] = []string{"true"}
	proc["terminal"] = false
	spec["linux"].(map[string]any)["cgroupsPath"] = r.cgroup + "/ctr"
	data, err = json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(cfgPath, data, 0o644)
}

// runOnce times one `runc run` of the bundle.
func (r *runcBench) runOnce() (time.Duration, error) {
	r.n++
	cmd := exec.Command("runc", "--root", r.state, "run", "--bundle", r.bundle, fmt.Sprintf("bench-%d", r.n))
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	t0 := time.Now()
	err := cmd.Run()
	took := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("runc run: %w: %s", err, buf.String())
	}
	return took, nil
}

func (r *runcBench) close() []string {
	var problems []string
	entries, _ := os.ReadDir(r.state)
	for _, e := range entries {
		problems = append(problems, "runc container state "+e.Name())
		_ = exec.Command("runc", "--root", r.state, "delete", "--force", e.Name()).Run()
	}
	for _, d := range cgroupDirs(r.cgroup) {
		sub, _ := os.ReadDir(d)
		for _, s := range sub {
			if s.IsDir() {
				problems = append(problems, "runc cgroup "+filepath.Join(d, s.Name()))
			}
		}
	}
	removeCgroupTree(r.cgroup)
	if err := unmountTmpfs(r.dir); err != nil {
		problems = append(problems, err.Error())
	}
	if err := os.RemoveAll(r.dir); err != nil {
		problems = append(problems, err.Error())
	}
	return problems
}
