package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/podrun/podrun/controllers"
	"github.com/podrun/podrun/internal/ownerproc"
	"github.com/podrun/podrun/store"
)

func rolloutCommand() *cli.Command {
	return &cli.Command{
		Name:  "rollout",
		Usage: "follow, list, undo and restart the rollouts of a Deployment, DaemonSet or StatefulSet; pause and resume a Deployment's",
		Subcommands: append([]*cli.Command{{
			Name:      "status",
			Usage:     "wait until the rollout of a Deployment, DaemonSet or StatefulSet is complete, as kubectl rollout status",
			ArgsUsage: "deployment/NAME | daemonset/NAME | statefulset/NAME | deployment NAME",
			Description: `Examples:
  # Wait until every replica of the new template is available
  podrun rollout status deployment/web --timeout 2m`,
			Flags: []cli.Flag{
				&cli.DurationFlag{Name: "timeout", Usage: "how long to wait (0 = forever); then exit 124"},
				&cli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Value: true, Usage: "wait for the rollout to finish; --watch=false prints the status once"},
			},
			Action: runRolloutStatus,
		}}, rolloutRevisionCommands()...),
	}
}

// rolloutStatus is kubectl's status viewer of a Deployment or DaemonSet
// (kubectl/pkg/polymorphichelpers/rollout_status.go): a message, and whether
// the rollout is done.
func rolloutStatus(obj store.Object) (string, bool, error) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		if o.Generation <= o.Status.ObservedGeneration {
			for _, c := range o.Status.Conditions {
				if c.Type == appsv1.DeploymentProgressing && c.Reason == controllers.ReasonTimedOut {
					return "", false, fmt.Errorf("deployment %q exceeded its progress deadline", o.Name)
				}
			}
			if o.Spec.Replicas != nil && o.Status.UpdatedReplicas < *o.Spec.Replicas {
				return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d out of %d new replicas have been updated...\n", o.Name, o.Status.UpdatedReplicas, *o.Spec.Replicas), false, nil
			}
			if o.Status.Replicas > o.Status.UpdatedReplicas {
				return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d old replicas are pending termination...\n", o.Name, o.Status.Replicas-o.Status.UpdatedReplicas), false, nil
			}
			if o.Status.AvailableReplicas < o.Status.UpdatedReplicas {
				return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d of %d updated replicas are available...\n", o.Name, o.Status.AvailableReplicas, o.Status.UpdatedReplicas), false, nil
			}
			return fmt.Sprintf("deployment %q successfully rolled out\n", o.Name), true, nil
		}
		return "Waiting for deployment spec update to be observed...\n", false, nil
	case *appsv1.DaemonSet:
		if o.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
			return "", true, fmt.Errorf("rollout status is only available for %s strategy type", appsv1.RollingUpdateDaemonSetStrategyType)
		}
		if o.Generation <= o.Status.ObservedGeneration {
			if o.Status.UpdatedNumberScheduled < o.Status.DesiredNumberScheduled {
				return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d out of %d new pods have been updated...\n", o.Name, o.Status.UpdatedNumberScheduled, o.Status.DesiredNumberScheduled), false, nil
			}
			if o.Status.NumberAvailable < o.Status.DesiredNumberScheduled {
				return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d of %d updated pods are available...\n", o.Name, o.Status.NumberAvailable, o.Status.DesiredNumberScheduled), false, nil
			}
			return fmt.Sprintf("daemon set %q successfully rolled out\n", o.Name), true, nil
		}
		return "Waiting for daemon set spec update to be observed...\n", false, nil
	case *appsv1.StatefulSet:
		// StatefulSetStatusViewer.Status
		if o.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
			return "", true, fmt.Errorf("rollout status is only available for %s strategy type", appsv1.RollingUpdateStatefulSetStrategyType)
		}
		if o.Status.ObservedGeneration == 0 || o.Generation > o.Status.ObservedGeneration {
			return "Waiting for statefulset spec update to be observed...\n", false, nil
		}
		if o.Spec.Replicas != nil && o.Status.ReadyReplicas < *o.Spec.Replicas {
			return fmt.Sprintf("Waiting for %d pods to be ready...\n", *o.Spec.Replicas-o.Status.ReadyReplicas), false, nil
		}
		if ru := o.Spec.UpdateStrategy.RollingUpdate; ru != nil {
			if o.Spec.Replicas != nil && ru.Partition != nil && o.Status.UpdatedReplicas < *o.Spec.Replicas-*ru.Partition {
				return fmt.Sprintf("Waiting for partitioned roll out to finish: %d out of %d new pods have been updated...\n",
					o.Status.UpdatedReplicas, *o.Spec.Replicas-*ru.Partition), false, nil
			}
			return fmt.Sprintf("partitioned roll out complete: %d new pods have been updated...\n", o.Status.UpdatedReplicas), true, nil
		}
		if o.Status.UpdateRevision != o.Status.CurrentRevision {
			return fmt.Sprintf("waiting for statefulset rolling update to complete %d pods at revision %s...\n", o.Status.UpdatedReplicas, o.Status.UpdateRevision), false, nil
		}
		return fmt.Sprintf("statefulset rolling update complete %d pods at revision %s...\n", o.Status.CurrentReplicas, o.Status.CurrentRevision), true, nil
	case *appsv1.ReplicaSet:
		// Not a kubectl rollout kind; apply --wait waits for its replicas.
		want := replicasOf(o.Spec.Replicas)
		if o.Generation <= o.Status.ObservedGeneration && o.Status.Replicas == want && o.Status.AvailableReplicas == want {
			return fmt.Sprintf("replica set %q has %d available replicas\n", o.Name, want), true, nil
		}
		return fmt.Sprintf("Waiting for replica set %q: %d of %d replicas are available...\n", o.Name, o.Status.AvailableReplicas, want), false, nil
	}
	return "", false, fmt.Errorf("no status viewer has been implemented for %T", obj)
}

