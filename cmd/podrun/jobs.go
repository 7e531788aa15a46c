package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/internal/ownerproc"
	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/store"
)

// jobWait is one Job a wait is for.
type jobWait struct{ namespace, name string }

// jobConditionFor names a Job condition as --for=condition=NAME does,
// case-insensitively (complete, failed, ...).
func jobConditionFor(name string) batchv1.JobConditionType {
	for _, t := range []batchv1.JobConditionType{batchv1.JobComplete, batchv1.JobFailed, batchv1.JobSuspended, batchv1.JobFailureTarget, batchv1.JobSuccessCriteriaMet} {
		if strings.EqualFold(string(t), name) {
			return t
		}
	}
	return batchv1.JobConditionType(name)
}

// waitForJobs waits until every Job has condition cond with status want
// ("true" or "false"), or is deleted when del. A Job that ends the other way
// (Failed while waiting for Complete, Complete while waiting for Failed) ends
// the wait at once with exit 1 and the Job's reason: what CI needs of
// `apply --wait` and `wait --for=condition=complete job/x`.
func waitForJobs(l store.Layout, jobs []jobWait, cond batchv1.JobConditionType, want string, del bool, timeout time.Duration, progress io.Writer) error {
	ctx, cancel := deadlineContext(timeout)
	defer cancel()
	watcher, err := ownerproc.NewWatcher(func() []string {
		dirs := []string{l.ObjectsDir()}
		for _, j := range jobs {
			dirs = append(dirs, filepath.Join(l.ObjectsDir(), j.namespace), filepath.Join(l.ObjectsDir(), j.namespace, store.JobKind.Plural))
		}
		return dirs
	})
	if err != nil {
		return failed("watching the store: %v", err)
	}
	defer watcher.Close()
	pending := jobs
	shown := map[jobWait]string{}
	failures := 0
	for {
		var still []jobWait
		for _, j := range pending {
			obj, err := l.Get(store.JobKind, j.namespace, j.name)
			if errors.Is(err, store.ErrNotFound) {
				if del {
					fmt.Printf("job.batch/%s condition met\n", j.name)
				} else {
					failures++
					fmt.Fprintf(os.Stderr, "error: job.batch/%s was deleted\n", j.name)
				}
				continue
			}
			if err != nil {
				return failed("%v", err)
			}
			if del {
				still = append(still, j)
				continue
			}
			job := obj.(*batchv1.Job)
			if w := JobStatusWord(job); progress != nil && shown[j] != w {
				shown[j] = w
				fmt.Fprintf(progress, "job.batch/%s %s\n", j.name, w)
			}
			var status corev1.ConditionStatus = corev1.ConditionFalse
			for _, c := range job.Status.Conditions {
				if c.Type == cond {
					status = c.Status
				}
			}
			if strings.EqualFold(string(status), want) {
				fmt.Printf("job.batch/%s condition met\n", j.name)
				continue
			}
			if strings.EqualFold(want, "true") {
				if other := jobEndedOtherwise(job, cond); other != "" {
					failures++
					fmt.Fprintf(os.Stderr, "error: job.batch/%s %s\n", j.name, other)
					continue
				}
			}
			still = append(still, j)
		}
		pending = still
		if len(pending) == 0 {
			break
		}
		wait := time.Second
		if d, ok := ctx.Deadline(); ok {
			wait = max(min(wait, time.Until(d)), time.Millisecond)
		}
		watcher.Wait(wait, nil)
		if ctx.Err() != nil {
			if !errors.Is(context.Cause(ctx), errTimeout) {
				return cli.Exit("interrupted", exitFailed)
			}
			var what []string
			for _, j := range pending {
				s := "gone"
				if obj, err := l.Get(store.JobKind, j.namespace, j.name); err == nil {
					s = JobStatusWord(obj.(*batchv1.Job))
				}
				what = append(what, fmt.Sprintf("job.batch/%s (status %s)", j.name, s))
			}
			return cli.Exit(fmt.Sprintf("timed out after %s waiting for %s", timeout, strings.Join(what, ", ")), exitTimeout)
		}
	}
	if failures > 0 {
		return cli.Exit("", exitFailed)
	}
	return nil
}

// jobEndedOtherwise says how a finished Job ended when that rules out the
// condition waited for ("failed: BackoffLimitExceeded: ...").
func jobEndedOtherwise(job *batchv1.Job, cond batchv1.JobConditionType) string {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue || c.Type == cond {
			continue
		}
		switch {
		case c.Type == batchv1.JobFailed && cond != batchv1.JobFailureTarget:
			return fmt.Sprintf("failed: %s: %s", c.Reason, c.Message)
		case c.Type == batchv1.JobComplete && cond != batchv1.JobSuccessCriteriaMet:
			return "completed: " + c.Message
		}
	}
	return ""
}

// jobArgs reads `job/x...` or `job x...` (jobs, job.batch) from wait's
// arguments; ok is false when they do not name Jobs.
func jobArgs(args []string) ([]string, bool) {
	if len(args) == 0 {
		return nil, false
	}
	k, names, ok := kindSlashNames(args)
	return names, ok && k == store.JobKind && len(names) > 0
}

// createCommand is `podrun create job NAME --from=cronjob/X`.
func createCommand() *cli.Command {
	return &cli.Command{
		Name:  "create",
		Usage: "create a ConfigMap, a Secret or a Namespace from flags and files, or a Job from a CronJob",
		Subcommands: []*cli.Command{createConfigMapCommand(), createSecretCommand(), createNamespaceCommand(), {
			Name:      "job",
			Usage:     "run a CronJob's job template now, as kubectl create job --from does",
			ArgsUsage: "NAME --from=cronjob/X",
			Flags:     []cli.Flag{&cli.StringFlag{Name: "from", Usage: "cronjob/NAME: the CronJob whose jobTemplate to run"}},
			Action:    runCreateJob,
		}},
	}
}

func runCreateJob(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageError("create job takes one NAME: podrun create job NAME --from=cronjob/X")
	}
	name := c.Args().First()
	kind, from, ok := strings.Cut(c.String("from"), "/")
	if k, known := store.KindFor(kind); !ok || !known || k != store.CronJobKind || from == "" {
		return usageError("--from=%q: podrun creates a job from a cronjob only: --from=cronjob/NAME", c.String("from"))
	}
	l := layout(c)
	ns := namespace(c)
	obj, err := l.Get(store.CronJobKind, ns, from)
	if err != nil {
		return failed("%v", err)
	}
	job := podspec.JobFromCronJob(obj.(*batchv1.CronJob), name, map[string]string{"cronjob.kubernetes.io/instantiate": "manual"})
	if errs := validateJobName(job); errs != "" {
		return usageError("%s", errs)
	}
	if _, err := l.Get(store.JobKind, ns, name); err == nil {
		return failed("jobs.batch %q already exists", name)
	}
	action, err := l.PutWithSettings(store.JobKind, job, l.ObjectSettings(store.CronJobKind, ns, from))
	if err != nil {
		return err
	}
	fmt.Printf("job.batch/%s %s\n", name, action)
	ensureControllers(c)
	return nil
}

func validateJobName(job *batchv1.Job) string {
	m := &podspec.Manifest{Source: "create job", Workloads: []*podspec.Workload{{Kind: "Job", Object: job, Origin: podspec.Origin{Template: true}}}}
	if _, err := m.Plans(); err != nil {
		return err.Error()
	}
	return ""
}
