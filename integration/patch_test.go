package integration

import (
	"slices"
	"strings"
	"testing"
)

// patch: kubectl's three patch types over what get -o json shows, applied
// under apply's update rules, with kubectl's words and checks.
func TestCLIPatch(t *testing.T) {
	e := newCLIEnv(t)
	manifest := e.manifest(netIdlePod("web") + `---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {level: info}
---
apiVersion: v1
kind: Service
metadata: {name: websvc}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80}]
`)
	e.must("apply", "-f", manifest, "--wait")
	get := func(args ...string) string {
		t.Helper()
		return e.must(append([]string{"get"}, args...)...).stdout
	}
	// Strategic merge (the default): a label, in place; the same again is no change.
	if r := e.must("patch", "pod", "web", "-p", `{"metadata":{"labels":{"app":"web"}}}`); r.stdout != "pod/web patched\n" {
		t.Errorf("patch a label: %q", r.stdout)
	}
	if r := e.must("patch", "pod/web", "-p", `metadata: {labels: {app: web}}`); r.stdout != "pod/web patched (no change)\n" {
		t.Errorf("patch to the same value: %q", r.stdout)
	}
	if got := get("pod", "web", "-o", "jsonpath={.metadata.labels.app} {.status.containerStatuses[0].restartCount}"); got != "web 0" {
		t.Errorf("label and restarts after the patch: %q", got)
	}
	// The Service's endpoints follow the patched label.
	e.eventually(":80", true, "get", "endpoints", "websvc")
	// A strategic merge of containers by name: the image changes in place.
	if r := e.must("patch", "pod", "web", "-p", `{"spec":{"containers":[{"name":"c","image":"docker.io/library/busybox:1.28"}]}}`); r.stdout != "pod/web patched\n" {
		t.Errorf("patch the image: %q", r.stdout)
	}
	if got := get("pod", "web", "-o", "jsonpath={.spec.containers[0].image} {.spec.containers[0].command[0]}"); got != "docker.io/library/busybox:1.28 sh" {
		t.Errorf("after the image patch: %q", got)
	}
	// ... and the container runs again with it, as when its hash changes.
	e.eventually("1", false, "get", "pod", "web", "-o", "jsonpath={.status.containerStatuses[0].restartCount}")
	// Any other change of a pod's spec is the API server's Forbidden; nothing changes.
	r := e.podrun("patch", "pod", "web", "--type", "merge", "-p", `{"spec":{"restartPolicy":"Never"}}`)
	if r.code != 2 || !strings.Contains(r.stderr, `The Pod "web" is invalid: spec: Forbidden: pod updates may not change fields`) {
		t.Errorf("a forbidden pod patch: %s", r)
	}
	// As kubectl patch leaves last-applied-configuration, the manifest
	// applied again is unchanged and the patched fields stay.
	if r := e.must("apply", "-f", manifest); !strings.Contains(r.stdout, "pod/web unchanged\n") {
		t.Errorf("apply after patch: %q", r.stdout)
	}
	if got := get("pod", "web", "-o", "jsonpath={.metadata.labels.app} {.spec.containers[0].image}"); got != "web docker.io/library/busybox:1.28" {
		t.Errorf("after apply of the manifest: %q", got)
	}
	// JSON merge patch; --dry-run prints the patched object and changes nothing.
	out := e.podrun("patch", "svc", "websvc", "--type", "merge", "-p", `{"spec":{"ports":[{"name":"http","port":8080,"targetPort":80}]}}`, "--dry-run=client", "-o", "yaml")
	if out.code != 0 || !strings.Contains(out.stdout, "port: 8080") {
		t.Errorf("patch --dry-run=client -o yaml: %s", out)
	}
	if got := get("svc", "websvc", "-o", "jsonpath={.spec.ports[0].port}"); got != "80" {
		t.Errorf("a dry run changed the Service: port %q", got)
	}
	if r := e.must("patch", "service/websvc", "--type", "merge", "-p", `{"spec":{"ports":[{"name":"http","port":8080,"targetPort":80}]}}`); r.stdout != "service/websvc patched\n" {
		t.Errorf("merge patch of a Service: %q", r.stdout)
	}
	if got := get("svc", "websvc", "-o", "jsonpath={.spec.ports[0].port}/{.spec.ports[0].targetPort}"); got != "8080/80" {
		t.Errorf("the Service's port after the patch: %q", got)
	}
	// JSON patch, from a file; -o name.
	patch := e.manifest(`[{"op": "replace", "path": "/data/level", "value": "debug"}, {"op": "add", "path": "/data/extra", "value": "x"}]`)
	if r := e.must("patch", "cm", "cfg", "--type", "json", "--patch-file", patch, "-o", "name"); r.stdout != "configmap/cfg\n" {
		t.Errorf("json patch -o name: %q", r.stdout)
	}
	if got := get("cm", "cfg", "-o", "jsonpath={.data.level},{.data.extra}"); got != "debug,x" {
		t.Errorf("the ConfigMap after the JSON patch: %q", got)
	}
	// kubectl's checks and messages.
	e.mustFail(
		failure{[]string{"patch", "pod", "web"}, 2, "must specify --patch or --patch-file containing the contents of the patch"},
		failure{[]string{"patch", "pod", "web", "-p", "{}", "--patch-file", patch}, 2, "cannot specify --patch and --patch-file together"},
		failure{[]string{"patch", "pod", "web", "--type", "apply", "-p", "{}"}, 2, `--type must be one of [json merge strategic], not "apply"`},
		failure{[]string{"patch", "pod", "nothere", "-p", "{}"}, 1, `pods "nothere" not found`},
		failure{[]string{"patch", "widgets", "x", "-p", "{}"}, 1, `the server doesn't have a resource type "widgets"`},
		failure{[]string{"patch", "cm", "cfg", "--type", "json", "-p", `[{"op":"remove","path":"/data/none"}]`}, 2, "the patch does not apply to configmap/cfg"},
		failure{[]string{"patch", "cm", "cfg", "--subresource", "resize", "-p", "{}"}, 1, "the server could not find the requested resource: configmap has no resize subresource"},
	)
}