// waitRollout follows one object until rolloutStatus says done, printing
// each new message to out (nil: none); it sleeps on changes of the kind's
// directory. A timeout is exit 124.
func waitRollout(ctx context.Context, l store.Layout, k *store.Kind, ns, name string, out io.Writer, timeout time.Duration) error {
	w, err := watchKind(l, k, ns)
	if err != nil {
		return err
	}
	defer w.Close()
	last := ""
	for {
		obj, err := l.Get(k, ns, name)
		if err != nil {
			return failed("%v", err)
		}
		msg, done, err := rolloutStatus(obj)
		if err != nil {
			return failed("%v", err)
		}
		if msg != last && out != nil {
			fmt.Fprint(out, msg)
		}
		last = msg
		if done {
			return nil
		}
		if err := waitChange(ctx, w); err != nil {
			if errors.Is(err, errTimeout) {
				return cli.Exit(fmt.Sprintf("timed out after %s waiting for %s/%s: %s", timeout, k.Resource(), name, last), exitTimeout)
			}
			return cli.Exit("interrupted", exitFailed)
		}
	}
}

// watchKind watches the directory of a kind's objects in a namespace.
func watchKind(l store.Layout, k *store.Kind, ns string) (*ownerproc.Watcher, error) {
	dir := filepath.Join(l.ObjectsDir(), ns, k.Plural)
	_ = os.MkdirAll(dir, 0o700)
	w, err := ownerproc.NewWatcher(func() []string { return []string{dir} })
	if err != nil {
		return nil, failed("watching %s: %v", dir, err)
	}
	return w, nil
}

