package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/podrun/podrun/controllers"
	"github.com/podrun/podrun/internal/errdefs"
	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/runtime"
	"github.com/podrun/podrun/serviceowner"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/supervisor"
)

func applyCommand() *cli.Command {
	return &cli.Command{
		Name:      "apply",
		Usage:     "create the pods of manifests and start them",
		ArgsUsage: "-f FILE|DIR|- [-f ...] | FILE",
		Description: `Examples:
  # Create the pods of a manifest and wait until they are Ready (or have finished)
  podrun apply -f pod.yaml --wait

  # Every manifest of a directory, and its subdirectories, in one step
  podrun apply -f manifests/ -R

  # A kustomization (kustomize build, as kubectl apply -k)
  podrun apply -k overlays/ci

  # From stdin; print what would be created, with the defaults, and change nothing
  cat pod.yaml | podrun apply -f - --dry-run=client -o yaml`,
		Flags: append(filenameFlags("the manifest"),
			&cli.BoolFlag{Name: "wait", Usage: "wait until every pod is Ready (restartPolicy Always) or has finished (Never, OnFailure), and every Job is Complete; a container that fails first, or a Job that fails, fails the wait (exit 1)"},
			&cli.BoolFlag{Name: "allow-restarts", Usage: "with --wait: wait through container restarts instead of failing at the first"},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "how long --wait waits (0 = forever); then exit 124"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "with --wait: no progress lines"},
			&cli.BoolFlag{Name: "force", Usage: "replace a pod of the same name whose spec differs"},
			&cli.StringFlag{Name: "dry-run", Value: "none", Usage: "client or server: validate (server: also check images) and print, change nothing; none: apply"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "name, yaml or json: print the objects instead of \"pod/NAME created\""},
		),
		Action: runApply,
	}
}

// manifestArgs are the manifests named with -f, or the one positional FILE
// podrun has always taken.
func manifestArgs(c *cli.Context, verb string) ([]string, error) {
	if !hasInput(c) && c.NArg() == 1 && verb == "apply" {
		return expandFilenames([]string{c.Args().First()}, c.Bool("recursive"))
	} else if c.NArg() > 0 && hasInput(c) {
		return nil, usageError("%s takes manifests with -f, or names, not both", verb)
	}
	if !hasInput(c) {
		return nil, usageError("%s needs a manifest: podrun %s -f FILE", verb, verb)
	}
	return inputFiles(c)
}

func runApply(c *cli.Context) error {
	if c.NArg() > 1 {
		return usageError("apply takes its manifests with -f: podrun apply -f FILE [-f FILE...]")
	}
	files, err := manifestArgs(c, "apply")
	if err != nil {
		return err
	}
	return applyManifests(c, files, applyHow{load: loadInput, report: printAction})
}

// applyHow is how applyManifests reads the manifests and reports each
// object's outcome: apply's way, or patch's.
type applyHow struct {
	load   func(string) (*podspec.Manifest, error)
	report func(resource, name, action string)
	// keepApplied leaves a pod's record of its last apply as it was, as
	// kubectl patch leaves last-applied-configuration.
	keepApplied bool
	// resize is the pods/resize subresource (patch --subresource resize).
	resize bool
}

// printAction prints what apply did to one object, kubectl's "KIND/NAME
// ACTION" (created, configured, unchanged, replaced).
func printAction(resource, name, action string) {
	fmt.Printf("%s/%s %s\n", resource, name, action)
}

// createsPod reports whether a plan is of a pod the store does not have: an
// apply that only updates pods (or finds them unchanged) starts no
// supervisor ahead.
func createsPod(l store.Layout, plans []*podspec.Plan) bool {
	for _, p := range plans {
		if _, err := store.FindPod(l, p.Pod.Namespace, p.Pod.Name); errors.Is(err, store.ErrNotFound) {
			return true
		}
	}
	return false
}

