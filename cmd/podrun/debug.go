package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/podrun/podrun/internal/errdefs"
	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/store"
	"github.com/podrun/podrun/supervisor"
)

func debugCommand() *cli.Command {
	return &cli.Command{
		Name:      "debug",
		Usage:     "run an ephemeral container in a running pod, as kubectl debug",
		ArgsUsage: "POD --image=IMAGE [-c NAME] [--target=CONTAINER] [-i|--attach] [-- COMMAND ARGS...]",
		Description: `Adds an ephemeral container to the pod (the pods/ephemeralcontainers subresource): it runs
once in the pod's network, IPC and UTS namespaces, with the pod's volumes it mounts, and with
--target in the PID namespace of that container, so its processes can be seen and traced. It is
never restarted, has no probes, ports or resources, and is stopped with the pod. Its output is
read with podrun logs POD -c NAME, and podrun exec -c NAME runs commands in it.

Examples:
  # A shell's view of the app container's processes, files under /proc/1/root
  podrun debug web --image=busybox:1.28 --target=app -c debugger -- sleep 3600
  podrun exec web -c debugger -- ps

  # A one-off check from inside the pod's network, its output printed until it ends
  podrun debug web --image=busybox:1.28 --attach -- nslookup myservice`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "image", Usage: "the ephemeral container's image (required)"},
			&cli.StringFlag{Name: "container", Aliases: []string{"c"}, Usage: "the ephemeral container's name (default debugger-XXXXX)"},
			&cli.StringFlag{Name: "target", Usage: "a container of the pod whose PID namespace the ephemeral container joins"},
			&cli.BoolFlag{Name: "stdin", Aliases: []string{"i"}, Usage: "pass stdin to the container and print its output until it ends"},
			&cli.BoolFlag{Name: "attach", Usage: "print the container's output until it ends"},
			&cli.BoolFlag{Name: "tty", Aliases: []string{"t"}, Usage: "not supported: containers get no terminal"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no messages besides the container's output"},
			&cli.BoolFlag{Name: "arguments-only", Usage: "the arguments after -- are args to the image's entrypoint, not the command"},
			&cli.StringSliceFlag{Name: "env", Usage: "NAME=VALUE environment variables (repeatable)"},
			&cli.StringFlag{Name: "image-pull-policy", Usage: "Always, IfNotPresent or Never"},
			&cli.StringFlag{Name: "profile", Value: "general", Usage: "the security profile: general (SYS_PTRACE added), legacy, baseline, restricted, netadmin or sysadmin"},
			&cli.DurationFlag{Name: "pod-running-timeout", Value: time.Minute, Usage: "with -i or --attach: how long to wait for the container to start"},
			&cli.StringFlag{Name: "copy-to", Usage: "not supported: podrun adds an ephemeral container to the pod itself"},
		},
		Action: runDebug,
	}
}

// debugProfiles are kubectl debug's profiles as they apply to an ephemeral
// container (k8s.io/kubectl/pkg/cmd/debug/profiles.go); general is the
// default since kubectl 1.36 (kubernetes#135874).
var debugProfiles = map[string]func(sc *corev1.SecurityContext) *corev1.SecurityContext{
	"legacy":   func(sc *corev1.SecurityContext) *corev1.SecurityContext { return sc },
	"baseline": func(*corev1.SecurityContext) *corev1.SecurityContext { return nil },
	"general":  func(*corev1.SecurityContext) *corev1.SecurityContext { return addCaps("SYS_PTRACE") },
	"netadmin": func(*corev1.SecurityContext) *corev1.SecurityContext { return addCaps("NET_ADMIN", "NET_RAW") },
	"sysadmin": func(*corev1.SecurityContext) *corev1.SecurityContext {
		t := true
		return &corev1.SecurityContext{Privileged: &t}
	},
	"restricted": func(*corev1.SecurityContext) *corev1.SecurityContext {
		t, f := true, false
		return &corev1.SecurityContext{
			RunAsNonRoot: &t, AllowPrivilegeEscalation: &f,
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
	},
}

func addCaps(caps ...corev1.Capability) *corev1.SecurityContext {
	return &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: caps}}
}

