package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/urfave/cli/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podrun/podrun/internal/errdefs"
	"github.com/podrun/podrun/serviceowner"
	"github.com/podrun/podrun/store"
)

// objectTarget is one object `wait` names (svc/web), or that a selector chose.
type objectTarget struct {
	kind      *store.Kind
	namespace string
	name      string
}

// String is kubectl's kind.group/name (deployment.apps/web, service/db).
func (t objectTarget) String() string { return t.kind.Resource() + "/" + t.name }

// splitWaitArgs sorts wait's arguments as kubectl's resource builder does:
// "TYPE NAME..." or "TYPE/NAME ..." (pods without a type). Kinds are the
// store's table, so a kind added there is waited for without a change here.
func splitWaitArgs(args []string, ns string, isPod func(string) bool) (pods []string, objects []objectTarget, kindOnly *store.Kind, err error) {
	for i := range args {
		if err := checkResourceType(args[i:], isPod); err != nil {
			return nil, nil, nil, err
		}
		if !strings.Contains(args[i], "/") {
			break // TYPE NAME...: only the first word is a type
		}
	}
	if len(args) > 0 && !strings.Contains(args[0], "/") {
		if k, ok := store.KindFor(args[0]); ok {
			if len(args) == 1 {
				return nil, nil, k, nil
			}
			for _, a := range args[1:] {
				if strings.Contains(a, "/") {
					return nil, nil, nil, usageError("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'podrun wait %s/NAME')", k.Plural)
				}
				objects = append(objects, objectTarget{k, ns, a})
			}
			return nil, objects, nil, nil
		}
	}
	for i, a := range args {
		if i == 0 && isPodWord(a) {
			continue
		}
		word, name, typed := strings.Cut(a, "/")
		if !typed || isPodWord(word) {
			if typed {
				a = name
			}
			pods = append(pods, a)
			continue
		}
		k, ok := store.KindFor(word)
		if !ok {
			return nil, nil, nil, cli.Exit(fmt.Sprintf("the server doesn't have a resource type %q (podrun keeps pods and %s)", word, keptKinds()), exitFailed)
		}
		if name == "" {
			return nil, nil, nil, usageError("%q: name the %s after the slash", a, k.Name)
		}
		objects = append(objects, objectTarget{k, ns, name})
	}
	return pods, objects, nil, nil
}

// objectsFor are the objects of kind k a selector (or --all) chooses.
func objectsFor(l store.Layout, k *store.Kind, ns string, sel labels.Selector) ([]objectTarget, error) {
	list, err := l.List(k, ns)
	if err != nil {
		return nil, err
	}
	var out []objectTarget
	for _, o := range list {
		if sel.Matches(labels.Set(o.GetLabels())) {
			out = append(out, objectTarget{k, o.GetNamespace(), o.GetName()})
		}
	}
	return out, nil
}

// waitObjects is `wait` for objects of the store's kinds (Service, ConfigMap,
// Secret, and the kinds that join store.Kinds): delete, create, a condition
// in status.conditions, or a jsonpath value, each judged on the object's JSON
// as kubectl's wait judges an unstructured object. It sleeps on file events
// of the kinds' directories (every object write is a rename there).
func waitObjects(ctx context.Context, l store.Layout, targets []objectTarget, cond *waitCond, timeout time.Duration) error {
	ow, err := newObjectWatch(l, targets)
	if err != nil {
		return failed("watching the objects: %v", err)
	}
	defer ow.close()
	pending := targets
	anyDeleted := false
	for first := true; ; first = false {
		var still []objectTarget
		for _, t := range pending {
			obj, err := l.Get(t.kind, t.namespace, t.name)
			if err != nil && !errdefs.IsNotFound(err) {
				return failed("%s %s/%s: %v", t.kind.Name, t.namespace, t.name, err)
			}
			switch {
			case obj == nil && cond.kind == "delete" && first:
				// Not there to begin with: kubectl's wait ignores it, silently.
			case obj == nil && cond.kind == "delete":
				fmt.Printf("%s condition met\n", t)
				anyDeleted = true
			case obj == nil && cond.kind == "create":
				still = append(still, t)
			case obj == nil:
				return failed("%s %q not found", t.kind.GroupResource(), t.name)
			case cond.kind == "delete":
				still = append(still, t)
			default:
				ok, err := cond.metObject(t.kind, obj)
				if err != nil {
					return err
				}
				if ok {
					fmt.Printf("%s condition met\n", t)
				} else {
					still = append(still, t)
				}
			}
		}
		pending = still
		if len(pending) == 0 {
			break
		}
		select {
		case <-ow.wake:
		case <-ctx.Done():
			return objectWaitEnded(ctx, timeout, pending)
		}
	}
	if anyDeleted {
		// The last object gone, the services owner removes its rules and exits.
		if err := serviceowner.WaitGone(l, time.Until(deadlineOf(ctx))); err != nil {
			return cli.Exit("timed out waiting for the condition: "+err.Error(), exitTimeout)
		}
	}
	return nil
}

