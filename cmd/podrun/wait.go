package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/jsonpath"

	"github.com/podrun/podrun/serviceowner"
	"github.com/podrun/podrun/store"
)

// waitOptions are apply --wait's.
type waitOptions struct {
	timeout       time.Duration
	allowRestarts bool
	// progress gets one line per STATUS change of a pod; nil prints nothing (-q).
	progress io.Writer
}

// waitForPods blocks until every pod is Ready or has finished, as
// `apply --wait` promises:
//   - a pod meant to run to completion (restartPolicy Never or OnFailure)
//     until it has Succeeded (done) or Failed (exit 1);
//   - any other pod until it is Ready now (podReady), and it fails at once
//     (exit 1) when one of its containers fails before that, unless
//     allowRestarts; a pod that is deleted or whose supervisor is lost fails too.
//
// It sleeps between changes of the records (podWatch), it does not poll.
func waitForPods(l store.Layout, records []*store.Record, o waitOptions) error {
	ctx, cancel := deadlineContext(o.timeout)
	defer cancel()
	pw, err := newPodWatch(l)
	if err != nil {
		return failed("watching the pod records: %v", err)
	}
	defer pw.close()
	pending := append([]*store.Record(nil), records...)
	// Verdicts always go to stderr; with progress, through it (above its bars).
	say := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	var prog *waitProgress
	if o.progress != nil {
		prog = newWaitProgress(o.progress)
		defer prog.close()
		say = prog.line
		for _, rec := range records {
			pw.watchPulls(rec)
		}
	}
	failedPods := 0
	for {
		var still []*store.Record
		var next time.Duration
		for _, rec := range pending {
			cur, err := rec.Reload(l)
			if errors.Is(err, fs.ErrNotExist) {
				failedPods++
				say("pod/%s failed: the pod was deleted", rec.Pod.Name)
				continue
			}
			if err != nil {
				return failed("pod %s: %v", rec.Key(), err)
			}
			pod := cur.View()
			if prog != nil {
				if pulls, err := store.ReadPulls(cur.Paths); err == nil {
					prog.showPulls(rec.Key(), pod.Name, pulls)
				}
				prog.showStatus(rec.Key(), pod.Name, statusWord(pod))
			}
			verdict, msg, recheck := judgeApplyWait(cur, pod, o.allowRestarts)
			if recheck > 0 && (next == 0 || recheck < next) {
				next = recheck
			}
			switch verdict {
			case waitDone:
				say("pod/%s %s", pod.Name, msg)
			case waitFailed:
				failedPods++
				say("pod/%s failed: %s", pod.Name, msg)
			default:
				still = append(still, rec)
			}
		}
		pending = still
		if len(pending) == 0 {
			break
		}
		if err := pw.wait(ctx, next, pending...); err != nil {
			return waitEnded(ctx, o.timeout, pending, l)
		}
	}
	if failedPods > 0 {
		return cli.Exit("", exitFailed)
	}
	return nil
}

// waitEnded is the error of a wait that ran out of time or was interrupted.
func waitEnded(ctx context.Context, timeout time.Duration, pending []*store.Record, l store.Layout) error {
	if !errors.Is(context.Cause(ctx), errTimeout) {
		return cli.Exit("interrupted", exitFailed)
	}
	var what []string
	for _, rec := range pending {
		s := "gone"
		if cur, err := rec.Reload(l); err == nil {
			pod := cur.View()
			s = statusWord(pod)
			if pod.Spec.RestartPolicy == corev1.RestartPolicyAlways {
				s += ", Ready condition " + string(conditionStatus(pod, corev1.PodReady))
			}
		}
		what = append(what, fmt.Sprintf("pods/%s (status %s)", rec.Pod.Name, s))
	}
	// kubectl wait's words (extendErrWaitTimeout: "timed out waiting for
	// the condition on pods/NAME"), then what podrun saw and for how long.
	if len(what) == 0 {
		return cli.Exit(fmt.Sprintf("timed out waiting for the condition after %s", timeout), exitTimeout)
	}
	return cli.Exit(fmt.Sprintf("timed out waiting for the condition on %s after %s", strings.Join(what, ", "), timeout), exitTimeout)
}

type waitVerdict int

const (
	waitPending waitVerdict = iota
	waitDone
	waitFailed
)

