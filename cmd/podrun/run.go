package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/supervisor"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "create and run a pod of one container, as kubectl run",
		ArgsUsage: "NAME --image=IMAGE [--restart=Never] [--rm] [-i|--attach] [-- COMMAND ARGS...]",
		Description: `With -i podrun passes its stdin to the container (stdin: true, stdinOnce: true: the
container's stdin closes when podrun's does) and prints the container's output until it
ends; --attach prints the output only. Attached, podrun exits as kubectl run does: with the
container's exit code and "pod NS/NAME terminated (REASON)" when the pod failed
(restartPolicy Never), 0 when it succeeded (Never, OnFailure), 0 when the attached run ends
(Always).

Examples:
  # A one-off job in CI: its output, its exit code, nothing left behind
  podrun run check --image=busybox:1.28 --rm -i --restart=Never -- sh -c 'test -f /etc/os-release'

  # Feed the container: stdin goes to it
  echo hi | podrun run t --rm -i --restart=Never --image=busybox:1.28 -- cat

  # A long-running pod with a label and an environment variable
  podrun run web --image=nginx:1.27 --labels=app=web --env=MODE=ci`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "image", Usage: "the container image (required)"},
			&cli.StringFlag{Name: "restart", Value: "Always", Usage: "the pod's restartPolicy: Always, OnFailure or Never"},
			&cli.BoolFlag{Name: "rm", Usage: "delete the pod once it has ended (needs --attach or -i)"},
			&cli.BoolFlag{Name: "stdin", Aliases: []string{"i"}, Usage: "pass stdin to the container and print its output until it ends"},
			&cli.BoolFlag{Name: "attach", Usage: "print the container's output until it ends"},
			&cli.BoolFlag{Name: "tty", Aliases: []string{"t"}, Usage: "not supported: containers get no terminal"},
			&cli.BoolFlag{Name: "command", Usage: "the arguments after -- are the command, not args to the image's entrypoint"},
			&cli.StringSliceFlag{Name: "env", Usage: "NAME=VALUE environment variables (repeatable)"},
			&cli.StringFlag{Name: "labels", Aliases: []string{"l"}, Usage: "comma separated labels (default run=NAME)"},
			&cli.StringFlag{Name: "image-pull-policy", Usage: "Always, IfNotPresent or Never"},
			&cli.StringFlag{Name: "dry-run", Value: "none", Usage: "client: print the pod (with -o yaml|json) and create nothing"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "with --dry-run: yaml, json or name"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no messages besides the container's output"},
			&cli.DurationFlag{Name: "pod-running-timeout", Value: 5 * time.Minute, Usage: "how long to wait for the container to start"},
		},
		Action: runRun,
	}
}

func runRun(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) > 1 && args[1] == "--" {
		args = append(args[:1:1], args[2:]...)
	}
	if len(args) == 0 {
		return usageError("run needs a pod name: podrun run NAME --image=IMAGE")
	}
	name, rest := args[0], args[1:]
	if c.String("image") == "" {
		return usageError("run needs --image")
	}
	if c.Bool("tty") {
		return usageError("run -t: podrun gives containers no terminal; use -i (stdin and output, no terminal)")
	}
	attach := c.Bool("attach") || c.Bool("stdin")
	if c.Bool("rm") && !attach {
		return usageError("--rm should only be used for attached containers (-i or --attach)")
	}
	restart := corev1.RestartPolicy(c.String("restart"))
	switch restart {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
	default:
		return usageError("--restart=%s: want Always, OnFailure or Never", restart)
	}
	// As kubectl run: -i gives the container a stdin that closes with ours.
	interactive := c.Bool("stdin")
	ctr := corev1.Container{Name: name, Image: c.String("image"), ImagePullPolicy: corev1.PullPolicy(c.String("image-pull-policy")),
		Stdin: interactive, StdinOnce: interactive}
	if c.Bool("command") {
		ctr.Command = rest
	} else {
		ctr.Args = rest
	}
	ctr.Env = envFlag(c)
	labels := map[string]string{"run": name}
	if l := c.String("labels"); l != "" {
		var err error
		if labels, err = parsePairs(l); err != nil {
			return usageError("--labels %q: want KEY=VALUE,...", l)
		}
	}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace(c), Labels: labels},
		Spec:       corev1.PodSpec{RestartPolicy: restart, Containers: []corev1.Container{ctr}},
	}
	data, err := yaml.Marshal(pod)
	if err != nil {
		return err
	}
	m, err := podspec.Load(data, "podrun run")
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	for _, p := range m.Pods { // the Priority admission (loadPlans)
		if err := podspec.AdmitPriority(p, layout(c).PriorityClasses()); err != nil {
			return failed("%v", err)
		}
	}
	plans, err := m.Plans()
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	plan := plans[0]
	if dr := c.String("dry-run"); dr != "none" && dr != "false" {
		if c.String("output") == "" {
			fmt.Printf("pod/%s created (dry run)\n", name)
			return nil
		}
		return printApplied(c.String("output"), []*corev1.Pod{plan.Pod})
	}
	l := layout(c)
	if err := supervisor.CheckImages(l, plan); err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	if rec, err := findPod(l, plan.Pod.Namespace, name); err == nil && rec != nil {
		return failed("pods %q already exists", name)
	}
	shim, err := shimPath()
	if err != nil {
		return err
	}
	res, err := supervisor.Apply(l, plan, supervisor.ApplyOptions{Exe: shim, LogLevel: c.String("log-level"), Settings: podSettings(c)})
	if err != nil {
		return withShimProblem(err)
	}
	if !attach {
		fmt.Printf("pod/%s created\n", name)
		return nil
	}
	code, runErr := attachRun(c, l, res.Record, name)
	if c.Bool("rm") {
		g := int64(0)
		if err := supervisor.Delete(l, res.Record, supervisor.DeleteOptions{Force: true, GracePeriod: &g}); err != nil {
			fmt.Fprintf(os.Stderr, "error: deleting pod %s: %v\n", name, err)
		} else if !c.Bool("quiet") {
			fmt.Fprintf(os.Stderr, "pod %q deleted\n", name)
		}
	}
	if runErr != nil {
		return runErr
	}
	if code != 0 {
		return cli.Exit("", code)
	}
	return nil
}

