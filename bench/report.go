package main

import (
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// mbps is a rate in MB/s (10^6 bytes per second), the unit of the targets.
func mbps(bytes int64, d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f MB/s", float64(bytes)/1e6/d.Seconds())
}

func mark(ok bool) string {
	if ok {
		return "✓"
	}
	return "✗"
}

// markdown renders the report: the machine, then one table per benchmark,
// then the comparison and the targets.
func (r *results) markdown(c config) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	cmd := "sudo make bench"
	if c.compare {
		cmd = "sudo make bench-compare"
	}
	p("### Benchmarks\n\n")
	if c.servicesOnly {
		p("Measured with `%s BENCH_FLAGS=\"-services-only -runs %d\"` on: %s; 1-minute load average %s at the start, %s at the end.\n\n",
			cmd, c.runs, r.machine, r.load, r.loadEnd)
	} else {
		p("Measured with `%s` (%d runs, %d pods, %s of logs) on: %s; 1-minute load average %s at the start, %s at the end.\n\n",
			cmd, c.runs, c.pods, mib(c.logBytes), r.machine, r.load, r.loadEnd)
	}
	p("podrun's run root and runc's state root are on a tmpfs, as their defaults (/run/podrun, /run/runc) are on systemd hosts; the store and runc's bundle are on disk.\n\n")

	if s := r.start; s != nil {
		p("**1. Pod start**: 2 init containers (`true`) and 1 app container (`sleep`), restartPolicy Always (`apply --wait` returns once it is Ready), image in the store; %d runs.\n\n", len(s.wait))
		t := newTable("apply → all app containers running", "min", "median", "p90")
		t.addSamples("**apply → app container running** (supervisor's Started event)", s.running)
		for _, name := range startPhases {
			t.addSamples("  phase: "+name, s.phases[name])
		}
		t.addSamples("`apply --wait` until it returns (pod Ready; waits on status.json file events)", s.wait)
		t.addSamples("`delete --force` of the pod", s.del)
		p("%s\n", t)
		t = newTable("per container (median)", "init-a", "init-b", "app")
		for _, step := range containerSteps {
			row := []string{step}
			for _, ctr := range startContainers {
				if v := s.steps[ctr.name][step]; len(v) > 0 {
					row = append(row, ms(v.median()))
				} else {
					row = append(row, "–")
				}
			}
			t.add(row...)
		}
		p("%s\n", t)
		p("¹ podrun records no timestamp of its own for these: the bench takes the mtime of `pod.json` (written by apply once the manifest is valid) and of `supervisor.pid` (written by the supervisor as it starts). The other phases come from the events' microsecond times.\n\n")
	}

	if o := r.once; o != nil {
		p("**2. Per-container overhead**: a pod of one container running `true`, restartPolicy Never; %d runs.\n\n", len(o.wait))
		t := newTable("one container running `true`", "min", "median", "p90")
		t.addSamples("`apply --wait` until it returns (pod Succeeded)", o.wait)
		t.addSamples("in the supervisor: sandbox ready → exit reported (create, start, run, exit) ²", o.sandboxToExit)
		t.addSamples("  of which Created → Started (libcontainer create + start)", o.createdToStarted)
		p("%s\n", t)
		p("² the status's `terminated.finishedAt` has one-second resolution (metav1.Time), so the bench takes the mtime of the first `status.json` the supervisor wrote with the container terminated (the supervisor reports the exit first and releases the mounts and libcontainer state after)")
		if o.late > 0 {
			p("; in %d runs the bench only saw the status written after the sandbox teardown, so those include it", o.late)
		}
		p(".\n\n")
	}

	if s := r.scale; s != nil {
		p("**3. Scale**: %d pods of one container (`sleep`), applied one after another (each `apply --wait`), then all at once; then `delete --all --force`.\n\n", c.pods)
		t := newTable("podrun", "total", "per pod p50", "per pod p99", "all Running", "`delete --all`", "leftovers")
		for _, row := range []struct {
			name string
			run  scaleRun
		}{{"one after another", s.sequential}, {"all at once", s.concurrent}} {
			left := "none"
			if len(row.run.leftovers) > 0 {
				left = fmt.Sprintf("**%d: FAIL**", len(row.run.leftovers))
			}
			t.add(row.name, ms(row.run.total), ms(row.run.wall.median()), ms(row.run.wall.p99()), "✓", ms(row.run.del), left)
		}
		p("%s\n", t)
		p("Per pod is each `apply --wait` from start to return; apply → the app's Started event: p50 %s / p99 %s one after another, %s / %s at once. Leftovers checked: mounts, pod records, netns pins, veths, the bridge, cgroups, IP allocations, nftables, container processes, supervisors.\n\n",
			ms(s.sequential.running.median()), ms(s.sequential.running.p99()), ms(s.concurrent.running.median()), ms(s.concurrent.running.p99()))

		if k := min(10, len(s.sequential.wall)/2); k > 0 {
			n := len(s.sequential.wall)
			p("Where the time of a pod goes as pods accumulate (one after another; medians):\n\n")
			t = newTable("phase", fmt.Sprintf("pods 1–%d", k), fmt.Sprintf("pods %d–%d", n-k+1, n))
			for _, name := range scalePhases {
				v := s.sequential.phases[name]
				t.add(name, ms(v[:k].median()), ms(v[n-k:].median()))
			}
			t.add("`apply --wait`", ms(s.sequential.wall[:k].median()), ms(s.sequential.wall[n-k:].median()))
			p("%s\n", t)
		}

		p("**4. Supervisor memory** (`/proc/<pid>/smaps_rollup` of each pod's supervisor, 2 s after the pods run).\n\n")
		t = newTable("pods running", "RSS per pod", "PSS per pod", "of which anonymous (heap, stacks)", "RSS max", "PSS total")
		for _, m := range []memFigures{s.mem1, s.mem50} {
			t.add(fmt.Sprint(m.pods), mib(m.rssMean), mib(m.pssMean), mib(m.anonMean), mib(m.rssMax), mib(m.pssTotal))
		}
		p("%s\n", t)
	}

	if l := r.logs; l != nil {
		p("**5. Logs**: a container writing %s of 128-byte lines to stdout as fast as it can (`cat` of a file that an init container wrote with `yes <127 characters> | head -c %d` into a memory emptyDir).\n\n", mib(l.bytes), l.bytes)
		t := newTable("logs", "figure")
		late := ""
		if l.late {
			late = " (includes the sandbox teardown)"
		}
		t.add("capture rate (Started → exit published, all bytes in the log file)"+late, fmt.Sprintf("%s (%s)", mbps(l.bytes, l.capture), ms(l.capture)))
		if l.source > 0 {
			t.add("the same `cat` on the host into a pipe (the writer alone)", fmt.Sprintf("%s (%s)", mbps(l.bytes, l.source), ms(l.source)))
		}
		t.add("log file size (CRI format)", fmt.Sprintf("%s (%.2f × the output)", mib(l.fileSize), float64(l.fileSize)/float64(l.bytes)))
		t.add("`podrun logs` output byte-exact (sha256)", fmt.Sprintf("%s %d bytes, %s…", mark(l.exact), l.gotBytes, l.gotSum[:16]))
		t.add("`podrun logs` read rate", mbps(l.gotBytes, l.read))
		p("%s\n", t)
		if len(l.followTotal) > 0 {
			p("`logs -f` delay: a container printing its own clock (µs, `adjtimex`) every 200 ms, %d lines followed by `podrun logs -f --timestamps` (started once the pod runs; %d lines written before it started are left out).\n\n", l.followLines, l.historyLines)
			t = newTable("`logs -f` delay", "min", "median", "p90")
			t.addSamples("container's clock → printed by `logs -f`", l.followTotal)
			t.addSamples("  container's clock → log record's timestamp (supervisor read it)", l.followCapture)
			t.addSamples("  log record's timestamp → printed by `logs -f`", l.followPrint)
			if len(l.stampSelf) > 0 {
				t.addSamples("the clock pipeline alone on the host (fork, awk, pipe)", l.stampSelf)
			}
			p("%s\n", t)
		}
	}

	if s := r.services; s != nil {
		p("**Services and cluster DNS**: %d A queries of `web.default.svc.cluster.local`, one after another over one UDP socket, from a pod (a static client mounted with a hostPath volume: no process per query) to the cluster DNS its resolv.conf names (the kube-dns ClusterIP, DNATed to the services owner on the bridge gateway); the time from a backend's status write saying Ready to the first connection a client pod gets through the Service's ClusterIP (it connects every millisecond); `apply --wait` of a one-container pod on an empty store (the apply starts the services owner), with the owner already running, and with 50 Services in the namespace (each container gets their environment variables); %d runs each.\n\n", s.queries, len(s.readyToTraffic))
		t := newTable("Services", "min", "median", "p90", "p99")
		t.addSamples("DNS query from a pod (round trip)", s.dnsLatency, ms(s.dnsLatency.p99()))
		t.addSamples("backend Ready (status write) → first connection through the ClusterIP", s.readyToTraffic, ms(s.readyToTraffic.p99()))
		t.addSamples("`apply --wait`, empty store (starts the services owner)", s.startFirst, ms(s.startFirst.p99()))
		t.addSamples("`apply --wait`, services owner running", s.startOwner, ms(s.startOwner.p99()))
		t.addSamples("`apply --wait`, 50 Services in the namespace", s.start50, ms(s.start50.p99()))
		p("%s\n", t)
		rate := 0.0
		if s.dnsSeconds > 0 {
			rate = float64(s.queries) / s.dnsSeconds
		}
		p("DNS: %.0f queries/s, %d failed. Pod start: empty store ÷ owner running %s, 50 Services ÷ owner running %s (medians).\n\n",
			rate, s.errors, ratio(s.startFirst.median(), s.startOwner.median()), ratio(s.start50.median(), s.startOwner.median()))
	}

	if r.runcOnce != nil && (r.once != nil || r.start != nil) {
		p("**6. Against `runc run`** (%s, an OCI bundle of the same image running `true`, `runc spec`'s defaults): each `runc run` ran right after one of podrun's runs above; the ratio is the median of the per-pair ratios.\n\n", toolVersion("runc"))
		t := newTable("median", "podrun", "`runc run`", "podrun ÷ runc (pairs)")
		pair := func(label string, a, b samples) {
			if len(a) == 0 || len(b) == 0 {
				return
			}
			v, _ := pairRatio(a, b)
			t.add(label, ms(a.median()), ms(b.median()), fmt.Sprintf("%.2f", v))
		}
		if o := r.once; o != nil {
			pair("one container `true`: supervisor sandbox ready → exit reported", o.sandboxToExit, r.runcOnce)
			pair("one container `true`: `apply --wait` (pod Succeeded)", o.wait, r.runcOnce)
		}
		if st := r.start; st != nil {
			pair("pod (1), 2 init + 1 app: apply → app container started", st.running, r.runcStart)
			pair("pod (1): `apply --wait` (pod Ready)", st.wait, r.runcStart)
		}
		p("%s\n", t)
	}

	if w := r.waitCPU; w != nil {
		p("**7. CPU of `apply --wait` while it waits**: a pod running `sleep %d` and one running `sleep %d` (restartPolicy Never), user + system time of the `apply --wait` process, %d pairs (medians); the cost of waiting is the difference of a pair's CPU times over the difference of their wall times, median of the pairs (each pair: %s).\n\n", w.shortSecs, w.longSecs, len(w.perMinuteAll), joinMs(w.perMinuteAll))
		t := newTable("`apply --wait`", "wall", "CPU")
		t.add(fmt.Sprintf("pod running `sleep %d`", w.shortSecs), ms(w.short), ms(w.shortCPU))
		t.add(fmt.Sprintf("pod running `sleep %d`", w.longSecs), ms(w.long), ms(w.longCPU))
		t.add("**CPU per minute waited**", "", ms(w.perMinute))
		p("%s\n", t)
	}

	if r.podmanPlay != nil {
		p("**Side by side** (same invocation, same image; %s with runc, cgroupfs, its own storage and network namespace).\n\n", toolVersion("podman"))
		t := newTable("median", "podrun", "other", "podrun ÷ other")
		if r.podmanPlay != nil && r.start != nil {
			t.add("pod (1): apply → app running ÷ `podman kube play`", ms(r.start.running.median()), ms(r.podmanPlay.median()), ratio(r.start.running.median(), r.podmanPlay.median()))
			t.add("pod (1): `apply --wait` ÷ `podman kube play`", ms(r.start.wait.median()), ms(r.podmanPlay.median()), ratio(r.start.wait.median(), r.podmanPlay.median()))
			t.add("pod (1): `delete --force` ÷ `podman kube down`", ms(r.start.del.median()), ms(r.podmanDown.median()), ratio(r.start.del.median(), r.podmanDown.median()))
			pr, pm := r.start.wait.median()+r.start.del.median(), r.podmanPlay.median()+r.podmanDown.median()
			t.add("pod (1): start + delete ÷ play + down", ms(pr), ms(pm), ratio(pr, pm))
		}
		if ps := r.podmanScale; ps != nil && r.scale != nil {
			s := r.scale
			t.add(fmt.Sprintf("%d pods one after another: total", c.pods), ms(s.sequential.total), ms(ps.sequential.total), ratio(s.sequential.total, ps.sequential.total))
			t.add("  per pod p50 (`apply --wait` ÷ `kube play`)", ms(s.sequential.wall.median()), ms(ps.sequential.wall.median()), ratio(s.sequential.wall.median(), ps.sequential.wall.median()))
			t.add("  per pod p99", ms(s.sequential.wall.p99()), ms(ps.sequential.wall.p99()), ratio(s.sequential.wall.p99(), ps.sequential.wall.p99()))
			conc := ms(ps.concurrent.total)
			if ps.failedConcurrent > 0 {
				conc += fmt.Sprintf(" (%d plays failed)", ps.failedConcurrent)
			}
			t.add(fmt.Sprintf("%d pods at once: total", c.pods), ms(s.concurrent.total), conc, ratio(s.concurrent.total, ps.concurrent.total))
			t.add("  per pod p50", ms(s.concurrent.wall.median()), ms(ps.concurrent.wall.median()), ratio(s.concurrent.wall.median(), ps.concurrent.wall.median()))
			t.add("  per pod p99", ms(s.concurrent.wall.p99()), ms(ps.concurrent.wall.p99()), ratio(s.concurrent.wall.p99(), ps.concurrent.wall.p99()))
			t.add(fmt.Sprintf("remove %d pods: `delete --all --force` ÷ `pod rm -a -f -t 0`", c.pods), ms(s.sequential.del), ms(ps.sequential.del), ratio(s.sequential.del, ps.sequential.del))
			t.add(fmt.Sprintf("PSS per pod at %d pods: supervisor ÷ conmons + infra", c.pods), mib(s.mem50.pssMean), mib(ps.mem50.pssMean), fmt.Sprintf("%.2f", float64(s.mem50.pssMean)/float64(max(ps.mem50.pssMean, 1))))
			// What is left accumulates: the last check lists everything.
			if left := summarize(ps.concurrent.leftovers); left != "" {
				p("podman left behind after `pod rm --all` (the bench removes it at the end): %s.\n\n", left)
			}
		}
		p("%s\n", t)
	}

	p("**Targets** (issues 8 and 17; the benchmarks report, they do not fail on time).\n\n")
	t := newTable("target", "figure", "met")
	t.right[2] = false
	if r.start != nil && r.podmanPlay != nil {
		v := float64(r.start.running.median()) / float64(r.podmanPlay.median())
		t.add("pod start ≤ 1/3 of `podman kube play`", fmt.Sprintf("%.2f (with `apply --wait`: %s)", v, ratio(r.start.wait.median(), r.podmanPlay.median())), mark(v <= 1.0/3))
	} else {
		t.add("pod start ≤ 1/3 of `podman kube play`", "run `make bench-compare`", "")
	}
	if v, ok := pairRatio(r.onceExit(), r.runcOnce); ok {
		t.add("one container ≤ 1.1 × `runc run` (issue 17)", fmt.Sprintf("%.2f", v), mark(v <= 1.1))
	} else {
		t.add("one container ≤ 1.1 × `runc run` (issue 17)", "needs runc installed", "")
	}
	if v, ok := pairRatio(r.startRunning(), r.runcStart); ok {
		t.add("2-init + 1-app pod, apply → app started ≤ 3 × `runc run`", fmt.Sprintf("%.2f", v), mark(v <= 3))
	} else {
		t.add("2-init + 1-app pod, apply → app started ≤ 3 × `runc run`", "needs runc installed", "")
	}
	if s := r.scale; s != nil {
		t.add(fmt.Sprintf("supervisor ≤ 15 MiB RSS and ≤ 5 MiB PSS per pod with %d pods", s.mem50.pods),
			fmt.Sprintf("RSS %s, PSS %s (1 pod: RSS %s)", mib(s.mem50.rssMean), mib(s.mem50.pssMean), mib(s.mem1.rssMean)),
			mark(s.mem50.rssMean <= 15<<20 && s.mem50.pssMean <= 5<<20))
		if k := min(10, len(s.sequential.wall)/2); k > 0 {
			// Each apply --wait of the sequential run, by how many pods already ran.
			first, last := s.sequential.wall[:k], s.sequential.wall[len(s.sequential.wall)-k:]
			t.add(fmt.Sprintf("linear cost up to %d pods", c.pods), fmt.Sprintf("`apply --wait` median %s for pods 1–%d, %s for pods %d–%d; PSS per pod %s with 1, %s with %d",
				ms(first.median()), k, ms(last.median()), len(s.sequential.wall)-k+1, len(s.sequential.wall), mib(s.mem1.pssMean), mib(s.mem50.pssMean), s.mem50.pods), "")
		}
		n := len(s.sequential.leftovers) + len(s.concurrent.leftovers)
		t.add("zero leaks", fmt.Sprintf("%d leftovers after 2 × %d pods", n, c.pods), mark(n == 0))
	}
	if w := r.waitCPU; w != nil {
		t.add("`apply --wait` < 50 ms of CPU per minute waited", ms(w.perMinute), mark(w.perMinute < 50*time.Millisecond))
	}
	if l := r.logs; l != nil {
		rate := float64(l.bytes) / 1e6 / l.capture.Seconds()
		t.add("log capture ≥ 200 MB/s, every byte kept", fmt.Sprintf("%.0f MB/s, byte-exact %s", rate, mark(l.exact)), mark(rate >= 200 && l.exact))
	}
	p("%s\n", t)
	if len(r.failures) > 0 {
		p("**FAILED**:\n\n")
		for _, f := range r.failures {
			p("- %s\n", strings.ReplaceAll(f, "\n", " "))
		}
		p("\n")
	}
	return b.String()
}

// toolVersion is the first line of `tool --version`, trimmed to its version.
func toolVersion(tool string) string {
	out, err := exec.Command(tool, "--version").Output()
	if err != nil {
		return tool
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}

// summarize counts leftovers by kind and place: "12 × cgroup /sys/fs/cgroup/systemd/libpod_parent/…".
func summarize(items []string) string {
	counts := map[string]int{}
	var order []string
	for _, it := range items {
		key := it
		if i := strings.LastIndex(it, "/"); i > 0 {
			key = it[:i+1] + "…"
		}
		if counts[key] == 0 {
			order = append(order, key)
		}
		counts[key]++
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%d × %s", counts[k], k))
	}
	return strings.Join(parts, ", ")
}

func (r *results) onceExit() samples {
	if r.once == nil {
		return nil
	}
	return r.once.sandboxToExit
}

func (r *results) startRunning() samples {
	if r.start == nil {
		return nil
	}
	return r.start.running
}
