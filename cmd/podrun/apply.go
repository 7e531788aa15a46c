package main

import (
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/runtime"
	"github.com/podrun/podrun/serviceowner"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/supervisor"
)

func applyCommand() *cli.Command {
	return &cli.Command{
		Name:      "apply",
		Usage:     "create the pods of a manifest and start them",
		ArgsUsage: "[-f] FILE",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "filename", Aliases: []string{"f"}, Usage: "the manifest (- for stdin)"},
			&cli.BoolFlag{Name: "wait", Usage: "wait until every pod is Ready (restartPolicy Always) or has finished (Never, OnFailure)"},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "how long --wait waits (0 = forever)"},
			&cli.BoolFlag{Name: "force", Usage: "replace a pod of the same name whose spec differs"},
			&cli.BoolFlag{Name: "dry-run", Usage: "validate and print the pods with their defaults; change nothing"},
		},
		Action: runApply,
	}
}

func runApply(c *cli.Context) error {
	file := c.String("filename")
	if file == "" && c.NArg() == 1 {
		file = c.Args().First()
	}
	if file == "" || c.NArg() > 1 || (c.String("filename") != "" && c.NArg() > 0) {
		return usageError("apply needs exactly one manifest: podrun apply [-f] FILE")
	}
	manifest, err := podspec.LoadFile(file)
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	if ns := c.String("namespace"); ns != "" {
		if err := checkNamespaces(manifest, ns); err != nil {
			return err
		}
		for _, p := range manifest.Pods {
			p.Namespace = ns
		}
		for _, cm := range manifest.ConfigMaps {
			cm.Namespace = ns
		}
		for _, s := range manifest.Secrets {
			s.Namespace = ns
		}
		for _, s := range manifest.Services {
			s.Namespace = ns
		}
	}
	l := layout(c)
	// The manifest's own ConfigMaps and Secrets are stored; its pods also
	// find those the store already has.
	ownConfigMaps, ownSecrets := manifest.ConfigMaps, manifest.Secrets
	withStored(l, manifest)
	plans, err := manifest.Plans()
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	for _, p := range plans {
		for _, w := range append(append([]string(nil), p.Warnings...), runtime.Unhonoured(p.Pod)...) {
			fmt.Fprintf(os.Stderr, "Warning: %s\n", w)
		}
	}
	if c.Bool("dry-run") {
		for i, p := range plans {
			if err := supervisor.CheckImages(l, p); err != nil {
				return cli.Exit(err.Error(), exitUsage)
			}
			out := p.Pod.DeepCopy()
			out.APIVersion, out.Kind = "v1", "Pod"
			data, err := yaml.Marshal(out)
			if err != nil {
				return err
			}
			if i > 0 {
				fmt.Println("---")
			}
			os.Stdout.Write(data)
		}
		return nil
	}
	for _, cm := range ownConfigMaps {
		action, err := l.Put(store.ConfigMapKind, cm.DeepCopy())
		if err != nil {
			return err
		}
		fmt.Printf("configmap/%s %s\n", cm.Name, action)
	}
	for _, s := range ownSecrets {
		action, err := l.Put(store.SecretKind, s.DeepCopy())
		if err != nil {
			return err
		}
		fmt.Printf("secret/%s %s\n", s.Name, action)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	opts := supervisor.ApplyOptions{Force: c.Bool("force"), Exe: exe, LogLevel: c.String("log-level"), Settings: podSettings(c)}
	// The services owner (cluster DNS, Service rules) runs while pods or
	// Services exist; it is started once they are recorded, even when a
	// later object fails.
	ensured := false
	ensure := func() {
		if !ensured {
			ensured = true
			if err := serviceowner.Ensure(l, exe, c.String("log-level")); err != nil {
				fmt.Fprintf(os.Stderr, "Warning: %v\n", err)
			}
		}
	}
	if len(plans) > 0 || len(manifest.Services) > 0 {
		// Services first, so that the pods' containers see them (env vars).
		defer func() { ensure() }()
		set, err := applyServices(c, l, manifest.Services)
		if err != nil {
			return err
		}
		opts.Settings.ClusterDNS = set.ClusterDNS
	}
	var records []*store.Record
	for _, p := range plans {
		res, err := supervisor.Apply(l, p, opts)
		if err != nil {
			return err
		}
		fmt.Printf("pod/%s %s\n", res.Record.Pod.Name, res.Action)
		records = append(records, res.Record)
	}
	ensure()
	if !c.Bool("wait") {
		return nil
	}
	return waitForPods(l, records, c.Duration("timeout"))
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

// waitForPods blocks until every pod is Ready or has finished.
func waitForPods(l store.Layout, records []*store.Record, timeout time.Duration) error {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	failedPods := 0
	for _, rec := range records {
		for {
			cur, err := rec.Reload(l)
			if err != nil {
				return failed("pod %s: %v", rec.Key(), err)
			}
			if done, ok := podDone(cur.Pod); done {
				if !ok {
					failedPods++
					fmt.Fprintf(os.Stderr, "pod/%s failed: %s\n", cur.Pod.Name, failureSummary(cur.Pod))
				} else {
					fmt.Fprintf(os.Stderr, "pod/%s %s\n", cur.Pod.Name, doneWord(cur.Pod))
				}
				break
			}
			if !deadline.IsZero() && time.Now().After(deadline) {
				return cli.Exit(fmt.Sprintf("timed out after %s waiting for pod/%s (status %s)", timeout, cur.Pod.Name, statusWord(cur.Pod)), exitTimeout)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if failedPods > 0 {
		return cli.Exit("", exitFailed)
	}
	return nil
}

// podDone: Succeeded is done and fine, Failed is done and not. A pod meant to
// run to completion (restartPolicy Never or OnFailure) is waited for until it
// has finished, so that a container's moment of readiness before it fails is
// not taken for success; any other pod is done once Ready.
func podDone(pod *corev1.Pod) (done, ok bool) {
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		return true, true
	case corev1.PodFailed:
		return true, false
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		return false, false
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
			return true, true
		}
	}
	return false, false
}

func doneWord(pod *corev1.Pod) string {
	if pod.Status.Phase == corev1.PodSucceeded {
		return "succeeded"
	}
	return "ready"
}

func failureSummary(pod *corev1.Pod) string {
	s := statusWord(pod)
	if pod.Status.Message != "" {
		s += ": " + pod.Status.Message
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, st := range list {
			if t := st.State.Terminated; t != nil && t.ExitCode != 0 {
				s += fmt.Sprintf("; container %s exited with code %d (%s)", st.Name, t.ExitCode, t.Reason)
				if t.Message != "" {
					s += ": " + t.Message
				}
			}
		}
	}
	return s
}