// waitChange sleeps until w sees a change (at most a second) or ctx ends;
// then it returns ctx's cause (errTimeout on a timeout).
func waitChange(ctx context.Context, w *ownerproc.Watcher) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	waited := make(chan struct{})
	go func() { w.Wait(time.Second, nil); close(waited) }()
	select {
	case <-waited:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func runRolloutStatus(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) == 0 {
		return usageError("rollout status needs a deployment, daemonset or statefulset: podrun rollout status deployment/NAME")
	}
	k, names, ok := kindSlashNames(args)
	if !ok || len(names) != 1 || (k != store.DeploymentKind && k != store.DaemonSetKind && k != store.StatefulSetKind) {
		return usageError("rollout status takes one deployment, daemonset or statefulset: deployment/NAME, daemonset/NAME or statefulset/NAME")
	}
	l := layout(c)
	ensureControllers(c)
	if !c.Bool("watch") {
		obj, err := l.Get(k, namespace(c), names[0])
		if err != nil {
			return failed("%v", err)
		}
		msg, _, err := rolloutStatus(obj)
		if err != nil {
			return failed("%v", err)
		}
		fmt.Print(msg)
		return nil
	}
	ctx, cancel := deadlineContext(c.Duration("timeout"))
	defer cancel()
	return waitRollout(ctx, l, k, namespace(c), names[0], os.Stdout, c.Duration("timeout"))
}

func scaleCommand() *cli.Command {
	return &cli.Command{
		Name:      "scale",
		Usage:     "set the replicas of a Deployment, ReplicaSet or StatefulSet",
		ArgsUsage: "deployment/NAME | replicaset/NAME | statefulset/NAME | KIND NAME...  --replicas=N [--current-replicas=M]",
		Description: `Examples:
  # Three replicas of web
  podrun scale deployment/web --replicas=3
  # Only if it has 2 now
  podrun scale statefulset/db --current-replicas=2 --replicas=3`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "replicas", Value: -1, Usage: "the new number of replicas"},
			&cli.IntFlag{Name: "current-replicas", Value: -1, Usage: "precondition: scale only when the replicas are this many now (-1: no condition)"},
		},
		Action: func(c *cli.Context) error {
			n := c.Int("replicas")
			if n < 0 {
				return usageError("--replicas=COUNT is required, and COUNT must be greater than or equal to 0")
			}
			cur := c.Int("current-replicas")
			if cur < -1 {
				return usageError("The --current-replicas must be greater than or equal to -1")
			}
			args := c.Args().Slice()
			if len(args) == 0 {
				return usageError("scale needs a deployment, replicaset or statefulset: podrun scale deployment/NAME --replicas=N")
			}
			k, names, ok := kindSlashNames(args)
			if !ok || len(names) == 0 || (k != store.DeploymentKind && k != store.ReplicaSetKind && k != store.StatefulSetKind) {
				return usageError("scale takes deployments, replicasets or statefulsets: deployment/NAME, replicaset/NAME or statefulset/NAME")
			}
			l := layout(c)
			for _, name := range names {
				err := l.Update(k, namespace(c), name, func(o store.Object) error {
					// kubectl's scaler: the Scale subresource's replicas,
					// checked against --current-replicas
					// (ScalePrecondition.validate).
					var spec **int32
					var gen *int64
					switch v := o.(type) {
					case *appsv1.Deployment:
						spec, gen = &v.Spec.Replicas, &v.Generation
					case *appsv1.ReplicaSet:
						spec, gen = &v.Spec.Replicas, &v.Generation
					case *appsv1.StatefulSet:
						spec, gen = &v.Spec.Replicas, &v.Generation
					}
					if cur != -1 && int(replicasOf(*spec)) != cur {
						return fmt.Errorf("Expected replicas to be %d, was %d", cur, replicasOf(*spec))
					}
					if r := int32(n); replicasOf(*spec) != r {
						*spec, *gen = &r, *gen+1
					}
					return nil
				})
				if err != nil {
					return failed("%v", err)
				}
				fmt.Printf("%s/%s scaled\n", k.Resource(), name)
			}
			ensureControllers(c)
			return nil
		},
	}
}
