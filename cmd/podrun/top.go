package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/printers"
)

func topCommand() *cli.Command {
	return &cli.Command{
		Name:  "top",
		Usage: "show the CPU and memory pods use, from their cgroups",
		Subcommands: []*cli.Command{{
			Name:      "pod",
			Aliases:   []string{"pods", "po"},
			Usage:     "CPU(cores) and MEMORY(bytes) of pods, as kubectl top pod",
			ArgsUsage: "[NAME] [-l SELECTOR]",
			Description: `CPU is measured over --window from the pod cgroup's CPU time; MEMORY is the working
set (usage minus inactive file cache), as the kubelet reports it.

Examples:
  # Every pod of the namespace
  podrun top pod

  # One pod, per container
  podrun top pod web --containers`,
			Flags: append(selectorFlags()[:1],
				&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "pods of every namespace"},
				&cli.BoolFlag{Name: "containers", Usage: "a line per container"},
				&cli.BoolFlag{Name: "no-headers", Usage: "no header line"},
				&cli.DurationFlag{Name: "window", Value: time.Second, Usage: "how long CPU use is measured"},
			),
			Action: runTop,
		}},
	}
}

// cgroupStats are one cgroup's CPU time and working set.
type cgroupStats struct {
	cpu        time.Duration
	workingSet int64
	ok         bool
}

// readCgroup reads cgroup v2 (cpu.stat, memory.current) or v1 (cpuacct.usage,
// memory.usage_in_bytes), and subtracts inactive file pages from memory as
// cAdvisor's working set does.
func readCgroup(path string) cgroupStats {
	var s cgroupStats
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		dir := filepath.Join("/sys/fs/cgroup", path)
		if v, ok := statField(filepath.Join(dir, "cpu.stat"), "usage_usec"); ok {
			s.cpu = time.Duration(v) * time.Microsecond
			s.ok = true
		}
		if v, err := readInt(filepath.Join(dir, "memory.current")); err == nil {
			inactive, _ := statField(filepath.Join(dir, "memory.stat"), "inactive_file")
			s.workingSet = max(v-inactive, 0)
		}
		return s
	}
	if v, err := readInt(filepath.Join("/sys/fs/cgroup/cpuacct", path, "cpuacct.usage")); err == nil {
		s.cpu, s.ok = time.Duration(v), true
	}
	mem := filepath.Join("/sys/fs/cgroup/memory", path)
	if v, err := readInt(filepath.Join(mem, "memory.usage_in_bytes")); err == nil {
		inactive, _ := statField(filepath.Join(mem, "memory.stat"), "total_inactive_file")
		s.workingSet = max(v-inactive, 0)
	}
	return s
}

func readInt(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}

func statField(path, key string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

func runTop(c *cli.Context) error {
	l := layout(c)
	recs, notFound, err := selectPods(c, podArgs(c.Args().Slice()), c.Bool("all-namespaces"))
	if err != nil {
		return err
	}
	if len(notFound) > 0 {
		return failed("%v", notFound[0])
	}
	type target struct {
		pod, container string
		ns             string
		path           string
	}
	var targets []target
	for _, r := range recs {
		if r.Pod.Status.Phase != corev1.PodRunning {
			continue
		}
		base := l.CgroupParent + "/pod" + string(r.Pod.UID)
		if !c.Bool("containers") {
			targets = append(targets, target{r.Pod.Name, "", r.Pod.Namespace, base})
			continue
		}
		for _, st := range r.Pod.Status.ContainerStatuses {
			if st.State.Running != nil {
				targets = append(targets, target{r.Pod.Name, st.Name, r.Pod.Namespace, base + "/" + strings.TrimPrefix(st.ContainerID, "podrun://")})
			}
		}
	}
	if len(targets) == 0 {
		return failed("metrics not available yet: no running pod")
	}
	before := make([]cgroupStats, len(targets))
	for i, t := range targets {
		before[i] = readCgroup(t.path)
	}
	start := time.Now()
	time.Sleep(c.Duration("window"))
	elapsed := time.Since(start)
	tw := printers.NewTabWriter(os.Stdout)
	if !c.Bool("no-headers") {
		if c.Bool("all-namespaces") {
			fmt.Fprint(tw, "NAMESPACE\t")
		}
		fmt.Fprint(tw, "POD\t")
		if c.Bool("containers") {
			fmt.Fprint(tw, "NAME\t")
		}
		fmt.Fprintln(tw, "CPU(cores)\tMEMORY(bytes)")
	}
	for i, t := range targets {
		after := readCgroup(t.path)
		if !after.ok || !before[i].ok {
			continue
		}
		milli := int64((after.cpu - before[i].cpu) * 1000 / elapsed)
		if c.Bool("all-namespaces") {
			fmt.Fprintf(tw, "%s\t", t.ns)
		}
		fmt.Fprintf(tw, "%s\t", t.pod)
		if c.Bool("containers") {
			fmt.Fprintf(tw, "%s\t", t.container)
		}
		fmt.Fprintf(tw, "%dm\t%dMi\n", max(milli, 0), after.workingSet/(1024*1024))
	}
	return tw.Flush()
}