// set image: kubectl's, over a pod (its containers restart with the new
// image) and a Deployment (a rollout follows).
func TestCLISetImage(t *testing.T) {
	e := newCLIEnv(t)
	e.must("apply", "-f", e.manifest(`
apiVersion: v1
kind: Pod
metadata: {name: two}
spec:
  containers:
  - {name: a, image: busybox:1.28, command: `+netIdle+`}
  - {name: b, image: busybox:1.28, command: `+netIdle+`}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: busybox:1.28, command: `+netIdle+`}]}
`), "--wait")
	if r := e.must("set", "image", "pod/two", "b=docker.io/library/busybox:1.28"); r.stdout != "pod/two image updated\n" {
		t.Errorf("set image of a pod: %q", r.stdout)
	}
	e.eventually("busybox:1.28 docker.io/library/busybox:1.28 0 1", false, "get", "pod", "two", "-o", "jsonpath={.spec.containers[*].image} {.status.containerStatuses[*].restartCount}")
	// The same image again changes nothing and prints nothing, as kubectl.
	if r := e.must("set", "image", "pod", "two", "b=docker.io/library/busybox:1.28"); r.stdout != "" {
		t.Errorf("set image to the same image: %q", r.stdout)
	}
	if r := e.must("set", "image", "deployment/web", "*=docker.io/library/busybox:1.28"); r.stdout != "deployment.apps/web image updated\n" {
		t.Errorf("set image of a Deployment: %q", r.stdout)
	}
	e.must("rollout", "status", "deployment/web", "--timeout", "1m")
	// The old pod may still be terminating once the rollout is done, as on a
	// cluster (a ReplicaSet does not count a pod being deleted): the pods
	// that remain run the new image.
	var images []string
	for _, line := range strings.Split(e.must("get", "pods", "-l", "app=web", "-o", "jsonpath={range .items[*]}{.spec.containers[0].image} {.metadata.deletionTimestamp}{\"\\n\"}{end}").stdout, "\n") {
		if image, deleting, _ := strings.Cut(line, " "); image != "" && deleting == "" {
			images = append(images, image)
		}
	}
	if !slices.Equal(images, []string{"docker.io/library/busybox:1.28"}) {
		t.Errorf("the Deployment's pods after the rollout: %q", images)
	}
	e.mustFail(
		failure{[]string{"set", "image", "deployment/web", "nope=busybox:1.28"}, 1, `unable to find container named "nope"`},
		failure{[]string{"set", "image", "deployment/web"}, 2, "at least one image update is required"},
		failure{[]string{"set", "image", "configmap", "x", "a=b"}, 1, `configmaps "x" not found`},
		failure{[]string{"set", "image", "pod/missing", "a=b"}, 1, `pods "missing" not found`},
	)
}

