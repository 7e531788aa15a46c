package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/controllers"
	"github.com/podrun/podrun/internal/errdefs"
	"github.com/podrun/podrun/store"
)

// The rollout subcommands of a Deployment's revisions and pausing, as
// kubectl's pkg/cmd/rollout with pkg/polymorphichelpers (history.go,
// rollback.go, objectrestarter.go, objectpauser.go, objectresumer.go).
func rolloutRevisionCommands() []*cli.Command {
	return []*cli.Command{{
		Name:      "history",
		Usage:     "list the revisions of a Deployment, DaemonSet or StatefulSet, or show the pod template of one",
		ArgsUsage: "deployment/NAME | daemonset/NAME | statefulset/NAME [--revision N]",
		Flags: []cli.Flag{
			&cli.Int64Flag{Name: "revision", Usage: "show the pod template of this revision"},
		},
		Action: runRolloutHistory,
	}, {
		Name:      "undo",
		Usage:     "roll a Deployment, DaemonSet or StatefulSet back to its previous revision, or to --to-revision",
		ArgsUsage: "deployment/NAME | daemonset/NAME | statefulset/NAME [--to-revision N]",
		Flags: []cli.Flag{
			&cli.Int64Flag{Name: "to-revision", Usage: "the revision to roll back to (0: the previous one)"},
		},
		Action: runRolloutUndo,
	}, {
		Name:      "restart",
		Usage:     "restart every pod of a Deployment, DaemonSet or StatefulSet by a new rollout (the restartedAt annotation on its pod template)",
		ArgsUsage: "deployment/NAME... | daemonset/NAME... | statefulset/NAME...",
		Action:    runRolloutRestart,
	}, {
		Name:      "pause",
		Usage:     "stop rolling out a Deployment's template changes (spec.paused)",
		ArgsUsage: "deployment/NAME...",
		Action: func(c *cli.Context) error {
			return patchDeployments(c, "pause", "paused", func(d *appsv1.Deployment) (bool, error) {
				if d.Spec.Paused {
					return false, errors.New("is already paused")
				}
				d.Spec.Paused = true
				return true, nil
			})
		},
	}, {
		Name:      "resume",
		Usage:     "roll out a paused Deployment again",
		ArgsUsage: "deployment/NAME...",
		Action: func(c *cli.Context) error {
			return patchDeployments(c, "resume", "resumed", func(d *appsv1.Deployment) (bool, error) {
				if !d.Spec.Paused {
					return false, errors.New("is not paused")
				}
				d.Spec.Paused = false
				return true, nil
			})
		},
	}}
}

// rolloutDeployments reads the Deployment names of a rollout subcommand.
func rolloutDeployments(c *cli.Context, verb string, one bool) ([]string, error) {
	_, names, err := rolloutTargets(c, verb, one, store.DeploymentKind)
	return names, err
}

// rolloutTargets reads the kind and names of a rollout subcommand, which
// takes objects of the given kinds.
func rolloutTargets(c *cli.Context, verb string, one bool, kinds ...*store.Kind) (*store.Kind, []string, error) {
	args := c.Args().Slice()
	var words []string
	for _, k := range kinds {
		words = append(words, k.Aliases[0]+"/NAME")
	}
	if len(args) == 0 {
		return nil, nil, usageError("rollout %s needs one of %s: podrun rollout %s %s", verb, strings.Join(words, ", "), verb, words[0])
	}
	k, names, ok := kindSlashNames(args)
	if !ok || len(names) == 0 || (one && len(names) != 1) {
		return nil, nil, usageError("rollout %s takes %s (or KIND NAME)", verb, strings.Join(words, ", "))
	}
	if !slices.Contains(kinds, k) {
		return nil, nil, failed("no %s has been implemented for %s", verb, k.Resource())
	}
	return k, names, nil
}