func judgeApplyWait(rec *store.Record, pod *corev1.Pod, allowRestarts bool) (waitVerdict, string, time.Duration) {
	// A deleted pod ends Succeeded when its containers exit 0 on SIGTERM (the
	// kubelet's terminal status of a deleted pod): that is no success of the
	// run apply waits for.
	switch {
	case pod.Status.Phase == corev1.PodFailed:
		return waitFailed, failureSummary(rec, pod), 0
	case pod.Status.Phase == corev1.PodUnknown:
		return waitFailed, "Unknown: " + pod.Status.Message, 0
	case pod.DeletionTimestamp != nil:
		return waitFailed, "the pod is being deleted", 0
	case pod.Status.Phase == corev1.PodSucceeded:
		return waitDone, "succeeded", 0
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		return waitPending, "", 0
	}
	ready, recheck := podReady(rec, pod)
	if ready {
		return waitDone, "ready", 0
	}
	if !allowRestarts {
		if c := crashed(pod); c != nil {
			return waitFailed, describeCrash(rec, c) + "\n(--allow-restarts waits through restarts)", 0
		}
	}
	return waitPending, "", recheck
}

func failureSummary(rec *store.Record, pod *corev1.Pod) string {
	s := statusWord(pod)
	if pod.Status.Message != "" {
		s += ": " + pod.Status.Message
	}
	for i, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, st := range list {
			if t := st.State.Terminated; t != nil && t.ExitCode != 0 {
				s += "; " + describeCrash(rec, &crash{container: st.Name, init: i == 0, term: t, restarts: st.RestartCount, run: st.RestartCount})
			}
		}
	}
	return s
}

func waitCommand() *cli.Command {
	return &cli.Command{
		Name:      "wait",
		Usage:     "wait for a condition on pods or other objects (Ready, deleted, a jsonpath value)",
		ArgsUsage: "[TYPE/]NAME... | TYPE NAME... | [TYPE] -l SELECTOR | [TYPE] --all  --for=CONDITION",
		Description: `--for takes kubectl's forms:
  condition=Ready (or Initialized, ContainersReady, PodScheduled; condition=Ready=false waits for False),
  delete (the pod and everything it held are gone), create,
  jsonpath='{.status.phase}'=Running (or a jsonpath alone: the field exists).
For Jobs (job/NAME): condition=complete or condition=failed; a Job that ends the other way
fails the wait at once (exit 1, with its reason).
condition=Ready also fails at once (exit 1) when a container of a restartPolicy-Always pod
fails before the pod is Ready, unless --allow-restarts.
Exit codes: 0 the condition is met for every pod, 1 a pod failed or none matched, 2 bad usage, 124 timeout.

Examples:
  # Wait until the pod web is Ready, at most 2 minutes
  podrun wait --for=condition=Ready pod/web --timeout=2m

  # Wait until every pod labelled app=db has been deleted
  podrun wait --for=delete -l app=db

  # Wait until a run-to-completion pod has Succeeded
  podrun wait --for=jsonpath='{.status.phase}'=Succeeded pod/migrate

  # Other kinds too (services, configmaps, secrets, ...): until a Service is gone
  podrun wait --for=delete svc/web --timeout=1m`,
		Flags: append(selectorFlags(),
			&cli.StringFlag{Name: "for", Usage: "condition=NAME[=VALUE], delete, create or jsonpath=EXPR[=VALUE]"},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "how long to wait (0 = forever); then exit 124"},
			&cli.BoolFlag{Name: "all", Usage: "every pod in the namespace"},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "pods of every namespace"},
			&cli.BoolFlag{Name: "allow-restarts", Usage: "with --for=condition=Ready: wait through container restarts instead of failing at the first"},
		),
		Action: runWait,
	}
}

// waitCond is one parsed --for.
type waitCond struct {
	kind  string // condition, delete, create, jsonpath
	cond  corev1.PodConditionType
	want  string // the condition's status or the jsonpath value ("" with jsonpath: exists)
	jp    *jsonpath.JSONPath
	hasJV bool
}

// parseFor follows kubectl wait's conditionFuncFor (k8s.io/kubectl/pkg/cmd/wait).
func parseFor(s string) (*waitCond, error) {
	switch {
	case s == "":
		return nil, usageError("wait needs --for: condition=Ready, delete, create or jsonpath='{...}'=VALUE")
	case strings.EqualFold(s, "delete"):
		return &waitCond{kind: "delete"}, nil
	case strings.EqualFold(s, "create"):
		return &waitCond{kind: "create"}, nil
	case strings.HasPrefix(s, "condition="):
		name, want, ok := strings.Cut(strings.TrimPrefix(s, "condition="), "=")
		if !ok {
			want = "true"
		}
		if name == "" {
			return nil, usageError("--for=%s: name a condition", s)
		}
		var cond corev1.PodConditionType
		for _, c := range []corev1.PodConditionType{corev1.PodReady, corev1.PodInitialized, corev1.ContainersReady, corev1.PodScheduled, corev1.PodReadyToStartContainers} {
			if strings.EqualFold(string(c), name) {
				cond = c
			}
		}
		if cond == "" {
			cond = corev1.PodConditionType(name)
		}
		return &waitCond{kind: "condition", cond: cond, want: want}, nil
	case strings.HasPrefix(s, "jsonpath="):
		expr, value, hasValue, err := splitJSONPathFor(strings.TrimPrefix(s, "jsonpath="))
		if err != nil {
			return nil, usageError("--for=%s: %v", s, err)
		}
		jp := jsonpath.New("wait")
		if err := jp.Parse(expr); err != nil {
			return nil, usageError("--for=%s: %v", s, err)
		}
		return &waitCond{kind: "jsonpath", jp: jp, want: value, hasJV: hasValue}, nil
	}
	return nil, usageError("unrecognized condition: %q (want condition=NAME, delete, create or jsonpath=EXPR)", s)
}