func objectWaitEnded(ctx context.Context, timeout time.Duration, pending []objectTarget) error {
	if ctx.Err() != nil && context.Cause(ctx) != errTimeout {
		return cli.Exit("interrupted", exitFailed)
	}
	var what []string
	for _, t := range pending {
		// extendErrWaitTimeout names the resource without its group.
		what = append(what, t.kind.Plural+"/"+t.name)
	}
	return cli.Exit(fmt.Sprintf("timed out waiting for the condition on %s after %s", strings.Join(what, ", "), timeout), exitTimeout)
}

// metObject judges one object, through its JSON, as kubectl's wait does.
func (w *waitCond) metObject(k *store.Kind, obj metav1.Object) (bool, error) {
	u, err := objectJSON(k, obj)
	if err != nil {
		return false, err
	}
	switch w.kind {
	case "create":
		return true, nil
	case "condition":
		return conditionMet(u, string(w.cond), w.want), nil
	case "jsonpath":
		return w.jsonpathMet(u)
	}
	return false, nil
}

// objectJSON is the object as jsonpath sees it: its JSON, with its kind.
func objectJSON(k *store.Kind, obj metav1.Object) (map[string]any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var u map[string]any
	if err := json.Unmarshal(data, &u); err != nil {
		return nil, err
	}
	if _, ok := u["kind"]; !ok {
		u["kind"] = k.Name
	}
	return u, nil
}

// conditionMet follows kubectl wait's ConditionalWait.checkCondition: the
// condition of that type in status.conditions has that status, and was
// observed for the object's current generation.
func conditionMet(u map[string]any, condType, want string) bool {
	status, _ := u["status"].(map[string]any)
	conds, _ := status["conditions"].([]any)
	var generation float64
	if md, ok := u["metadata"].(map[string]any); ok {
		generation, _ = md["generation"].(float64)
	}
	for _, c := range conds {
		cm, ok := c.(map[string]any)
		if !ok {
			continue
		}
		if t, _ := cm["type"].(string); !strings.EqualFold(t, condType) {
			continue
		}
		s, _ := cm["status"].(string)
		if !strings.EqualFold(s, want) {
			return false
		}
		if og, ok := cm["observedGeneration"].(float64); ok && generation > 0 && og < generation {
			return false
		}
		return true
	}
	return false
}

// jsonpathMet is the jsonpath form of --for on any object's JSON.
func (w *waitCond) jsonpathMet(obj any) (bool, error) {
	results, err := w.jp.FindResults(obj)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return false, nil // not there (yet)
	}
	if !w.hasJV {
		return true, nil
	}
	if len(results) > 1 || len(results[0]) > 1 {
		return false, usageError("given jsonpath expression matches more than one value")
	}
	v := results[0][0].Interface()
	switch v.(type) {
	case map[string]any, []any:
		return false, usageError("jsonpath leads to a nested object or list which is not supported")
	}
	return fmt.Sprint(v) == w.want, nil
}

// objectWatch wakes its user when a file of the watched kinds' directories
// changes. A directory that does not exist yet (no object of that kind in the
// namespace so far) is watched through its nearest existing parent, and
// watched itself once it appears.
type objectWatch struct {
	w       *fsnotify.Watcher
	targets map[string]string // a directory to watch → the store root it lies under
	watched map[string]bool
	wake    chan struct{}
	done    chan struct{}
}

func newObjectWatch(l store.Layout, targets []objectTarget) (*objectWatch, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	ow := &objectWatch{w: w, targets: map[string]string{}, watched: map[string]bool{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	for _, t := range targets {
		ow.targets[l.KindDir(t.kind, t.namespace)] = l.StoreRoot(t.kind)
	}
	ow.rewatch()
	go ow.loop()
	return ow, nil
}

// rewatch watches each target directory, or its deepest existing parent
// below (and including) its store root. A level created between the look
// and the watch's start sends no event (the watch was not there yet), so
// after each new watch it looks again, until the deepest existing level is
// watched: a writer's MkdirAll racing with it cannot leave it watching a
// parent whose child it never hears of.
func (ow *objectWatch) rewatch() {
	for dir, root := range ow.targets {
		for {
			d := deepestExisting(dir, root)
			if ow.watched[d] || ow.w.Add(d) != nil {
				break
			}
			ow.watched[d] = true
		}
	}
}

// deepestExisting is dir, or its deepest existing parent below its store
// root (the root's parent when the root does not exist yet).
func deepestExisting(dir, root string) string {
	d := dir
	for {
		if _, err := os.Stat(d); err == nil {
			return d
		}
		if d == root || d == filepath.Dir(d) {
			return filepath.Dir(root) // the root itself may not exist yet
		}
		d = filepath.Dir(d)
	}
}

func (ow *objectWatch) loop() {
	defer close(ow.done)
	for {
		select {
		case ev, ok := <-ow.w.Events:
			if !ok {
				return
			}
			if ev.Has(fsnotify.Create) {
				ow.rewatch() // a directory on the way to a target may have appeared
			}
			ow.signal()
		case _, ok := <-ow.w.Errors:
			if !ok {
				return
			}
			ow.signal()
		}
	}
}

func (ow *objectWatch) signal() {
	select {
	case ow.wake <- struct{}{}:
	default:
	}
}

func (ow *objectWatch) close() {
	_ = ow.w.Close()
	<-ow.done
}
