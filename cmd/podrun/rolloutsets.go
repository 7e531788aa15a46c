package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/podrun/podrun/controllers"
	"github.com/podrun/podrun/store"
)

// The rollout subcommands of DaemonSets and StatefulSets, whose revisions
// are the ControllerRevisions their controllers keep (kubectl's
// polymorphichelpers: DaemonSetHistoryViewer, StatefulSetHistoryViewer,
// DaemonSetRollbacker, StatefulSetRollbacker, defaultObjectRestarter).

// setTemplate is the pod template of a DaemonSet or StatefulSet.
func setTemplate(o store.Object) *corev1.PodTemplateSpec {
	switch v := o.(type) {
	case *appsv1.DaemonSet:
		return &v.Spec.Template
	case *appsv1.StatefulSet:
		return &v.Spec.Template
	}
	return nil
}

// runRolloutRestart is kubectl rollout restart: the restartedAt annotation
// on the pod template (a paused Deployment refuses it).
func runRolloutRestart(c *cli.Context) error {
	k, names, err := rolloutTargets(c, "restart", false, store.DeploymentKind, store.DaemonSetKind, store.StatefulSetKind)
	if err != nil {
		return err
	}
	l := layout(c)
	var errs []error
	for _, name := range names {
		err := l.Update(k, namespace(c), name, func(o store.Object) error {
			var tmpl *corev1.PodTemplateSpec
			if d, ok := o.(*appsv1.Deployment); ok {
				if d.Spec.Paused {
					return errors.New("can't restart paused deployment (run rollout resume first)")
				}
				tmpl = &d.Spec.Template
			} else {
				tmpl = setTemplate(o)
			}
			if tmpl.Annotations == nil {
				tmpl.Annotations = map[string]string{}
			}
			now := time.Now().Format(time.RFC3339)
			if tmpl.Annotations[controllers.RestartedAtAnnotation] == now {
				return fmt.Errorf("failed to create patch for %s: if restart has already been triggered within the past second, please wait before attempting to trigger another", name)
			}
			tmpl.Annotations[controllers.RestartedAtAnnotation] = now
			o.SetGeneration(o.GetGeneration() + 1)
			return nil
		})
		if err != nil {
			errs = append(errs, patchError(k, name, err))
			continue
		}
		fmt.Printf("%s/%s restarted\n", k.Resource(), name)
	}
	ensureControllers(c)
	if len(errs) > 0 {
		return failed("%v", errors.Join(errs...))
	}
	return nil
}

// setHistory is the DaemonSet/StatefulSet history viewer: the revisions'
// table, or one revision's pod template.
func setHistory(c *cli.Context, k *store.Kind, name string) error {
	l := layout(c)
	o, err := l.Get(k, namespace(c), name)
	if err != nil {
		return failed("%v", err)
	}
	revs := controllers.OwnedRevisions(l, o)
	head := fmt.Sprintf("%s/%s ", k.Resource(), name)
	if len(revs) == 0 {
		fmt.Printf("%s\nNo rollout history found.\n", head)
		return nil
	}
	if rev := c.Int64("revision"); rev > 0 {
		for _, r := range revs {
			if r.Revision != rev {
				continue
			}
			tmpl, err := controllers.RevisionTemplate(r)
			if err != nil {
				return failed("%v", err)
			}
			return printRevision(head, rev, tmpl)
		}
		return failed("unable to find the specified revision")
	}
	rows := make([]historyRow, 0, len(revs))
	for _, r := range revs {
		rows = append(rows, historyRow{r.Revision, r.Annotations[controllers.ChangeCauseAnnotation]})
	}
	return printHistory(head, rows)
}

// setUndo is the DaemonSet/StatefulSet rollbacker: the template of the
// revision (the previous one by default) becomes the set's; its controller
// then rolls out to it, and that revision becomes the newest.
func setUndo(c *cli.Context, k *store.Kind, name string) error {
	to := c.Int64("to-revision")
	if to < 0 {
		return failed("unable to find specified revision %d in history", to)
	}
	l := layout(c)
	var result string
	err := l.Update(k, namespace(c), name, func(o store.Object) error {
		revs := controllers.OwnedRevisions(l, o)
		if to == 0 && len(revs) <= 1 {
			return errors.New("no last revision to roll back to")
		}
		var found *appsv1.ControllerRevision
		if to == 0 {
			found = revs[len(revs)-2]
		}
		for _, r := range revs {
			if to > 0 && r.Revision == to {
				found = r
			}
		}
		if found == nil {
			return fmt.Errorf("unable to find specified revision %d in history", to)
		}
		tmpl, err := controllers.RevisionTemplate(found)
		if err != nil {
			return err
		}
		cur := setTemplate(o)
		if apiequality.Semantic.DeepEqual(tmpl, cur) {
			result = fmt.Sprintf("skipped rollback (current template already matches revision %d)", to)
			return errUnchangedUndo
		}
		*cur = *tmpl
		o.SetGeneration(o.GetGeneration() + 1)
		result = "rolled back"
		return nil
	})
	if err != nil && !errors.Is(err, errUnchangedUndo) {
		return failed("%v", err)
	}
	fmt.Printf("%s/%s %s\n", k.Resource(), name, result)
	ensureControllers(c)
	return nil
}
