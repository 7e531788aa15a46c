// Command bench measures podrun on this host — pod start and its phases,
// per-container overhead, 50 pods, supervisor memory, log throughput — and,
// with -compare, runs the same work with runc and podman. It prints a
// Markdown report for the README. It fails only on correctness (a pod that
// does not run, a log that is not byte-exact, anything left on the host),
// never on time.
//
//	make bench          # podrun alone
//	make bench-compare  # also runc and podman (installs Debian's)
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

type config struct {
	podrun, image, busybox string
	runs, pods             int
	logBytes               int64
	compare                bool
	out                    string
	// dnsquery is the static DNS/connect client the Services benchmark
	// mounts into a pod (make bench builds it); empty: no Services benchmark.
	dnsquery     string
	dnsQueries   int
	servicesOnly bool
	startOnly    bool
}

func main() {
	var c config
	var logMiB int64
	flag.StringVar(&c.podrun, "podrun", "bin/podrun", "the podrun binary")
	flag.StringVar(&c.image, "image", "_output/busybox.tar", "the busybox docker-archive (make image)")
	flag.IntVar(&c.runs, "runs", 20, "runs of the pod start and per-container benchmarks")
	flag.IntVar(&c.pods, "pods", 50, "pods of the scale benchmark")
	flag.Int64Var(&logMiB, "log-mib", 200, "MiB the log benchmark's container writes")
	flag.BoolVar(&c.compare, "compare", false, "also run runc and podman (needs Debian's runc and podman)")
	flag.StringVar(&c.out, "o", "", "also write the report to this file")
	flag.StringVar(&c.dnsquery, "dnsquery", "", "the static dnsquery client (go build ./bench/dnsquery with CGO_ENABLED=0) for the Services benchmark")
	flag.IntVar(&c.dnsQueries, "dns-queries", 10000, "DNS queries of the Services benchmark")
	flag.BoolVar(&c.servicesOnly, "services-only", false, "run only the Services benchmark")
	flag.BoolVar(&c.startOnly, "start-only", false, "run only the pod start benchmark (and runc's runs beside it)")
	flag.Parse()
	c.logBytes = logMiB << 20
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "the benchmarks run real pods and need root: sudo make bench")
		os.Exit(2)
	}
	if c.dnsquery != "" {
		abs, err := filepath.Abs(c.dnsquery)
		if err != nil {
			fatal(err)
		}
		c.dnsquery = abs
	}
	for _, p := range []*string{&c.podrun, &c.image} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			fatal(err)
		}
		*p = abs
	}
	if bb, err := exec.LookPath("busybox"); err == nil {
		c.busybox = bb
	}
	os.Exit(run(c))
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

var progressStart = time.Now()

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(progressStart).Seconds(), fmt.Sprintf(format, args...))
}

// cleanups run once, at the end or on an interrupt.
var (
	cleanupMu sync.Mutex
	cleanups  []func() []string
)

func atCleanup(f func() []string) {
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	cleanups = append(cleanups, f)
}

func runCleanups() []string {
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	var problems []string
	for i := len(cleanups) - 1; i >= 0; i-- {
		problems = append(problems, cleanups[i]()...)
	}
	cleanups = nil
	return problems
}

// results are everything measured; nil parts were not measured.
type results struct {
	machine, load string
	loadEnd       string
	start         *startResult
	once          *onceResult
	scale         *scaleResult
	logs          *logsResult
	// runcOnce and runcStart are `runc run` of `true`, each run right after
	// one of podrun's in (2) and (1): the pairs of the ratios.
	runcOnce, runcStart samples
	waitCPU             *waitCPU
	podmanPlay          samples
	podmanDown          samples
	podmanScale         *podmanScale
	services            *servicesResult
	// failures are correctness failures: the bench exits 1.
	failures []string
}

func run(c config) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "bench: interrupted, cleaning up")
		for _, p := range runCleanups() {
			fmt.Fprintln(os.Stderr, "bench: cleanup:", p)
		}
		os.Exit(130)
	}()

	r := &results{machine: machine(c.podrun), load: loadAverage()}
	err := measure(c, r)
	r.failures = append(r.failures, runCleanups()...)
	if err != nil {
		r.failures = append(r.failures, err.Error())
	}
	report := r.markdown(c)
	fmt.Print(report)
	if c.out != "" {
		if err := os.WriteFile(c.out, []byte(report), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
	}
	if len(r.failures) > 0 {
		fmt.Fprintln(os.Stderr, "\nBENCH FAILED:")
		for _, f := range r.failures {
			fmt.Fprintln(os.Stderr, "  "+strings.ReplaceAll(f, "\n", "\n    "))
		}
		return 1
	}
	return 0
}

