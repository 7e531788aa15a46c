package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
)

// The Kubernetes docs' init-container walkthrough, verbatim
// (examples/myapp.yaml, then examples/services.yaml): the pod waits in
// Init:0/2 with its init container saying so, until the Services exist; then
// it runs within seconds. Deleting everything leaves no services owner, no
// Service table and no address behind (the harness's leak check).
func TestWalkthrough(t *testing.T) {
	e := newEnv(t)
	if r := e.must("apply", "-f", filepath.Join("..", "examples", "myapp.yaml")); !strings.Contains(r.stdout, "pod/myapp-pod created") {
		t.Fatalf("apply: %s", r)
	}
	// Waiting for myservice: the cluster DNS answers NXDOMAIN.
	deadline := time.Now().Add(60 * time.Second)
	for {
		logs := e.podrun("logs", "myapp-pod", "-c", "init-myservice").stdout
		if strings.Contains(logs, "waiting for myservice") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("init-myservice never said it waits: %q", logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if s := e.status("myapp-pod"); s != "Init:0/2" {
		t.Errorf("status while waiting: %s; want Init:0/2", s)
	}
	// The pod's resolv.conf names the cluster DNS (the kube-dns address, .10 of the range).
	dnsIP := strings.TrimSuffix(e.serviceCIDR, "0/24") + "10"
	r := e.must("exec", "myapp-pod", "-c", "init-myservice", "--", "cat", "/etc/resolv.conf")
	if !strings.Contains(r.stdout, "nameserver "+dnsIP+"\n") || !strings.Contains(r.stdout, "search default.svc.cluster.local svc.cluster.local cluster.local") || !strings.Contains(r.stdout, "options ndots:5") {
		t.Errorf("resolv.conf: %s", r.stdout)
	}

	start := time.Now()
	r = e.must("apply", "-f", filepath.Join("..", "examples", "services.yaml"))
	if !strings.Contains(r.stdout, "service/myservice created") || !strings.Contains(r.stdout, "service/mydb created") {
		t.Fatalf("apply services: %s", r)
	}
	e.waitFor("myapp-pod", 20*time.Second, "Running 1/1", func(p *corev1.Pod) bool {
		return p.Status.Phase == "Running" && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready
	})
	t.Logf("Running %s after the Services were applied", time.Since(start).Round(100*time.Millisecond))
	if out := e.must("get").stdout; !strings.Contains(out, "1/1     Running") {
		t.Errorf("get: %s", out)
	}
	if out := e.must("logs", "myapp-pod").stdout; !strings.Contains(out, "The app is running!") {
		t.Errorf("app logs: %q", out)
	}
	// kubectl's columns for the two Services, their ClusterIPs in the range.
	out := e.must("get", "svc").stdout
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE" {
		t.Fatalf("get svc: %q", out)
	}
	ips := map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 6 || f[1] != "ClusterIP" || f[3] != "<none>" || f[4] != "80/TCP" || !strings.HasPrefix(f[2], strings.TrimSuffix(e.serviceCIDR, "0/24")) {
			t.Errorf("get svc row: %q", l)
		}
		ips[f[0]] = f[2]
	}
	// kubectl's get all: the pod, a blank line, the Services, names with their kinds.
	all := strings.Split(e.must("get", "all").stdout, "\n\n")
	if len(all) != 2 || !strings.Contains(all[0], "pod/myapp-pod") || !strings.Contains(all[0], "Running") ||
		!strings.Contains(all[1], "service/myservice") || !strings.Contains(all[1], "service/mydb") || !strings.Contains(all[1], ips["mydb"]) {
		t.Errorf("get all: %q", all)
	}
	// get -f and describe -f with the walkthrough's files, and with a file
	// of every kind (a pod twice): kubectl's table per kind, each object once.
	svcFile, podFile := filepath.Join("..", "examples", "services.yaml"), filepath.Join("..", "examples", "myapp.yaml")
	if out := e.must("get", "-f", svcFile).stdout; !regexp.MustCompile(`^NAME +TYPE +CLUSTER-IP +EXTERNAL-IP +PORT\(S\) +AGE\nmyservice +ClusterIP +` + regexp.QuoteMeta(ips["myservice"]) + ` +<none> +80/TCP +\S+\nmydb +ClusterIP +` + regexp.QuoteMeta(ips["mydb"]) + ` +<none> +80/TCP +\S+\n$`).MatchString(out) {
		t.Errorf("get -f services.yaml:\n%s", out)
	}
	if out := e.must("get", "-f", podFile).stdout; !regexp.MustCompile(`^NAME +READY +STATUS +RESTARTS +AGE\nmyapp-pod +1/1 +Running +0 +\S+\n$`).MatchString(out) {
		t.Errorf("get -f myapp.yaml:\n%s", out)
	}
	e.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: one}\n")
	podYAML, _ := os.ReadFile(podFile)
	svcYAML, _ := os.ReadFile(svcFile)
	mixed := e.manifest(string(podYAML) + "\n---\n" + string(svcYAML) + "\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n---\n" + string(podYAML))
	out = e.must("get", "-f", mixed).stdout
	if !regexp.MustCompile(`^NAME +READY +STATUS +RESTARTS +AGE\npod/myapp-pod +1/1 +Running +0 +\S+\n\n` +
		`NAME +TYPE +CLUSTER-IP +EXTERNAL-IP +PORT\(S\) +AGE\nservice/myservice +ClusterIP .*\nservice/mydb +ClusterIP .*\n\n` +
		`NAME +DATA +AGE\nconfigmap/settings +1 +\S+\n$`).MatchString(out) {
		t.Errorf("get -f of pod, Services, ConfigMap, pod:\n%s", out)
	}
	if out := e.must("get", "-f", mixed, "-o", "name").stdout; out != "pod/myapp-pod\nservice/myservice\nservice/mydb\nconfigmap/settings\n" {
		t.Errorf("get -f -o name: %q", out)
	}
	desc := e.must("describe", "-f", mixed).stdout
	var order []string
	for _, m := range regexp.MustCompile(`(?m)^Name: +(\S+)$`).FindAllStringSubmatch(desc, -1) {
		order = append(order, m[1])
	}
	if strings.Join(order, " ") != "myapp-pod myservice mydb settings" || !strings.Contains(desc, "Init Containers:") ||
		!regexp.MustCompile(`TargetPort: +9377/TCP`).MatchString(desc) || !strings.Contains(desc, "a:\n----\none\n") {
		t.Errorf("describe -f: objects %v\n%s", order, desc)
	}
	if r := e.podrun("get", "-f", e.manifest("apiVersion: v1\nkind: Service\nmetadata: {name: nosuch}\nspec: {ports: [{port: 1}]}\n---\n"+string(svcYAML))); r.code != 1 ||
		!strings.Contains(r.stdout, "myservice") || !strings.Contains(r.stderr, `services "nosuch" not found`) {
		t.Errorf("get -f with a missing Service: %s", r)
	}
	e.must("delete", "configmap", "settings")

	// Applied again, the Services keep their addresses.
	if r := e.must("apply", "-f", filepath.Join("..", "examples", "services.yaml")); !strings.Contains(r.stdout, "service/myservice unchanged") {
		t.Errorf("re-apply: %s", r)
	}
	if got := e.must("get", "svc", "myservice").stdout; !strings.Contains(got, ips["myservice"]) {
		t.Errorf("myservice's address changed: %s; was %s", got, ips["myservice"])
	}

	e.must("delete", "-f", filepath.Join("..", "examples", "services.yaml"))
	e.must("delete", "myapp-pod", "--grace-period", "1")
	if left := e.leftovers(); len(left) > 0 {
		t.Errorf("after deleting everything: %v", left)
	}
	if _, err := netlink.LinkByName(e.bridge); err == nil {
		t.Errorf("bridge %s is still there", e.bridge)
	}
	if _, err := os.Stat(filepath.Join(e.runRoot, "services", "owner.pid")); err == nil {
		t.Errorf("the services owner's pid file is left")
	}
}