// envFlag is the --env NAME=VALUE flags' variables (kubectl run and debug).
func envFlag(c *cli.Context) []corev1.EnvVar {
	var env []corev1.EnvVar
	for _, e := range c.StringSlice("env") {
		k, v, _ := strings.Cut(e, "=")
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	return env
}

// attachRun prints the container's output until its run ends and returns
// its exit code, as kubectl run --attach (the code of a Failed pod's
// container; 0 once a restartPolicy Always pod is Ready).
func attachRun(c *cli.Context, l store.Layout, rec *store.Record, name string) (int, error) {
	ctx, stop := interruptContext()
	defer stop()
	rec, err := followRun(ctx, c, l, rec, name, c.Bool("stdin"))
	if err != nil {
		return 0, err
	}
	// The attached run has ended. As kubectl run: a restartPolicy-Always pod
	// is done with (0); Never waits for the pod to complete, OnFailure for it
	// to succeed, and a failed pod gives its container's exit code.
	if rec.Pod.Spec.RestartPolicy == corev1.RestartPolicyAlways {
		return 0, nil
	}
	pw, err := newPodWatch(l)
	if err != nil {
		return 0, failed("watching the pod record: %v", err)
	}
	defer pw.close()
	for {
		cur, err := rec.Reload(l)
		if err != nil {
			return 0, failed("pod %s: %v", name, err)
		}
		pod := cur.View()
		st, _ := findContainerStatus(pod, name)
		switch pod.Status.Phase {
		case corev1.PodSucceeded:
			return 0, nil
		case corev1.PodFailed:
			t := st.State.Terminated
			if t == nil || t.ExitCode == 0 {
				return 0, failed("pod %s/%s failed with unknown exit code", pod.Namespace, name)
			}
			if !c.Bool("quiet") {
				msg := fmt.Sprintf("error: pod %s/%s terminated (%s)", pod.Namespace, name, t.Reason)
				if t.Message != "" {
					msg += "\n" + strings.TrimRight(t.Message, "\n")
				}
				fmt.Fprintln(os.Stderr, msg)
			}
			return int(t.ExitCode), nil
		}
		if err := pw.wait(ctx, 0, cur); err != nil {
			return 0, cli.Exit("", exitFailed)
		}
	}
}

// followRun waits (up to --pod-running-timeout) until the container has a
// run whose log can be read, feeds it podrun's stdin with stdin, and prints
// its output until the run ends; it returns the pod's record as of then.
func followRun(ctx context.Context, c *cli.Context, l store.Layout, rec *store.Record, name string, stdin bool) (*store.Record, error) {
	pw, err := newPodWatch(l)
	if err != nil {
		return nil, failed("watching the pod record: %v", err)
	}
	defer pw.close()
	tctx, cancel := context.WithTimeout(ctx, c.Duration("pod-running-timeout"))
	defer cancel()
	var run int32
	for {
		cur, err := rec.Reload(l)
		if err != nil {
			return nil, failed("pod %s: %v", rec.Pod.Name, err)
		}
		if r, err := store.LogRun(cur.Pod, name, false); err == nil {
			run, rec = r, cur
			break
		}
		if cur.Pod.Status.Phase == corev1.PodFailed {
			return nil, failed("pod %s failed: %s", cur.Pod.Name, failureSummary(cur, cur.View()))
		}
		if err := pw.wait(tctx, 0, cur); err != nil {
			if ctx.Err() != nil {
				return nil, cli.Exit("interrupted", exitFailed)
			}
			return nil, cli.Exit(fmt.Sprintf("timed out after %s waiting for container %s of pod %s to start (status %s)", c.Duration("pod-running-timeout"), name, cur.Pod.Name, statusWord(cur.View())), exitTimeout)
		}
	}
	cancel()
	done := func() bool { return store.RunEnded(l, rec, name, run) }
	if stdin {
		go feedStdin(ctx, rec.Paths.StdinFifo(name), done)
	}
	if err := logs.Read(ctx, rec.LogPath(name, run), logs.Options{Follow: true, Tail: -1}, os.Stdout, os.Stdout, done); err != nil {
		if ctx.Err() != nil {
			return nil, cli.Exit("", exitFailed)
		}
		return nil, failed("reading the output of %s: %v", name, err)
	}
	return rec, nil
}

// feedStdin copies podrun's stdin into the container's (its named pipe, see
// runtime's stdinRelay) and closes it at the end of ours, which ends the
// container's (stdinOnce). The container's end may not be open the instant
// its run is recorded: opening is retried while the run lasts.
func feedStdin(ctx context.Context, fifo string, ended func() bool) {
	var f *os.File
	for f == nil {
		var err error
		f, err = os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err == nil {
			break
		}
		if ended() || ctx.Err() != nil || !(errors.Is(err, syscall.ENXIO) || errors.Is(err, fs.ErrNotExist)) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	defer f.Close()
	_, _ = io.Copy(f, os.Stdin)
}

func findContainerStatus(pod *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name == name {
			return st, true
		}
	}
	return corev1.ContainerStatus{}, false
}
