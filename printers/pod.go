// Package printers renders pods as kubectl does: the `get` table with its
// STATUS strings (pkg/printers/internalversion/printers.go printPod) and the
// `describe` text.
package printers

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Row is one line of `podrun get`.
type Row struct {
	Name, Ready, Status, Restarts, Age string
	IP, Node                           string
}

func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// Since is kubectl's translateTimestampSince.
func Since(ts metav1.Time, now time.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(ts.Time))
}

func hasPodReadyCondition(conds []corev1.PodCondition) bool {
	for _, c := range conds {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func isPodInitializedConditionTrue(st *corev1.PodStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == corev1.PodInitialized {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodRow computes the columns kubectl prints for a pod.
func PodRow(pod *corev1.Pod, now time.Time) Row {
	restarts, sidecarRestarts := 0, 0
	total := len(pod.Spec.Containers)
	ready := 0
	var lastRestart, lastSidecarRestart metav1.Time
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	inits := map[string]*corev1.Container{}
	for i := range pod.Spec.InitContainers {
		inits[pod.Spec.InitContainers[i].Name] = &pod.Spec.InitContainers[i]
		if isSidecar(&pod.Spec.InitContainers[i]) {
			total++
		}
	}
	initializing := false
	for i, c := range pod.Status.InitContainerStatuses {
		restarts += int(c.RestartCount)
		if t := c.LastTerminationState.Terminated; t != nil && lastRestart.Before(&t.FinishedAt) {
			lastRestart = t.FinishedAt
		}
		spec := inits[c.Name]
		sidecar := spec != nil && isSidecar(spec)
		if sidecar {
			sidecarRestarts += int(c.RestartCount)
			if t := c.LastTerminationState.Terminated; t != nil && lastSidecarRestart.Before(&t.FinishedAt) {
				lastSidecarRestart = t.FinishedAt
			}
		}
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case sidecar && c.Started != nil && *c.Started:
			if c.Ready {
				ready++
			}
			continue
		case c.State.Terminated != nil:
			t := c.State.Terminated
			switch {
			case t.Reason != "":
				reason = "Init:" + t.Reason
			case t.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
			}
			initializing = true
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + c.State.Waiting.Reason
			initializing = true
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
			initializing = true
		}
		break
	}
	if !initializing || isPodInitializedConditionTrue(&pod.Status) {
		restarts = sidecarRestarts
		lastRestart = lastSidecarRestart
		hasRunning := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			c := pod.Status.ContainerStatuses[i]
			restarts += int(c.RestartCount)
			if t := c.LastTerminationState.Terminated; t != nil && lastRestart.Before(&t.FinishedAt) {
				lastRestart = t.FinishedAt
			}
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "":
				reason = c.State.Waiting.Reason
			case c.State.Terminated != nil && c.State.Terminated.Reason != "":
				reason = c.State.Terminated.Reason
			case c.State.Terminated != nil:
				if c.State.Terminated.Signal != 0 {
					reason = fmt.Sprintf("Signal:%d", c.State.Terminated.Signal)
				} else {
					reason = fmt.Sprintf("ExitCode:%d", c.State.Terminated.ExitCode)
				}
			case c.Ready && c.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		if reason == "Completed" && hasRunning {
			if hasPodReadyCondition(pod.Status.Conditions) {
				reason = "Running"
			} else {
				reason = "NotReady"
			}
		}
	}
	if pod.DeletionTimestamp != nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		reason = "Terminating"
	}
	restartsStr := strconv.Itoa(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartsStr = fmt.Sprintf("%d (%s ago)", restarts, Since(lastRestart, now))
	}
	ip := "<none>"
	if len(pod.Status.PodIPs) > 0 {
		ip = pod.Status.PodIPs[0].IP
	}
	node := pod.Spec.NodeName
	if node == "" {
		node = "<none>"
	}
	return Row{
		Name: pod.Name, Ready: fmt.Sprintf("%d/%d", ready, total), Status: reason,
		Restarts: restartsStr, Age: Since(pod.CreationTimestamp, now), IP: ip, Node: node,
	}
}

// readinessGates is printPod's READINESS GATES column: how many of the
// pod's readiness gates have their condition True, of how many.
func readinessGates(pod *corev1.Pod) string {
	if len(pod.Spec.ReadinessGates) == 0 {
		return "<none>"
	}
	n := 0
	for _, g := range pod.Spec.ReadinessGates {
		for _, c := range pod.Status.Conditions {
			if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
				n++
				break
			}
		}
	}
	return fmt.Sprintf("%d/%d", n, len(pod.Spec.ReadinessGates))
}

// NewTabWriter is kubectl's table writer.
func NewTabWriter(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
}

// PrintTable prints pods as `kubectl get pods` does (-o wide adds IP and NODE;
// allNamespaces adds NAMESPACE first).
func PrintTable(w io.Writer, pods []*corev1.Pod, wide, allNamespaces bool, now time.Time) error {
	return PrintTableWith(w, pods, TableOptions{Wide: wide, AllNamespaces: allNamespaces}, now)
}

// TableOptions are kubectl get's table flags.
type TableOptions struct {
	Wide, AllNamespaces bool
	NoHeaders           bool     // --no-headers
	ShowLabels          bool     // --show-labels: a LABELS column
	LabelColumns        []string // -L KEY: one column per label key
}

// PrintTableWith prints the table with kubectl get's table flags.
func PrintTableWith(w io.Writer, pods []*corev1.Pod, o TableOptions, now time.Time) error {
	tw := NewTabWriter(w)
	if !o.NoHeaders {
		if o.AllNamespaces {
			fmt.Fprint(tw, "NAMESPACE\t")
		}
		fmt.Fprint(tw, "NAME\tREADY\tSTATUS\tRESTARTS\tAGE")
		if o.Wide {
			fmt.Fprint(tw, "\tIP\tNODE\tNOMINATED NODE\tREADINESS GATES")
		}
		for _, k := range o.LabelColumns {
			fmt.Fprintf(tw, "\t%s", labelHeader(k))
		}
		if o.ShowLabels {
			fmt.Fprint(tw, "\tLABELS")
		}
		fmt.Fprintln(tw)
	}
	for _, p := range pods {
		r := PodRow(p, now)
		if o.AllNamespaces {
			fmt.Fprintf(tw, "%s\t", p.Namespace)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s", r.Name, r.Ready, r.Status, r.Restarts, r.Age)
		if o.Wide {
			fmt.Fprintf(tw, "\t%s\t%s\t<none>\t%s", r.IP, r.Node, readinessGates(p))
		}
		for _, k := range o.LabelColumns {
			fmt.Fprintf(tw, "\t%s", p.Labels[k])
		}
		if o.ShowLabels {
			fmt.Fprintf(tw, "\t%s", FormatLabels(p.Labels))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// labelHeader is kubectl's -L column title: the key's last path segment, upper case.
func labelHeader(key string) string {
	parts := strings.Split(key, "/")
	return strings.ToUpper(parts[len(parts)-1])
}

// FormatLabels is labels.FormatLabels: k=v sorted by key, comma separated, or <none>.
func FormatLabels(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + m[k])
	}
	return b.String()
}