// patchDeployments changes each Deployment as change says and prints
// kubectl's "deployment.apps/NAME <done>"; an error of change is kubectl's
// `error: deployments.apps "NAME" <err>` (exit 1, the others still done).
func patchDeployments(c *cli.Context, verb, done string, change func(*appsv1.Deployment) (bool, error)) error {
	names, err := rolloutDeployments(c, verb, false)
	if err != nil {
		return err
	}
	l := layout(c)
	k := store.DeploymentKind
	var errs []error
	for _, name := range names {
		err := l.Update(k, namespace(c), name, func(o store.Object) error {
			d := o.(*appsv1.Deployment)
			before := d.Spec.DeepCopy()
			if _, err := change(d); err != nil {
				return err
			}
			if !equalSpec(before, &d.Spec) {
				d.Generation++
			}
			return nil
		})
		if err != nil {
			errs = append(errs, patchError(k, name, err))
			continue
		}
		fmt.Printf("%s/%s %s\n", k.Resource(), name, done)
	}
	ensureControllers(c)
	if len(errs) > 0 {
		return failed("%v", errors.Join(errs...))
	}
	return nil
}

func equalSpec(a, b *appsv1.DeploymentSpec) bool {
	return controllers.EqualIgnoreHash(&a.Template, &b.Template) && a.Paused == b.Paused
}

// revisionsOf returns a Deployment's ReplicaSets by revision (kubectl's
// getDeploymentReplicaSets with deploymentutil.Revision).
func revisionsOf(l store.Layout, d *appsv1.Deployment) map[int64]*appsv1.ReplicaSet {
	out := map[int64]*appsv1.ReplicaSet{}
	for _, rs := range ownedReplicaSets(l, d) {
		if r := controllers.Revision(rs); r > 0 {
			out[r] = rs
		}
	}
	return out
}