// replace: kubectl e2e's "should update a single-container pod's image"
// (get -o yaml, a new image, replace -f -), its NotFound, a forbidden change
// and --force.
func TestCLIReplace(t *testing.T) {
	e := newCLIEnv(t)
	e.must("apply", "-f", e.manifest(netIdlePod("rep")), "--wait")
	live := e.must("get", "pod", "rep", "-o", "yaml").stdout
	changed := strings.Replace(live, "image: busybox:1.28", "image: docker.io/library/busybox:1.28", 1)
	if changed == live {
		t.Fatalf("no image line in get -o yaml:\n%s", live)
	}
	if r := e.podrunIn(changed, "replace", "-f", "-"); r.code != 0 || r.stdout != "pod/rep replaced\n" {
		t.Fatalf("replace -f -: %s", r)
	}
	if got := e.must("get", "pod", "rep", "-o", "jsonpath={.spec.containers[0].image}").stdout; got != "docker.io/library/busybox:1.28" {
		t.Errorf("the image after replace: %q", got)
	}
	other := strings.Replace(live, "name: rep", "name: nothere", 1)
	if r := e.podrunIn(other, "replace", "-f", "-"); r.code != 1 || !strings.Contains(r.stderr, `pods "nothere" not found`) {
		t.Errorf("replace of a missing pod: %s", r)
	}
	forbidden := strings.Replace(changed, "sleep 3600", "sleep 3601", 1)
	if r := e.podrunIn(forbidden, "replace", "-f", "-"); r.code != 2 || !strings.Contains(r.stderr, "Forbidden: pod updates may not change fields") {
		t.Errorf("replace with a forbidden change: %s", r)
	}
	uid := e.must("get", "pod", "rep", "-o", "jsonpath={.metadata.uid}").stdout
	if r := e.podrunIn(forbidden, "replace", "--force", "-f", "-"); r.code != 0 || r.stdout != "pod/rep replaced\n" {
		t.Errorf("replace --force: %s", r)
	}
	if got := e.must("get", "pod", "rep", "-o", "jsonpath={.metadata.uid} {.spec.containers[0].command[2]}").stdout; strings.HasPrefix(got, uid) || !strings.Contains(got, "sleep 3601") {
		t.Errorf("after replace --force: %q (the old uid %s)", got, uid)
	}
}

// diff: kubectl e2e's "should check if kubectl diff finds a difference for
// Deployments" (the live and the declared image both in the output, exit 1),
// no difference (exit 0, nothing printed) and a new object (added whole).
func TestCLIDiff(t *testing.T) {
	e := newCLIEnv(t)
	deployment := `
apiVersion: apps/v1
kind: Deployment
metadata: {name: httpd}
spec:
  replicas: 1
  selector: {matchLabels: {app: httpd}}
  template:
    metadata: {labels: {app: httpd}}
    spec: {containers: [{name: httpd, image: busybox:1.28, command: ` + netIdle + `}]}
`
	e.must("apply", "-f", e.manifest(deployment), "--wait")
	if r := e.podrunIn(deployment, "diff", "-f", "-"); r.code != 0 || r.stdout != "" {
		t.Errorf("diff of the applied manifest: %s", r)
	}
	changed := strings.Replace(deployment, "image: busybox:1.28", "image: docker.io/library/busybox:1.28", 1)
	r := e.podrunIn(changed, "diff", "-f", "-")
	if r.code != 1 || !strings.Contains(r.stdout, "-        image: busybox:1.28\n") || !strings.Contains(r.stdout, "+        image: docker.io/library/busybox:1.28\n") || !strings.Contains(r.stdout, "apps.v1.Deployment.") {
		t.Errorf("diff of a changed image: %s", r)
	}
	if got := e.must("get", "deploy", "httpd", "-o", "jsonpath={.spec.template.spec.containers[0].image}").stdout; got != "busybox:1.28" {
		t.Errorf("diff changed the Deployment: %q", got)
	}
	r = e.podrunIn("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fresh}\ndata: {k: v}\n", "diff", "-f", "-")
	if r.code != 1 || !strings.Contains(r.stdout, "v1.ConfigMap.") || !strings.Contains(r.stdout, "+  k: v\n") {
		t.Errorf("diff of a new ConfigMap: %s", r)
	}
	if e.podrun("get", "cm", "fresh").code == 0 {
		t.Error("diff created the ConfigMap")
	}
}

