package main

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/store"
)

// The pod of (1): two init containers and one app container. podrun runs it
// with restartPolicy Always, so that `apply --wait` returns once the app is
// Ready (a run-to-completion pod would be waited for until it finishes).
const startPodYAML = `apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: Always
  initContainers:
  - name: init-a
    image: busybox:1.28
    command: ["true"]
  - name: init-b
    image: busybox:1.28
    command: ["true"]
  containers:
  - name: app
    image: busybox:1.28
    command: ["sleep", "3600"]
`

// podmanStartPodYAML is the same pod for podman: restartPolicy OnFailure,
// because podman kube play 4.3 restarts the init containers of an Always pod
// in a loop.
var podmanStartPodYAML = strings.Replace(startPodYAML, "restartPolicy: Always", "restartPolicy: OnFailure", 1)

// waitPodYAML is a pod that runs `sleep <seconds>` to completion: the bench
// measures the CPU `apply --wait` spends while it waits for it.
const waitPodYAML = `apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox:1.28
    command: ["sleep", "%d"]
`

// The pod of (2): one container that exits at once.
const oncePodYAML = `apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox:1.28
    command: ["true"]
`

// The pods of (3): one long-running container each.
const scalePodYAML = `apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  containers:
  - name: app
    image: busybox:1.28
    command: ["sleep", "3600"]
`

// startContainers are the containers of the start pod in the order they run.
var startContainers = []struct{ name, object string }{
	{"init-a", initObject("init-a")},
	{"init-b", initObject("init-b")},
	{"app", appObject("app")},
}

// The phases of a pod start, in order; they add up to apply → app running.
var startPhases = []string{
	"apply CLI: load, validate, record ¹",
	"supervisor process start ¹",
	"sandbox: cgroup, netns + veth, IPC/UTS, /etc files",
	"init container init-a (lookup → exited and released)",
	"init container init-b (lookup → exited and released)",
	"app container (lookup → started)",
}

// The steps of each container, from the supervisor's events.
var containerSteps = []string{
	"rootfs mount + spec (Pulled → Created)",
	"libcontainer create + start (Created → Started)",
	"runs, exits, released, next looked up (Started → next Pulled)",
}

type startResult struct {
	wait, running, del samples
	phases             map[string]samples
	// steps[container][step]
	steps map[string]map[string]samples
}