// runRolloutHistory is DeploymentHistoryViewer.ViewHistory printed as
// kubectl rollout history does: "deployment.apps/web " and the table, or
// "with revision #N" and that revision's pod template.
func runRolloutHistory(c *cli.Context) error {
	k, names, err := rolloutTargets(c, "history", true, store.DeploymentKind, store.DaemonSetKind, store.StatefulSetKind)
	if err != nil {
		return err
	}
	if k != store.DeploymentKind {
		return setHistory(c, k, names[0])
	}
	l := layout(c)
	o, err := l.Get(store.DeploymentKind, namespace(c), names[0])
	if err != nil {
		return failed("%v", err)
	}
	d := o.(*appsv1.Deployment)
	revs := revisionsOf(l, d)
	rev := c.Int64("revision")
	head := fmt.Sprintf("%s/%s ", store.DeploymentKind.Resource(), d.Name)
	if len(revs) == 0 {
		fmt.Printf("%s\nNo rollout history found.\n", head)
		return nil
	}
	if rev > 0 {
		rs, ok := revs[rev]
		if !ok {
			return failed("unable to find the specified revision")
		}
		tmpl := rs.Spec.Template.DeepCopy()
		if cause := rs.Annotations[controllers.ChangeCauseAnnotation]; cause != "" {
			if tmpl.Annotations == nil {
				tmpl.Annotations = map[string]string{}
			}
			tmpl.Annotations[controllers.ChangeCauseAnnotation] = cause
		}
		return printRevision(head, rev, tmpl)
	}
	var nums []int64
	for r := range revs {
		nums = append(nums, r)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	rows := make([]historyRow, 0, len(nums))
	for _, r := range nums {
		rows = append(rows, historyRow{r, revs[r].Annotations[controllers.ChangeCauseAnnotation]})
	}
	return printHistory(head, rows)
}

// printRevision prints one revision's pod template as `kubectl rollout
// history --revision N` does: "<kind>/<name> with revision #N" and the template.
func printRevision(head string, rev int64, tmpl *corev1.PodTemplateSpec) error {
	fmt.Printf("%swith revision #%d\n", head, rev)
	w := historyTabWriter()
	describePodTemplate(w, tmpl)
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Println()
	return nil
}

// historyRow is one line of the rollout history table.
type historyRow struct {
	rev   int64
	cause string // the change-cause annotation, "" for none
}

// printHistory prints kubectl's rollout history table of rows, in order.
func printHistory(head string, rows []historyRow) error {
	fmt.Printf("%s\n", head)
	w := historyTabWriter()
	fmt.Fprintf(w, "REVISION\tCHANGE-CAUSE\n")
	for _, r := range rows {
		cause := r.cause
		if cause == "" {
			cause = "<none>"
		}
		fmt.Fprintf(w, "%s\t%s\n", strconv.FormatInt(r.rev, 10), cause)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Println()
	return nil
}

// runRolloutUndo is DeploymentRollbacker.Rollback: the template of the
// ReplicaSet of the revision (the previous one by default) becomes the
// Deployment's, with that ReplicaSet's annotations (but the controller's
// own); the deployment controller then rolls out to it.
func runRolloutUndo(c *cli.Context) error {
	k, names, err := rolloutTargets(c, "undo", true, store.DeploymentKind, store.DaemonSetKind, store.StatefulSetKind)
	if err != nil {
		return err
	}
	if k != store.DeploymentKind {
		return setUndo(c, k, names[0])
	}
	to := c.Int64("to-revision")
	if to < 0 {
		return failed("unable to find specified revision %d in history", to)
	}
	l := layout(c)
	var result string
	err = l.Update(store.DeploymentKind, namespace(c), names[0], func(o store.Object) error {
		d := o.(*appsv1.Deployment)
		if d.Spec.Paused {
			return errors.New("you cannot rollback a paused deployment; resume it first with 'podrun rollout resume' and try again")
		}
		rs, err := revisionFor(l, d, to)
		if err != nil {
			return err
		}
		if controllers.EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			result = fmt.Sprintf("skipped rollback (current template already matches revision %d)", to)
			return errUnchangedUndo
		}
		tmpl := rs.Spec.Template.DeepCopy()
		delete(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
		annotations := map[string]string{}
		for k := range controllers.AnnotationsToSkip {
			if v, ok := d.Annotations[k]; ok {
				annotations[k] = v
			}
		}
		for k, v := range rs.Annotations {
			if !controllers.AnnotationsToSkip[k] {
				annotations[k] = v
			}
		}
		d.Annotations = annotations
		d.Spec.Template = *tmpl
		d.Generation++
		result = "rolled back"
		return nil
	})
	if err != nil && !errors.Is(err, errUnchangedUndo) {
		return failed("%v", err)
	}
	fmt.Printf("%s/%s %s\n", store.DeploymentKind.Resource(), names[0], result)
	ensureControllers(c)
	return nil
}

// historyTabWriter is the tabwriter of kubectl's tabbedString (history.go).
func historyTabWriter() *tabwriter.Writer {
	return tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', 0)
}

var errUnchangedUndo = errors.New("unchanged")

// revisionFor is kubectl's deploymentRevision: the ReplicaSet of revision
// to, or with to 0 the one of the second highest revision.
func revisionFor(l store.Layout, d *appsv1.Deployment, to int64) (*appsv1.ReplicaSet, error) {
	revs := revisionsOf(l, d)
	if to > 0 {
		if rs, ok := revs[to]; ok {
			return rs, nil
		}
		return nil, fmt.Errorf("unable to find specified revision %d in history", to)
	}
	var nums []int64
	for r := range revs {
		nums = append(nums, r)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] > nums[j] })
	if len(nums) < 2 {
		return nil, fmt.Errorf("no rollout history found for deployment %q", d.Name)
	}
	return revs[nums[1]], nil
}

// patchError is the error of a rollout command's change to one object, as
// kubectl prints it: a missing object's own message, else the resource, group
// and name before the cause.
func patchError(k *store.Kind, name string, err error) error {
	if errdefs.IsNotFound(err) {
		return err
	}
	return fmt.Errorf("%s.%s %q %v", k.Plural, k.Group, name, err)
}