// Several types at once (get pods,svc; delete deploy,svc -l), a kind with
// -l, and the category all, as kubectl takes them in CI scripts.
func TestCLISeveralTypes(t *testing.T) {
	e := newCLIEnv(t)
	e.must("apply", "-f", e.manifest(netIdlePod("one")+`---
apiVersion: v1
kind: Service
metadata: {name: one, labels: {app: one}}
spec: {selector: {app: one}, ports: [{port: 80}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: keep, labels: {app: other}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: drop, labels: {app: one}}
`), "--wait")
	if r := e.must("get", "pods,svc", "-o", "name"); r.stdout != "pod/one\nservice/one\n" {
		t.Errorf("get pods,svc -o name: %q", r.stdout)
	}
	r := e.must("get", "po,svc,cm")
	for _, want := range []string{"pod/one ", "service/one ", "configmap/keep ", "\n\nNAME "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("get po,svc,cm: no %q in\n%s", want, r.stdout)
		}
	}
	if r := e.must("get", "svc,cm", "-l", "app=one", "-o", "name"); r.stdout != "service/one\nconfigmap/drop\n" {
		t.Errorf("get svc,cm -l: %q", r.stdout)
	}
	if r := e.must("describe", "pods,svc", "one"); strings.Count(r.stdout, "\nName:") != 1 || !strings.HasPrefix(r.stdout, "Name:") || !strings.Contains(r.stdout, "Selector:") || !strings.Contains(r.stdout, "Containers:") {
		t.Errorf("describe pods,svc one:\n%s", r.stdout)
	}
	e.mustFail(
		failure{[]string{"get", "pods,widgets"}, 1, `the server doesn't have a resource type "widgets"`},
		failure{[]string{"delete", "svc,cm"}, 1, "resource(s) were provided, but no name was specified"},
	)
	if r := e.must("delete", "cm", "-l", "app=one"); r.stdout != "configmap \"drop\" deleted\n" || r.stderr != "" {
		t.Errorf("delete cm -l: %s", r)
	}
	if r := e.must("delete", "svc,cm", "-l", "app=nothing"); r.stdout != "No resources found\n" { // kubectl's, on stdout
		t.Errorf("delete of nothing: %s", r)
	}
	if r := e.must("delete", "all", "--all", "--now"); r.stdout != "pod \"one\" deleted\nservice \"one\" deleted\n" {
		t.Errorf("delete all --all: %q", r.stdout)
	}
	if r := e.must("get", "cm", "-o", "name"); r.stdout != "configmap/keep\n" {
		t.Errorf("what delete all left: %q", r.stdout)
	}
}

// expose: kubectl's Service for a Deployment (its selector and ports, or
// --port and --target-port), with endpoints from its pods.
func TestCLIExpose(t *testing.T) {
	e := newCLIEnv(t)
	e.must("apply", "-f", e.manifest(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {team: a}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: busybox:1.28, command: `+netIdle+`, ports: [{containerPort: 8080}]}]}
`), "--wait")
	if r := e.must("expose", "deployment", "web", "--port=80", "--target-port=8080"); r.stdout != "service/web exposed\n" {
		t.Errorf("expose: %q", r.stdout)
	}
	if got := e.must("get", "svc", "web", "-o", "jsonpath={.spec.selector.app} {.spec.ports[0].port}/{.spec.ports[0].targetPort}/{.spec.ports[0].protocol} {.metadata.labels.team}").stdout; got != "web 80/8080/TCP a" {
		t.Errorf("the exposed Service: %q", got)
	}
	e.eventually(":8080", true, "get", "endpoints", "web")
	// Without --port: the containers' ports.
	e.must("expose", "deploy/web", "--name", "web2", "--type", "NodePort")
	if got := e.must("get", "svc", "web2", "-o", "jsonpath={.spec.type} {.spec.ports[0].port}/{.spec.ports[0].targetPort}").stdout; got != "NodePort 8080/8080" {
		t.Errorf("expose without --port: %q", got)
	}
	e.must("apply", "-f", e.manifest(netIdlePod("noports")))
	e.mustFail(
		failure{[]string{"expose", "deployment", "web"}, 1, `services "web" already exists`},
		failure{[]string{"expose", "pod", "noports", "--selector", "a=b"}, 1, "couldn't find port via --port flag or introspection"},
		failure{[]string{"expose", "configmap", "x"}, 1, `configmaps "x" not found`},
	)
}