// splitJSONPathFor splits "{.status.phase}=Running" at the '=' after the
// expression's closing brace; an expression without braces is relaxed as
// kubectl's RelaxedJSONPathExpression does.
func splitJSONPathFor(in string) (expr, value string, hasValue bool, err error) {
	if strings.HasPrefix(in, "{") {
		depth := 0
		for i, r := range in {
			switch r {
			case '{':
				depth++
			case '}':
				depth--
				if depth == 0 {
					rest := in[i+1:]
					if rest == "" {
						return in, "", false, nil
					}
					if !strings.HasPrefix(rest, "=") {
						return "", "", false, fmt.Errorf("expected '=' after the jsonpath expression")
					}
					return in[:i+1], rest[1:], true, nil
				}
			}
		}
		return "", "", false, fmt.Errorf("unclosed '{' in the jsonpath expression")
	}
	e, v, ok := strings.Cut(in, "=")
	if e == "" {
		return "", "", false, fmt.Errorf("jsonpath expression cannot be empty")
	}
	if !strings.HasPrefix(e, ".") {
		e = "." + e
	}
	return "{" + e + "}", v, ok, nil
}

// met reports whether the condition holds for the pod, and a failure that
// ends the wait with exit 1.
func (w *waitCond) met(rec *store.Record, pod *corev1.Pod, allowRestarts bool) (bool, string, time.Duration, error) {
	switch w.kind {
	case "create":
		return true, "", 0, nil
	case "condition":
		var status corev1.ConditionStatus
		for _, c := range pod.Status.Conditions {
			if c.Type == w.cond {
				status = c.Status
			}
		}
		ok := strings.EqualFold(string(status), w.want)
		var recheck time.Duration
		if w.cond == corev1.PodReady && strings.EqualFold(w.want, "true") {
			ok, recheck = podReady(rec, pod)
			if !ok && (pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded) {
				return false, "the pod has " + strings.ToLower(string(pod.Status.Phase)) + " and will never be Ready: " + failureSummary(rec, pod), 0, nil
			}
			if !ok && !allowRestarts && pod.Spec.RestartPolicy == corev1.RestartPolicyAlways {
				if c := crashed(pod); c != nil {
					return false, describeCrash(rec, c) + "\n(--allow-restarts waits through restarts)", 0, nil
				}
			}
		}
		return ok, "", recheck, nil
	case "jsonpath":
		obj, err := toUnstructured(apiPod(pod))
		if err != nil {
			return false, "", 0, err
		}
		ok, err := w.jsonpathMet(obj)
		return ok, "", 0, err
	}
	return false, "", 0, nil
}