// podStart applies the start pod runs times with --wait and takes the phases
// from the supervisor's events and the record's file times. between, when
// set, runs after each run: the comparison's run, so that both see the same
// load on a shared host.
func podStart(e *env, runs int, between func() error) (*startResult, error) {
	res := &startResult{phases: map[string]samples{}, steps: map[string]map[string]samples{}}
	for _, c := range startContainers {
		res.steps[c.name] = map[string]samples{}
	}
	path, err := e.manifest("start", fmt.Sprintf(startPodYAML, "start"))
	if err != nil {
		return nil, err
	}
	for i := 0; i < runs; i++ {
		t0, took, err := e.timed("apply", path, "--wait", "--timeout", "2m")
		if err != nil {
			return nil, err
		}
		rec, err := e.record("start")
		if err != nil {
			return nil, err
		}
		if err := checkReady(rec.Pod); err != nil {
			return nil, err
		}
		// Files apply and the supervisor write first: the spec once the
		// manifest is validated, the pid file once the supervisor runs.
		recorded, err := mtime(rec.Paths.SpecFile())
		if err != nil {
			return nil, err
		}
		supervising, err := mtime(rec.Paths.PidFile())
		if err != nil {
			return nil, err
		}
		evs, err := e.podEvents(rec)
		if err != nil {
			return nil, err
		}
		sandbox, err := evs.must("SandboxReady", "")
		if err != nil {
			return nil, err
		}
		var pulled, created, started []time.Time
		for _, c := range startContainers {
			p, err1 := evs.must("Pulled", c.object)
			cr, err2 := evs.must("Created", c.object)
			s, err3 := evs.must("Started", c.object)
			if err := firstErr(err1, err2, err3); err != nil {
				return nil, err
			}
			pulled, created, started = append(pulled, p), append(created, cr), append(started, s)
		}
		res.wait = append(res.wait, took)
		res.running = append(res.running, started[2].Sub(t0))
		bounds := []time.Time{t0, recorded, supervising, sandbox, pulled[1], pulled[2], started[2]}
		for j, name := range startPhases {
			res.phases[name] = append(res.phases[name], bounds[j+1].Sub(bounds[j]))
		}
		for j, c := range startContainers {
			st := res.steps[c.name]
			st[containerSteps[0]] = append(st[containerSteps[0]], created[j].Sub(pulled[j]))
			st[containerSteps[1]] = append(st[containerSteps[1]], started[j].Sub(created[j]))
			if j+1 < len(startContainers) {
				st[containerSteps[2]] = append(st[containerSteps[2]], pulled[j+1].Sub(started[j]))
			}
		}
		_, del, err := e.timed("delete", "start", "--force")
		if err != nil {
			return nil, err
		}
		res.del = append(res.del, del)
		if between != nil {
			if err := between(); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// checkReady fails unless the pod is Running and Ready: what `apply --wait`
// must have waited for.
func checkReady(pod *corev1.Pod) error {
	if err := checkRunning(pod, "app"); err != nil {
		return err
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return nil
		}
	}
	return fmt.Errorf("pod %s is not Ready after apply --wait", pod.Name)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkRunning fails unless the pod is Running with the container running.
func checkRunning(pod *corev1.Pod, container string) error {
	if pod.Status.Phase != corev1.PodRunning {
		return fmt.Errorf("pod %s is %s, not Running", pod.Name, pod.Status.Phase)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container {
			if cs.State.Running == nil {
				return fmt.Errorf("pod %s: container %s is not running: %+v", pod.Name, container, cs.State)
			}
			return nil
		}
	}
	return fmt.Errorf("pod %s has no status for container %s", pod.Name, container)
}

type onceResult struct {
	// sandboxToExit is SandboxReady → exit reported: the container's whole
	// life in the supervisor (its creation may begin at SandboxReady, ahead
	// of its Created event, which is written when it is let run).
	wait, sandboxToExit, createdToStarted samples
	late                                  int
}

// perContainer runs a one-container pod whose container runs `true`;
// between is as for podStart.
func perContainer(e *env, runs int, between func() error) (*onceResult, error) {
	res := &onceResult{}
	path, err := e.manifest("once", fmt.Sprintf(oncePodYAML, "once"))
	if err != nil {
		return nil, err
	}
	for i := 0; i < runs; i++ {
		watch, err := watchExit(e.l.PodsDir(), "once", "c")
		if err != nil {
			return nil, err
		}
		_, took, err := e.timed("apply", path, "--wait", "--timeout", "2m")
		if err != nil {
			return nil, err
		}
		seen, err := watch.wait(30 * time.Second)
		if err != nil {
			return nil, err
		}
		if seen.state.ExitCode != 0 {
			return nil, fmt.Errorf("pod once: container exited %d (%s)", seen.state.ExitCode, seen.state.Reason)
		}
		rec, err := e.record("once")
		if err != nil {
			return nil, err
		}
		if rec.Pod.Status.Phase != corev1.PodSucceeded {
			return nil, fmt.Errorf("pod once is %s after apply --wait, want Succeeded", rec.Pod.Status.Phase)
		}
		evs, err := e.podEvents(rec)
		if err != nil {
			return nil, err
		}
		sandbox, err0 := evs.must("SandboxReady", "")
		created, err1 := evs.must("Created", appObject("c"))
		started, err2 := evs.must("Started", appObject("c"))
		if err := firstErr(err0, err1, err2); err != nil {
			return nil, err
		}
		res.wait = append(res.wait, took)
		res.sandboxToExit = append(res.sandboxToExit, seen.written.Sub(sandbox))
		res.createdToStarted = append(res.createdToStarted, started.Sub(created))
		if seen.late {
			res.late++
		}
		if _, err := e.run("delete", "once", "--force"); err != nil {
			return nil, err
		}
		if between != nil {
			if err := between(); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

type scaleRun struct {
	total time.Duration
	// wall is each apply --wait; running is apply → the app's Started event.
	wall, running samples
	// phases are each pod's start phases (scalePhases), in the order applied.
	phases    map[string]samples
	del       time.Duration
	leftovers []string
}

type scaleResult struct {
	sequential, concurrent scaleRun
	mem1, mem50            memFigures
}

// scale applies n pods one after another, then n at once; each time every
// pod must reach Running, and `delete --all` must leave nothing behind.
func scale(e *env, n int) (*scaleResult, error) {
	res := &scaleResult{}
	paths := make([]string, n)
	for i := range paths {
		var err error
		if paths[i], err = e.manifest(scaleName(i), fmt.Sprintf(scalePodYAML, scaleName(i))); err != nil {
			return nil, err
		}
	}

	// Memory with one pod, measured apart from the timed runs.
	if _, err := e.run("apply", paths[0], "--wait"); err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second) // past the start's transient allocations
	var err error
	if res.mem1, err = supervisorMemory(e.l); err != nil {
		return nil, err
	}
	if _, err := e.run("delete", "--all", "--force"); err != nil {
		return nil, err
	}

	progress("scale: %d pods one after another", n)
	starts := make([]time.Time, n)
	walls := make([]time.Duration, n)
	begin := time.Now()
	for i := 0; i < n; i++ {
		if starts[i], walls[i], err = e.timed("apply", paths[i], "--wait", "--timeout", "5m"); err != nil {
			return nil, err
		}
	}
	res.sequential.total = time.Since(begin)
	if err := scaleCollect(e, &res.sequential, starts, walls); err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second)
	if res.mem50, err = supervisorMemory(e.l); err != nil {
		return nil, err
	}
	if res.sequential.del, res.sequential.leftovers, err = deleteAll(e); err != nil {
		return nil, err
	}

	progress("scale: %d pods at once", n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	gate := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			starts[i], walls[i], errs[i] = e.timed("apply", paths[i], "--wait", "--timeout", "5m")
		}()
	}
	begin = time.Now()
	close(gate)
	wg.Wait()
	res.concurrent.total = time.Since(begin)
	if err := firstErr(errs...); err != nil {
		return nil, err
	}
	if err := scaleCollect(e, &res.concurrent, starts, walls); err != nil {
		return nil, err
	}
	if res.concurrent.del, res.concurrent.leftovers, err = deleteAll(e); err != nil {
		return nil, err
	}
	return res, nil
}

func scaleName(i int) string { return fmt.Sprintf("scale-%02d", i) }

// The start phases of a scale pod, as for the start pod.
var scalePhases = []string{
	"apply CLI: load, validate, record",
	"supervisor process start",
	"sandbox",
	"app container (lookup → started)",
}

// scaleCollect checks that every pod runs and gathers the per-pod figures.
func scaleCollect(e *env, run *scaleRun, starts []time.Time, walls []time.Duration) error {
	recs, err := store.ListPods(e.l, "")
	if err != nil {
		return err
	}
	if len(recs) != len(starts) {
		return fmt.Errorf("%d pods recorded, want %d", len(recs), len(starts))
	}
	for i := range starts {
		rec, err := e.record(scaleName(i))
		if err != nil {
			return err
		}
		if err := checkRunning(rec.Pod, "app"); err != nil {
			return err
		}
		evs, err := e.podEvents(rec)
		if err != nil {
			return err
		}
		started, err1 := evs.must("Started", appObject("app"))
		sandbox, err2 := evs.must("SandboxReady", "")
		recorded, err3 := mtime(rec.Paths.SpecFile())
		supervising, err4 := mtime(rec.Paths.PidFile())
		if err := firstErr(err1, err2, err3, err4); err != nil {
			return err
		}
		run.running = append(run.running, started.Sub(starts[i]))
		run.wall = append(run.wall, walls[i])
		if run.phases == nil {
			run.phases = map[string]samples{}
		}
		bounds := []time.Time{starts[i], recorded, supervising, sandbox, started}
		for j, name := range scalePhases {
			run.phases[name] = append(run.phases[name], bounds[j+1].Sub(bounds[j]))
		}
	}
	return nil
}

// deleteAll deletes every pod and lists what is left on the host.
func deleteAll(e *env) (time.Duration, []string, error) {
	_, took, err := e.timed("delete", "--all", "--force")
	if err != nil {
		return 0, nil, err
	}
	return took, leftovers(e.l), nil
}

// memFigures are the supervisors' memory, from /proc/<pid>/smaps_rollup.
type memFigures struct {
	pods                int
	rssMean, pssMean    int64
	rssMax              int64
	rssTotal, pssTotal  int64
	anonTotal, anonMean int64 // private memory: heap, stacks, runtime
}

func supervisorMemory(l store.Layout) (memFigures, error) {
	recs, err := store.ListPods(l, "")
	if err != nil {
		return memFigures{}, err
	}
	var m memFigures
	for _, rec := range recs {
		pid := store.SupervisorPid(rec.Paths)
		if pid == 0 {
			return m, fmt.Errorf("pod %s has no live supervisor", rec.Key())
		}
		rss, pss, anon, err := smapsRollup(pid)
		if err != nil {
			return m, err
		}
		m.pods++
		m.rssTotal += rss
		m.pssTotal += pss
		m.anonTotal += anon
		m.rssMax = max(m.rssMax, rss)
	}
	if m.pods == 0 {
		return m, fmt.Errorf("no pod runs")
	}
	m.rssMean = m.rssTotal / int64(m.pods)
	m.pssMean = m.pssTotal / int64(m.pods)
	m.anonMean = m.anonTotal / int64(m.pods)
	return m, nil
}

// smapsRollup returns a process's RSS, PSS and anonymous memory in bytes.
func smapsRollup(pid int) (rss, pss, anon int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0, 0, fmt.Errorf("reading the memory of process %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		var kb int64
		fmt.Sscan(f[1], &kb)
		switch f[0] {
		case "Rss:":
			rss = kb << 10
		case "Pss:":
			pss = kb << 10
		case "Anonymous:":
			anon = kb << 10
		}
	}
	return rss, pss, anon, nil
}

// waitCPU is the CPU time `apply --wait` uses while it waits: pairs of waits
// of a pod running `sleep short` and `sleep long`; the difference of a pair's
// CPU times over the difference of their wall times is the cost of waiting,
// without the CLI's own start and the apply. The long wait is 30 s longer, so
// that the start's noise (tens of ms of CPU) does not dominate the figure,
// and the median of waitPairs pairs is reported.
type waitCPU struct {
	short, long         time.Duration // wall time of each apply --wait (median)
	shortCPU, longCPU   time.Duration // user + system time of each (median)
	perMinute           time.Duration // median over the pairs
	perMinuteAll        samples
	shortSecs, longSecs int
}

// waitPairs is how many short/long pairs applyWaitCPU runs.
const waitPairs = 3

func applyWaitCPU(e *env) (*waitCPU, error) {
	w := &waitCPU{shortSecs: 1, longSecs: 31}
	run := func(secs int) (time.Duration, time.Duration, error) {
		name := fmt.Sprintf("wait-%d", secs)
		path, err := e.manifest(name, fmt.Sprintf(waitPodYAML, name, secs))
		if err != nil {
			return 0, 0, err
		}
		_, took, cpu, err := e.timedCPU("apply", path, "--wait", "--timeout", "2m")
		if err != nil {
			return 0, 0, err
		}
		if _, err := e.run("delete", name, "--force"); err != nil {
			return 0, 0, err
		}
		return took, cpu, nil
	}
	var short, long, shortCPU, longCPU samples
	for range waitPairs {
		s, sc, err := run(w.shortSecs)
		if err != nil {
			return nil, err
		}
		l, lc, err := run(w.longSecs)
		if err != nil {
			return nil, err
		}
		short, long, shortCPU, longCPU = append(short, s), append(long, l), append(shortCPU, sc), append(longCPU, lc)
		if d := l - s; d > 0 {
			w.perMinuteAll = append(w.perMinuteAll, max(0, time.Duration(float64(lc-sc)*float64(time.Minute)/float64(d))))
		}
	}
	w.short, w.long = short.quantile(0.5), long.quantile(0.5)
	w.shortCPU, w.longCPU = shortCPU.quantile(0.5), longCPU.quantile(0.5)
	w.perMinute = w.perMinuteAll.quantile(0.5)
	return w, nil
}