// applyManifests applies the manifests files names in one transaction.
func applyManifests(c *cli.Context, files []string, how applyHow) error {
	report := how.report
	dryRun := c.String("dry-run")
	switch dryRun {
	case "none", "client", "server":
	case "": // a verb without the flag (set image)
		dryRun = "none"
	case "true":
		dryRun = "client"
	case "false":
		dryRun = "none"
	default:
		return usageError("--dry-run=%q: want none, client or server", dryRun)
	}
	output := c.String("output")
	if output != "" && output != "name" && output != "yaml" && output != "json" {
		return usageError("--output %q: apply prints name, yaml or json", output)
	}
	l := layout(c)
	var standby *supervisor.Standby
	resumeGC := func() {}
	if dryRun == "none" {
		resumeGC = pauseGC()
		defer func() { resumeGC() }()
		// The records' JSON encoders are built on the other CPU while the
		// manifests are decoded (the pod's hash and records use them).
		go store.WarmCodecs()
		// A supervisor starts now, its Go start beside the CLI's loading,
		// checks and records, and is given the first new pod once it is
		// recorded; an apply that creates no pod discards it.
		if shim, err := shimPath(); err == nil {
			standby = supervisor.SpawnStandby(l, supervisor.ApplyOptions{Exe: shim, LogLevel: c.String("log-level")})
			defer standby.Discard()
		}
	}
	in, err := loadPlans(l, files, how.load, c.String("namespace"))
	if err != nil {
		return err
	}
	plans := in.plans
	if standby != nil && !createsPod(l, plans) {
		standby.Discard()
		standby = nil
	}
	for _, p := range plans {
		for _, w := range append(append([]string(nil), p.Warnings...), runtime.Unhonoured(p.Pod)...) {
			fmt.Fprintf(os.Stderr, "Warning: %s\n", w)
		}
	}
	unsafeSysctls := c.StringSlice("allowed-unsafe-sysctls")
	if _, err := supervisor.SysctlAllowlist(unsafeSysctls); err != nil {
		return usageError("--allowed-unsafe-sysctls: %v", err)
	}
	if dryRun != "client" {
		// A client dry run touches nothing of the host (it runs without root
		// too, where these checks would only report what root may see).
		_, hostWarnings := hostInfo(cgroupDriver(c), false)
		for _, w := range hostWarnings {
			fmt.Fprintf(os.Stderr, "Warning: %s\n", w)
		}
	}
	// An image that cannot be had yet (imagePullPolicy Never and not in the
	// store) is said at once; the pod is created as the API server does, and
	// its container waits in ErrImageNeverPull until the image is loaded.
	if dryRun != "client" {
		for _, p := range plans {
			if err := supervisor.CheckImages(l, p); err != nil {
				for _, line := range strings.Split(err.Error(), "\n") {
					fmt.Fprintf(os.Stderr, "Warning: %s; until then the containers that need it wait in ErrImageNeverPull\n", line)
				}
			}
		}
	}
	if dryRun != "none" {
		var pods []*corev1.Pod
		for _, w := range in.workloads {
			if k, ok := store.KindFor(w.Kind); ok && output == "" {
				fmt.Printf("%s/%s created (%s)\n", k.Resource(), w.Object.GetName(), map[string]string{"client": "dry run", "server": "server dry run"}[dryRun])
			}
		}
		for _, p := range plans {
			pods = append(pods, p.Pod)
			if output == "" {
				fmt.Printf("pod/%s created (%s)\n", p.Pod.Name, map[string]string{"client": "dry run", "server": "server dry run"}[dryRun])
			}
		}
		return printApplied(output, pods)
	}
	if err := checkTerminating(l, in); err != nil {
		return err
	}
	opts := supervisor.ApplyOptions{Force: c.Bool("force"), LogLevel: c.String("log-level"), Settings: podSettings(c), KeepApplied: how.keepApplied, Resize: how.resize, Standby: standby}
	// One transaction, as the API server takes one request: every pod's name
	// is reserved and every conflict (a pod that exists with a spec no update
	// may give it, an immutable object or a claim's spec changed) is found
	// before anything is stored.
	reserved, err := supervisor.Reserve(l, plans)
	if err != nil {
		return err
	}
	defer reserved.Release()
	if err := reserved.Conflicts(plans, opts); err != nil {
		return err
	}
	if err := checkUpdates(l, in); err != nil {
		return errdefs.Invalid(err)
	}
	// The Services' addresses are part of the pre-check: one that cannot be
	// allocated fails the apply before any object is stored.
	var svcApply *serviceApply
	if len(plans) > 0 || len(in.services) > 0 || len(in.workloads) > 0 {
		if svcApply, err = allocateServices(c, l, in.services); err != nil {
			return err
		}
		defer svcApply.done()
	}
	// A manifest's Namespaces first, whatever their place in it, as kubectl
	// apply orders them; objects in a namespace that has no Namespace object
	// are still applied (podrun's namespaces exist implicitly).
	for _, n := range in.namespaces {
		action, err := l.Put(store.NamespaceKind, n.DeepCopy())
		if err != nil {
			return err
		}
		report("namespace", n.Name, action)
	}
	for _, pc := range in.priorityClasses {
		action, err := l.Put(store.PriorityClassKind, pc.DeepCopy())
		if err != nil {
			return err
		}
		report("priorityclass.scheduling.k8s.io", pc.Name, action)
	}
	for _, cm := range in.configMaps {
		action, err := l.Put(store.ConfigMapKind, cm.DeepCopy())
		if err != nil {
			return err
		}
		report("configmap", cm.Name, action)
	}
	for _, s := range in.secrets {
		action, err := l.Put(store.SecretKind, s.DeepCopy())
		if err != nil {
			return err
		}
		report("secret", s.Name, action)
	}
	for _, pvc := range in.claims {
		action, err := l.Put(store.ClaimKind, pvc.DeepCopy())
		if err != nil {
			return err
		}
		report("persistentvolumeclaim", pvc.Name, action)
	}
	// The supervisors' containers are sealed copies of this binary: say so when
	// that cannot be done cheaply (the supervisor's log says it too).
	if err := os.MkdirAll(l.RunRoot, 0o700); err == nil {
		if err := runtime.ExeSealingProblem(l.RunRoot); err != nil {
			fmt.Fprintf(os.Stderr, "Warning: %s\n", err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	shim, err := shimPath()
	if err != nil {
		return err
	}
	opts.Exe = shim
	// The services owner (cluster DNS, Service rules) runs while pods or
	// Services exist; it is started once they are recorded, even when a
	// later object fails.
	ensured := false
	ensure := func() {
		if !ensured {
			ensured = true
			if err := serviceowner.Ensure(l, shim, c.String("log-level")); err != nil {
				fmt.Fprintf(os.Stderr, "Warning: %v\n", err)
			}
		}
	}
	if svcApply != nil {
		// Services first, so that the pods' containers see them (env vars).
		defer func() { ensure() }()
		err := svcApply.store(report)
		svcApply.done()
		if err != nil {
			return err
		}
		// The node's resolver settings, as recorded: one --resolv-conf per host.
		opts.Settings.ClusterDNS, opts.Settings.ResolvConf = svcApply.set.ClusterDNS, svcApply.set.ResolvConf
	}
	var records []*store.Record
	var pods []*corev1.Pod
	for _, p := range plans {
		res, err := reserved.ApplyReserved(p, opts)
		if err != nil {
			return withShimProblem(err)
		}
		if output == "" {
			report("pod", res.Record.Pod.Name, res.Action)
		}
		records = append(records, res.Record)
		pods = append(pods, res.Record.Pod)
	}
	reserved.Release() // a wait must not keep a delete of these pods waiting
	if err := printApplied(output, pods); err != nil {
		return err
	}
	// Workload objects, whose pods the controllers process makes with the
	// settings of this command.
	if len(in.workloads) > 0 {
		if err := applyWorkloads(l, in.workloads, opts.Settings, output, report); err != nil {
			return err
		}
		if err := controllers.Ensure(l, exe, c.String("log-level")); err != nil {
			fmt.Fprintf(os.Stderr, "Warning: %v\n", err)
		}
	}
	ensure()
	resumeGC()
	if !c.Bool("wait") {
		return nil
	}
	o := waitOptions{timeout: c.Duration("timeout"), allowRestarts: c.Bool("allow-restarts"), progress: os.Stderr}
	if c.Bool("quiet") {
		o.progress = nil
	}
	start := time.Now()
	if err := waitForPods(l, records, o); err != nil {
		return err
	}
	// Jobs: until Complete (exit 0) or Failed (exit 1, with the reason);
	// the other workloads until their rollout is complete (kubectl rollout status).
	var jobs []jobWait
	var rollouts []int
	for i, w := range in.workloads {
		switch w.Kind {
		case "Job":
			jobs = append(jobs, jobWait{w.Object.GetNamespace(), w.Object.GetName()})
		case "CronJob":
		default:
			rollouts = append(rollouts, i)
		}
	}
	left := func() time.Duration {
		if o.timeout <= 0 {
			return 0
		}
		return max(o.timeout-time.Since(start), time.Millisecond)
	}
	if len(rollouts) > 0 {
		ctx, cancel := deadlineContext(left())
		defer cancel()
		for _, i := range rollouts {
			w := in.workloads[i]
			k, _ := store.KindFor(w.Kind)
			if err := waitRollout(ctx, l, k, w.Object.GetNamespace(), w.Object.GetName(), o.progress, o.timeout); err != nil {
				return err
			}
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	return waitForJobs(l, jobs, batchv1.JobComplete, "true", false, left(), o.progress)
}

// checkNamespaces refuses, as kubectl does, an object whose manifest names
// another namespace than -n.
func checkNamespaces(m *podspec.Manifest, ns string) error {
	for _, o := range m.Objects {
		if o.Namespace != "" && o.Namespace != ns {
			return usageError("the namespace from the provided object %q does not match the namespace %q. You must pass '--namespace=%s' to perform this operation.", o.Namespace, ns, o.Namespace)
		}
	}
	return nil
}

// withStored adds to the manifest the stored ConfigMaps and Secrets of its
// pods' namespaces that it does not carry itself, so its pods find them.
func withStored(l store.Layout, m *podspec.Manifest) {
	type key struct{ ns, name string }
	haveCM, haveSecret := map[key]bool{}, map[key]bool{}
	for _, cm := range m.ConfigMaps {
		haveCM[key{cm.Namespace, cm.Name}] = true
	}
	for _, s := range m.Secrets {
		haveSecret[key{s.Namespace, s.Name}] = true
	}
	done := map[string]bool{}
	for _, p := range m.Pods {
		if done[p.Namespace] {
			continue
		}
		done[p.Namespace] = true
		for name, cm := range l.ConfigMaps(p.Namespace) {
			if !haveCM[key{p.Namespace, name}] {
				m.ConfigMaps = append(m.ConfigMaps, cm)
			}
		}
		for name, s := range l.Secrets(p.Namespace) {
			if !haveSecret[key{p.Namespace, name}] {
				m.Secrets = append(m.Secrets, s)
			}
		}
	}
}

// printApplied prints applied (or dry-run) objects as kubectl apply -o does.
func printApplied(output string, pods []*corev1.Pod) error {
	for i, p := range pods {
		switch output {
		case "name":
			fmt.Printf("pod/%s\n", p.Name)
		case "json":
			data, err := json.MarshalIndent(apiPod(p), "", "    ")
			if err != nil {
				return err
			}
			fmt.Printf("%s\n", data)
		case "yaml":
			data, err := yaml.Marshal(apiPod(p))
			if err != nil {
				return err
			}
			if i > 0 {
				fmt.Println("---")
			}
			os.Stdout.Write(data)
		}
	}
	return nil
}

// pauseGC turns the collector off while apply loads and records (a 256 MiB
// soft limit still bounds the heap of a huge input): the heap passes the
// runtime's first 4 MB goal there, and a cycle's ~8 ms of marking took the
// CPU the standby supervisor starts on (the bench's apply-CLI phase, three
// interleaved pairs of 10 starts: 52-53 ms with it, 42-46 without). The
// returned func puts the defaults back, before a wait and on return.
func pauseGC() func() {
	percent := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(256 << 20)
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}