func runWait(c *cli.Context) error {
	cond, err := parseFor(c.String("for"))
	if err != nil {
		return err
	}
	if jobs, ok := jobArgs(c.Args().Slice()); ok {
		// Jobs: a Job that ends the other way fails the wait at once.
		if cond.kind != "condition" && cond.kind != "delete" {
			return usageError("wait for jobs takes --for=condition=NAME (complete, failed) or --for=delete")
		}
		var ws []jobWait
		for _, n := range jobs {
			ws = append(ws, jobWait{namespace(c), n})
		}
		return waitForJobs(layout(c), ws, jobConditionFor(string(cond.cond)), cond.want, cond.kind == "delete", c.Duration("timeout"), nil)
	}
	names, objects, kind, err := splitWaitArgs(c.Args().Slice(), namespace(c), podExists(c))
	if err != nil {
		return err
	}
	sel, err := parseSelectors(c)
	if err != nil {
		return err
	}
	l := layout(c)
	ctx, cancel := deadlineContext(c.Duration("timeout"))
	defer cancel()
	if kind != nil {
		// TYPE -l SELECTOR | TYPE --all: the objects of that kind, chosen once.
		if c.String("field-selector") != "" {
			return usageError("--field-selector: only pods have selectable fields here")
		}
		if sel.labels.Empty() && !c.Bool("all") {
			return usageError("wait %s needs names, -l SELECTOR or --all", kind.Plural)
		}
		ns := namespace(c)
		if c.Bool("all-namespaces") {
			ns = ""
		}
		if objects, err = objectsFor(l, kind, ns, sel.labels); err != nil {
			return err
		}
		if len(objects) == 0 {
			if cond.kind == "delete" {
				return nil
			}
			return failed("no matching resources found")
		}
		return waitObjects(ctx, l, objects, cond, c.Duration("timeout"))
	}
	if len(objects) > 0 {
		if err := waitObjects(ctx, l, objects, cond, c.Duration("timeout")); err != nil || len(names) == 0 {
			return err
		}
	}
	if len(names) == 0 && sel.empty() && !c.Bool("all") {
		return usageError("wait needs pod names, -l SELECTOR or --all")
	}
	pw, err := newPodWatch(l)
	if err != nil {
		return failed("watching the pod records: %v", err)
	}
	defer pw.close()
	ns := namespace(c)
	// The pods are chosen once, as kubectl's wait resolves its resources once
	// (create waits for the names given).
	type target struct {
		name string
		rec  *store.Record
	}
	var targets []target
	for {
		recs, notFound, err := selectPods(c, names, c.Bool("all-namespaces"))
		if err != nil {
			return err
		}
		if cond.kind == "create" && len(notFound) > 0 {
			// A pod record's creation wakes the watch (fsnotify); no relist.
			if err := pw.wait(ctx, -1); err != nil {
				return waitEnded(ctx, c.Duration("timeout"), nil, l)
			}
			continue
		}
		if cond.kind != "delete" && len(notFound) > 0 {
			return failed("%v", errors.Join(notFound...))
		}
		for _, r := range recs {
			targets = append(targets, target{r.Pod.Name, r})
		}
		break
	}
	if len(targets) == 0 {
		if cond.kind == "delete" {
			return nil
		}
		return failed("no matching resources found")
	}
	pending := targets
	failures := 0
	for {
		var still []target
		var next time.Duration
		for _, t := range pending {
			cur, err := t.rec.Reload(l)
			if errors.Is(err, fs.ErrNotExist) {
				// The record goes last, after everything the pod held was released.
				if cond.kind == "delete" {
					if _, err := os.Stat(t.rec.Paths.Dir); errors.Is(err, fs.ErrNotExist) {
						fmt.Printf("pod/%s condition met\n", t.name)
						continue
					}
					still = append(still, t)
					continue
				}
				failures++
				fmt.Fprintf(os.Stderr, "error: pod/%s was deleted\n", t.name)
				continue
			}
			if err != nil {
				return failed("pod %s/%s: %v", ns, t.name, err)
			}
			if cond.kind == "delete" {
				still = append(still, t)
				continue
			}
			ok, failure, recheck, err := cond.met(cur, cur.View(), c.Bool("allow-restarts"))
			if recheck > 0 && (next == 0 || recheck < next) {
				next = recheck
			}
			switch {
			case err != nil:
				return err
			case ok:
				fmt.Printf("pod/%s condition met\n", t.name)
			case failure != "":
				failures++
				fmt.Fprintf(os.Stderr, "error: pod/%s failed: %s\n", t.name, failure)
			default:
				still = append(still, t)
			}
		}
		pending = still
		if len(pending) == 0 {
			break
		}
		var recs []*store.Record
		for _, t := range pending {
			recs = append(recs, t.rec)
		}
		if err := pw.wait(ctx, next, recs...); err != nil {
			return waitEnded(ctx, c.Duration("timeout"), recs, l)
		}
	}
	if cond.kind == "delete" {
		// The last pod gone, the services owner removes the Service rules and
		// exits (as delete waits for): --for=delete returns when nothing of the
		// pods is left on the host.
		left := time.Until(deadlineOf(ctx))
		if err := serviceowner.WaitGone(l, left); err != nil {
			return cli.Exit("timed out waiting for the condition: "+err.Error(), exitTimeout)
		}
	}
	if failures > 0 {
		return cli.Exit("", exitFailed)
	}
	return nil
}

// deadlineOf is ctx's deadline, or a minute from now for a wait without one.
func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Minute)
}

// toUnstructured is the object as jsonpath sees it in kubectl: its JSON form.
func toUnstructured(obj any) (any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(data, &out)
	return out, err
}

func conditionStatus(pod *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}
