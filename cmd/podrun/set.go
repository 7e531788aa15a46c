package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/urfave/cli/v2"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// setCommand is kubectl set (pkg/cmd/set); podrun has its image verb.
func setCommand() *cli.Command {
	return &cli.Command{
		Name:  "set",
		Usage: "change a field of pods or workloads: set image",
		Subcommands: []*cli.Command{{
			Name:      "image",
			Usage:     "change the image of containers of pods or workloads (their pod templates)",
			ArgsUsage: "TYPE NAME... | TYPE/NAME...  CONTAINER=IMAGE... ('*' names every container)",
			Description: `Examples:
  # A Deployment's container "app": a rollout follows
  podrun set image deployment/web app=registry:5000/web:ci

  # Every container of a pod: each restarts with its new image
  podrun set image pod/worker '*=busybox:1.36'`,
			Action: runSetImage,
		}},
	}
}

func runSetImage(c *cli.Context) error {
	var resources []string
	images := map[string]string{}
	var order []string
	for _, a := range c.Args().Slice() {
		name, image, ok := strings.Cut(a, "=")
		if !ok {
			if len(images) > 0 {
				return usageError("all resources must be specified before image changes: %s", a)
			}
			resources = append(resources, a)
			continue
		}
		if name == "" || image == "" {
			return usageError("invalid image spec %q: want CONTAINER=IMAGE", a)
		}
		if _, dup := images[name]; !dup {
			order = append(order, name)
		}
		images[name] = image
	}
	if len(resources) == 0 {
		return failed("one or more resources must be specified as <resource> <name> or <resource>/<name>")
	}
	if len(images) == 0 {
		return usageError("at least one image update is required")
	}
	var targets []fileObject
	ns := namespace(c)
	if first, _, _ := strings.Cut(resources[0], "/"); isPodWord(first) {
		for i, r := range resources {
			w, n, slash := strings.Cut(r, "/")
			switch {
			case slash && isPodWord(w):
				targets = append(targets, fileObject{kind: "Pod", namespace: ns, name: n})
			case !slash && i > 0:
				targets = append(targets, fileObject{kind: "Pod", namespace: ns, name: r})
			case slash || i > 0:
				return usageError("set image takes one type at a time")
			}
		}
	} else {
		k, names, ok := kindSlashNames(resources)
		if !ok {
			return failed("the server doesn't have a resource type %q", resources[0])
		}
		for _, n := range names {
			targets = append(targets, fileObject{kind: k.Name, namespace: ns, name: n})
		}
	}
	if len(targets) == 0 {
		return failed("resource(s) were provided, but no name was specified")
	}
	l := layout(c)
	var errs []string
	for _, t := range targets {
		resource := resourceName(t.kind)
		found, missing := fetchFileObjects(l, []fileObject{t})
		if len(missing) > 0 {
			errs = append(errs, missing[0].Error())
			continue
		}
		current := apiObjectOf(found[0])
		original, err := json.Marshal(current)
		if err != nil {
			return err
		}
		edited := reflect.New(reflect.TypeOf(current).Elem()).Interface()
		if err := json.Unmarshal(original, edited); err != nil {
			return err
		}
		spec := podSpecOf(edited)
		if spec == nil {
			errs = append(errs, fmt.Sprintf("%s/%s has no pod template: no containers to set images of", resource, t.name))
			continue
		}
		// kubectl's updatePodSpecForObject: each named container (init
		// containers too), "*" every one; a name no container has is an error.
		for _, name := range order {
			found := false
			for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
				for i := range list {
					if name == "*" || list[i].Name == name {
						list[i].Image = images[name]
						found = true
					}
				}
			}
			if !found {
				errs = append(errs, fmt.Sprintf("unable to find container named %q", name))
			}
		}
		data, err := json.Marshal(edited)
		if err != nil {
			return err
		}
		changed, err := jsonDiffers(original, data)
		if err != nil {
			return err
		}
		if !changed {
			continue // kubectl prints nothing for an empty patch
		}
		if _, err := applyEdited(c, fmt.Sprintf("%s/%s with its new images", resource, t.name), data, false); err != nil {
			return err
		}
		fmt.Printf("%s/%s image updated\n", resource, t.name)
	}
	if len(errs) > 0 {
		return failed("%s", strings.Join(errs, "\nerror: "))
	}
	return nil
}

// podSpecOf is the pod spec an object has or makes (its pod template's).
func podSpecOf(obj any) *corev1.PodSpec {
	switch o := obj.(type) {
	case *corev1.Pod:
		return &o.Spec
	case *appsv1.Deployment:
		return &o.Spec.Template.Spec
	case *appsv1.ReplicaSet:
		return &o.Spec.Template.Spec
	case *appsv1.DaemonSet:
		return &o.Spec.Template.Spec
	case *appsv1.StatefulSet:
		return &o.Spec.Template.Spec
	case *batchv1.Job:
		return &o.Spec.Template.Spec
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template.Spec
	}
	return nil
}