func runDebug(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) > 1 && args[1] == "--" {
		args = append(args[:1:1], args[2:]...)
	}
	if len(args) == 0 {
		return usageError("debug needs a pod: podrun debug POD --image=IMAGE [-- COMMAND]")
	}
	if c.String("copy-to") != "" {
		return usageError("debug --copy-to is not supported: podrun adds an ephemeral container to the running pod")
	}
	if strings.HasPrefix(args[0], "node/") || strings.HasPrefix(args[0], "nodes/") {
		return usageError("debug of a node is not supported: podrun has no node object; run a pod with hostPID and hostNetwork instead")
	}
	if c.String("image") == "" {
		return usageError("debug needs --image (the ephemeral container's image)")
	}
	if c.Bool("tty") {
		return usageError("debug -t: podrun gives containers no terminal; use -i (stdin and output, no terminal)")
	}
	profile, ok := debugProfiles[c.String("profile")]
	if !ok {
		return usageError("--profile %q: want legacy, general, baseline, restricted, netadmin or sysadmin", c.String("profile"))
	}
	name := c.String("container")
	if name == "" {
		// kubectl debug's generated name (names.SimpleNameGenerator over "debugger-").
		name = "debugger-" + utilrand.String(5)
		if !c.Bool("quiet") {
			fmt.Fprintf(os.Stderr, "Defaulting debug container name to %s.\n", name)
		}
	}
	if target := c.String("target"); target != "" && !c.Bool("quiet") {
		fmt.Fprintf(os.Stderr, "Targeting container %q. If you don't see processes from this container it may be because the container runtime doesn't support this feature.\n", target)
	}
	ec := corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: name, Image: c.String("image"), ImagePullPolicy: corev1.PullPolicy(c.String("image-pull-policy")),
			Stdin: c.Bool("stdin"), TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		},
		TargetContainerName: c.String("target"),
	}
	if c.Bool("arguments-only") {
		ec.Args = args[1:]
	} else {
		ec.Command = args[1:]
	}
	ec.Env = envFlag(c)
	ec.SecurityContext = profile(ec.SecurityContext)
	l := layout(c)
	rec, err := findPod(l, namespace(c), podArgs(args[:1])[0])
	if err != nil {
		return failed("%v", err)
	}
	pod := rec.Pod.DeepCopy()
	pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, ec)
	if _, err := addEphemeralContainers(l, pod); err != nil {
		return err
	}
	if !c.Bool("stdin") && !c.Bool("attach") {
		return nil // kubectl debug without -i or --attach says no more
	}
	ctx, stop := interruptContext()
	defer stop()
	rec, err = followRun(ctx, c, l, rec, name, c.Bool("stdin"))
	if err != nil {
		return err
	}
	// The attached run has ended: its exit code is the command's.
	for {
		cur, err := rec.Reload(l)
		if err != nil {
			return failed("pod %s: %v", rec.Pod.Name, err)
		}
		st, _ := store.ContainerStatus(cur.Pod, name)
		if t := st.State.Terminated; t != nil {
			if t.ExitCode != 0 {
				return cli.Exit("", int(t.ExitCode))
			}
			return nil
		}
		if store.SupervisorPid(cur.Paths) == 0 {
			// Its pod stopped before the container's exit was recorded.
			return failed("pod %s stopped before container %s reported its exit", cur.Pod.Name, name)
		}
		select {
		case <-ctx.Done():
			return cli.Exit("", exitFailed)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// addEphemeralContainers stores pod's ephemeral containers as the stored
// pod's (the ephemeralcontainers subresource: nothing else of pod is taken)
// and reports whether that changed it.
func addEphemeralContainers(l store.Layout, pod *corev1.Pod) (bool, error) {
	podspec.SetDefaults(pod)
	res, err := supervisor.UpdateEphemeralContainers(l, pod.Namespace, pod.Name, pod)
	if err != nil {
		if errdefs.IsInvalid(err) {
			return false, err // report: exit 2
		}
		return false, failed("%v", err)
	}
	return res.Action != "unchanged", nil
}

// patchEphemeralContainers is patch --subresource ephemeralcontainers: the
// patched pod's ephemeral containers are stored (or, with dryRun, checked).
func patchEphemeralContainers(l store.Layout, current *corev1.Pod, patched []byte, dryRun bool) (bool, error) {
	var pod corev1.Pod
	if err := json.Unmarshal(patched, &pod); err != nil {
		return false, usageError("the patched pod cannot be read: %v", err)
	}
	pod.Namespace, pod.Name = current.Namespace, current.Name
	if !dryRun {
		return addEphemeralContainers(l, &pod)
	}
	podspec.SetDefaults(&pod)
	added, err := podspec.DiffEphemeralContainers(current, &pod)
	if err != nil {
		return false, errdefs.Invalid(err)
	}
	return len(added) > 0, nil
}