func measure(c config, r *results) error {
	progress("podrun: setting up an environment of its own")
	e, err := newEnv(c.podrun, c.image)
	if err != nil {
		return err
	}
	atCleanup(func() []string {
		var out []string
		for _, p := range e.close() {
			out = append(out, "podrun leftover at the end: "+p)
		}
		return out
	})
	if c.servicesOnly {
		if c.dnsquery == "" {
			return fmt.Errorf("-services-only needs -dnsquery")
		}
		progress("podrun: Services and cluster DNS (%d queries)", c.dnsQueries)
		r.services, err = servicesBench(e, c.dnsquery, c.dnsQueries, c.runs)
		r.loadEnd = loadAverage()
		return err
	}
	podmanStartPath, err := e.manifest("start-podman", fmt.Sprintf(podmanStartPodYAML, "start"))
	if err != nil {
		return err
	}

	// runc (whenever it is installed) and, with -compare, podman run each of
	// their runs right after podrun's, so that both meet the same load on a
	// shared host; the ratios are taken pair by pair.
	var rc *runcBench
	var pm *podmanBench
	var afterStart, afterOnce func() error
	if _, err := exec.LookPath("runc"); err == nil {
		progress("runc: an OCI bundle of the same image")
		if rc, err = newRunc(c.image); err != nil {
			return err
		}
		atCleanup(rc.close)
		if _, err := rc.runOnce(); err != nil { // warm-up
			return err
		}
		afterOnce = func() error {
			d, err := rc.runOnce()
			r.runcOnce = append(r.runcOnce, d)
			return err
		}
		afterStart = func() error {
			d, err := rc.runOnce()
			r.runcStart = append(r.runcStart, d)
			return err
		}
	} else {
		progress("runc is not installed: no ratios against `runc run` (make bench installs it)")
	}
	if c.compare {
		progress("podman: its own storage, configuration and network namespace")
		if pm, err = newPodman(c.image); err != nil {
			return err
		}
		atCleanup(func() []string {
			var out []string
			for _, p := range pm.close() {
				out = append(out, "podman cleanup: "+p)
			}
			return out
		})
		if err := pm.warmUp(podmanStartPath); err != nil {
			return err
		}
		runcAfter := afterStart
		afterStart = func() error {
			if err := pm.podStart(podmanStartPath); err != nil {
				return err
			}
			if runcAfter != nil {
				return runcAfter()
			}
			return nil
		}
	}

	progress("pod start, %d runs", c.runs)
	if r.start, err = podStart(e, c.runs, afterStart); err != nil {
		return err
	}
	if c.startOnly {
		r.loadEnd = loadAverage()
		return nil
	}
	progress("one container running true, %d runs", c.runs)
	if r.once, err = perContainer(e, c.runs, afterOnce); err != nil {
		return err
	}
	if c.compare {
		r.podmanPlay, r.podmanDown = pm.play, pm.down
	}
	progress("CPU of apply --wait while it waits")
	if r.waitCPU, err = applyWaitCPU(e); err != nil {
		return err
	}
	progress("podrun: scale, %d pods", c.pods)
	if r.scale, err = scale(e, c.pods); err != nil {
		return err
	}
	for _, run := range []*scaleRun{&r.scale.sequential, &r.scale.concurrent} {
		for _, l := range run.leftovers {
			r.failures = append(r.failures, "podrun leftover after delete --all: "+l)
		}
	}
	if c.compare {
		progress("podman: scale, %d pods one after another", c.pods)
		paths := make([]string, c.pods)
		for i := range paths {
			paths[i] = filepath.Join(e.dir, scaleName(i)+".yaml")
		}
		if r.podmanScale, err = pm.scale(paths); err != nil {
			return err
		}
	}
	progress("podrun: logs, %s", mib(c.logBytes))
	if r.logs, err = logsBench(e, c.logBytes, c.busybox); err != nil {
		return err
	}
	if !r.logs.exact {
		r.failures = append(r.failures, fmt.Sprintf("podrun logs returned %d bytes with sha256 %s; the container wrote %d bytes with sha256 %s",
			r.logs.gotBytes, r.logs.gotSum, r.logs.bytes, r.logs.wantSum))
	}
	if c.dnsquery != "" {
		progress("podrun: Services and cluster DNS (%d queries)", c.dnsQueries)
		if r.services, err = servicesBench(e, c.dnsquery, c.dnsQueries, c.runs); err != nil {
			return err
		}
	}
	r.loadEnd = loadAverage()
	return nil
}
