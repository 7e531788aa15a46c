package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/store"
)

// env is the bench's private podrun installation: its own root, run root,
// bridge, subnet and cgroup parent (as integration/harness_test.go does), so
// the bench never touches a user's pods, nor tests running beside it.
type env struct {
	bin string
	dir string
	l   store.Layout
}

func newEnv(bin, image string) (*env, error) {
	dir, err := os.MkdirTemp("", "podrun-bench-")
	if err != nil {
		return nil, err
	}
	subnet, err := freeSubnet()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	tmp, err := runTmpfs(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	pid := os.Getpid()
	e := &env{bin: bin, dir: dir, l: store.Layout{
		Root:         filepath.Join(dir, "root"),
		RunRoot:      filepath.Join(tmp, "run"),
		CgroupParent: fmt.Sprintf("/podrun-bench-%d", pid),
		CgroupDriver: "cgroupfs",
		Bridge:       fmt.Sprintf("prbench%d", pid%100000),
		Subnet:       subnet,
	}}
	if _, err := e.run("load", "-i", image, "--tag", "busybox:1.28"); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

// freeSubnet picks a /24 in 10.196.0.0/16 that no address or route of this
// host overlaps, so the bench's bridge cannot clash with anything running.
func freeSubnet() (string, error) {
	var used []*net.IPNet
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return "", fmt.Errorf("listing the host's addresses: %w", err)
	}
	for _, a := range addrs {
		used = append(used, a.IPNet)
	}
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return "", fmt.Errorf("listing the host's routes: %w", err)
	}
	for _, r := range routes {
		if r.Dst != nil {
			if ones, _ := r.Dst.Mask.Size(); ones > 0 { // not the default route
				used = append(used, r.Dst)
			}
		}
	}
	for i := 0; i < 250; i++ {
		third := (os.Getpid() + i) % 250
		_, cand, _ := net.ParseCIDR(fmt.Sprintf("10.196.%d.0/24", third))
		clash := false
		for _, u := range used {
			if u.Contains(cand.IP) || cand.Contains(u.IP) {
				clash = true
				break
			}
		}
		if !clash {
			return cand.String(), nil
		}
	}
	return "", errors.New("no free /24 in 10.196.0.0/16 for the bench's bridge")
}

func (e *env) globalArgs() []string {
	return []string{
		"--root", e.l.Root, "--run-root", e.l.RunRoot,
		"--bridge", e.l.Bridge, "--subnet", e.l.Subnet, "--cgroup-parent", e.l.CgroupParent,
		// A Service range of its own beside the subnet (10.196.N.0/24 → 10.195.N.0/24).
		"--service-cidr", strings.Replace(e.l.Subnet, "10.196.", "10.195.", 1),
	}
}

func (e *env) command(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, e.bin, append(e.globalArgs(), args...)...)
}

// run runs podrun and returns its stdout; a failure carries its stderr.
func (e *env) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := e.command(ctx, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("podrun %s: %w\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), nil
}

// timed runs podrun and returns how long it took from just before the
// process was started to its exit.
func (e *env) timed(args ...string) (start time.Time, took time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := e.command(ctx, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start = time.Now()
	err = cmd.Run()
	took = time.Since(start)
	if err != nil {
		err = fmt.Errorf("podrun %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return start, took, err
}

// timedCPU is timed with the user + system CPU time the process used.
func (e *env) timedCPU(args ...string) (start time.Time, took, cpu time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := e.command(ctx, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start = time.Now()
	err = cmd.Run()
	took = time.Since(start)
	if err != nil {
		return start, took, 0, fmt.Errorf("podrun %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return start, took, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// manifest writes a manifest into the env's directory and returns its path.
func (e *env) manifest(name, yaml string) (string, error) {
	path := filepath.Join(e.dir, name+".yaml")
	return path, os.WriteFile(path, []byte(yaml), 0o644)
}

// record finds a pod's record on disk.
func (e *env) record(name string) (*store.Record, error) {
	return store.FindPod(e.l, "default", name)
}

// podEvents reads a pod's events file.
func (e *env) podEvents(rec *store.Record) (podEvents, error) {
	evs, err := store.ReadEvents(rec.Paths)
	if err != nil {
		return nil, fmt.Errorf("reading the events of pod %s: %w", rec.Key(), err)
	}
	return podEvents(evs), nil
}

// podEvents are one pod's events, in the order the supervisor wrote them.
type podEvents []store.Event

// at is the time of the first event with this reason for this object
// ("" = the pod), or false.
func (evs podEvents) at(reason, object string) (time.Time, bool) {
	for _, ev := range evs {
		if ev.Reason == reason && ev.Object == object {
			return ev.Time.Time, true
		}
	}
	return time.Time{}, false
}

func (evs podEvents) must(reason, object string) (time.Time, error) {
	t, ok := evs.at(reason, object)
	if !ok {
		var have []string
		for _, ev := range evs {
			have = append(have, ev.Reason+" "+ev.Object)
		}
		return t, fmt.Errorf("no %s event for %q among %s", reason, object, strings.Join(have, ", "))
	}
	return t, nil
}

func initObject(name string) string { return "spec.initContainers{" + name + "}" }
func appObject(name string) string  { return "spec.containers{" + name + "}" }

// mtime is a file's modification time (the kernel's clock at the write).
func mtime(path string) (time.Time, error) {
	st, err := os.Stat(path)
	if err != nil {
		return time.Time{}, err
	}
	return st.ModTime(), nil
}

// statusVersion is one status.json the supervisor published, with the time it
// was written.
type statusVersion struct {
	written time.Time
	status  corev1.PodStatus
}

// readStatus reads status.json and its mtime from the same open file: the
// supervisor replaces the file by rename, so both belong to one version.
func readStatus(path string) (*statusVersion, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var v statusVersion
	v.written = st.ModTime()
	if err := json.NewDecoder(f).Decode(&v.status); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return &v, nil
}

// close deletes every pod left, checks for leftovers, and removes what the
// env owns on the host: the bridge, the cgroup parent and the directory.
func (e *env) close() []string {
	var problems []string
	if _, err := os.Stat(e.l.Root); err == nil {
		if _, err := e.run("delete", "--all", "-A", "--force"); err != nil {
			problems = append(problems, err.Error())
		}
		if _, err := e.run("delete", "svc", "--all", "-A"); err != nil {
			problems = append(problems, err.Error())
		}
	}
	problems = append(problems, leftovers(e.l)...)
	if link, err := netlink.LinkByName(e.l.Bridge); err == nil {
		_ = netlink.LinkDel(link)
	}
	removeCgroupTree(e.l.CgroupParent)
	if err := unmountTmpfs(e.dir); err != nil {
		problems = append(problems, err.Error())
	}
	if err := os.RemoveAll(e.dir); err != nil {
		problems = append(problems, fmt.Sprintf("removing %s: %v", e.dir, err))
	}
	return problems
}
