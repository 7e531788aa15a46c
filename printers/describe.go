package printers

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Event is one line of the Events table.
type Event struct {
	Time    time.Time
	Type    string
	Reason  string
	Object  string
	Message string
}

// Extra is what podrun knows besides the Pod object.
type Extra struct {
	Requests, Limits corev1.ResourceList // effective pod values
	CgroupPath       string
	Events           []Event
}

const timeFormat = "Mon, 02 Jan 2006 15:04:05 -0700"

// Describe prints a pod the way `kubectl describe pod` lays it out.
func Describe(w io.Writer, pod *corev1.Pod, extra Extra, now time.Time) {
	p := &prefixWriter{w: w}
	// kubectl aligns the values of this first block (up to "IP:") with a
	// tabwriter: its longest key is "Service Account:", or "Priority Class
	// Name:" when the pod names a class.
	if pod.Spec.PriorityClassName != "" {
		p.top = len("Priority Class Name:") + 2
	}
	p.kv(0, "Name", pod.Name)
	p.kv(0, "Namespace", pod.Namespace)
	if pod.Spec.Priority != nil { // kubectl's describePod
		p.kv(0, "Priority", strconv.Itoa(int(*pod.Spec.Priority)))
	}
	if pod.Spec.PriorityClassName != "" {
		p.kv(0, "Priority Class Name", pod.Spec.PriorityClassName)
	}
	if pod.Spec.ServiceAccountName != "" {
		p.kv(0, "Service Account", pod.Spec.ServiceAccountName)
	}
	p.kv(0, "Node", orNone(pod.Spec.NodeName+slashIP(pod.Status.HostIP)))
	if st := pod.Status.StartTime; st != nil {
		p.kv(0, "Start Time", st.Time.Format(timeFormat))
	}
	p.kv(0, "Labels", mapLinesWidth(pod.Labels, "=", p.width0()))
	p.kv(0, "Annotations", mapLinesWidth(pod.Annotations, ": ", p.width0()))
	status := string(pod.Status.Phase)
	if pod.DeletionTimestamp != nil {
		status = fmt.Sprintf("Terminating (lasts %s)", Since(*pod.DeletionTimestamp, now))
	}
	p.kv(0, "Status", status)
	if pod.Status.Reason != "" {
		p.kv(0, "Reason", pod.Status.Reason)
	}
	if pod.Status.Message != "" {
		p.kv(0, "Message", pod.Status.Message)
	}
	p.kv(0, "IP", pod.Status.PodIP)
	if len(pod.Status.PodIPs) == 0 {
		p.kv(0, "IPs", "<none>")
	} else {
		p.line(0, "IPs:")
		for _, ip := range pod.Status.PodIPs {
			p.kv(1, "IP", ip.IP)
		}
	}
	// describePod's printController: the controller's Kind/Name.
	if ref := metav1.GetControllerOf(pod); ref != nil {
		p.kv(0, "Controlled By", ref.Kind+"/"+ref.Name)
	}
	p.top = 0 // the block ends here
	if len(pod.Spec.InitContainers) > 0 {
		p.line(0, "Init Containers:")
		for i := range pod.Spec.InitContainers {
			c := &pod.Spec.InitContainers[i]
			describeContainer(p, c, findStatus(pod.Status.InitContainerStatuses, c.Name), pod)
		}
	}
	p.line(0, "Containers:")
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		describeContainer(p, c, findStatus(pod.Status.ContainerStatuses, c.Name), pod)
	}
	if len(pod.Spec.EphemeralContainers) > 0 {
		// describePod: the ephemeral containers as containers, after the others.
		p.line(0, "Ephemeral Containers:")
		for i := range pod.Spec.EphemeralContainers {
			c := corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
			describeContainer(p, &c, findStatus(pod.Status.EphemeralContainerStatuses, c.Name), pod)
		}
	}
	if len(pod.Status.Conditions) > 0 {
		p.line(0, "Conditions:")
		tw := NewTabWriter(w)
		fmt.Fprintf(tw, "  Type\tStatus\n")
		for _, c := range pod.Status.Conditions {
			fmt.Fprintf(tw, "  %s \t%s \n", c.Type, c.Status)
		}
		tw.Flush()
	}
	describeVolumes(p, pod.Spec.Volumes)
	p.kv(0, "QoS Class", string(pod.Status.QOSClass))
	if extra.CgroupPath != "" {
		p.kv(0, "Pod Cgroup", extra.CgroupPath)
	}
	if len(extra.Requests) > 0 || len(extra.Limits) > 0 {
		p.line(0, "Effective Resources:")
		if len(extra.Limits) > 0 {
			p.line(1, "Limits:")
			resources(p, 2, extra.Limits)
		}
		if len(extra.Requests) > 0 {
			p.line(1, "Requests:")
			resources(p, 2, extra.Requests)
		}
	}
	p.kv(0, "Node-Selectors", mapLines(pod.Spec.NodeSelector, "="))
	p.kv(0, "Tolerations", tolerationLines(pod.Spec.Tolerations, p.width0()))
	if len(extra.Events) == 0 {
		p.kv(0, "Events", "<none>")
		return
	}
	p.line(0, "Events:")
	tw := NewTabWriter(w)
	fmt.Fprintf(tw, "  Type\tReason\tAge\tFrom\tMessage\n")
	fmt.Fprintf(tw, "  ----\t------\t----\t----\t-------\n")
	for _, e := range extra.Events {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", e.Type, e.Reason, Since(metav1.NewTime(e.Time), now), "podrun", strings.TrimSpace(e.Message))
	}
	tw.Flush()
}

func slashIP(ip string) string {
	if ip == "" {
		return ""
	}
	return "/" + ip
}

func findStatus(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

func describeContainer(p *prefixWriter, c *corev1.Container, st *corev1.ContainerStatus, pod *corev1.Pod) {
	p.line(1, c.Name+":")
	if st != nil {
		p.kv(2, "Container ID", st.ContainerID)
	}
	p.kv(2, "Image", c.Image)
	if st != nil {
		p.kv(2, "Image ID", st.ImageID)
	}
	ports := func(host bool) string {
		var out []string
		for _, port := range c.Ports {
			n := port.ContainerPort
			if host {
				n = port.HostPort
			}
			out = append(out, fmt.Sprintf("%d/%s", n, port.Protocol))
		}
		if len(out) == 0 {
			return "<none>"
		}
		return strings.Join(out, ", ")
	}
	p.kv(2, "Port", ports(false))
	p.kv(2, "Host Port", ports(true))
	if len(c.Command) > 0 {
		p.line(2, "Command:")
		for _, s := range c.Command {
			p.line(3, s)
		}
	}
	if len(c.Args) > 0 {
		p.line(2, "Args:")
		for _, s := range c.Args {
			p.line(3, s)
		}
	}
	if st != nil {
		state(p, "State", st.State)
		if st.LastTerminationState.Terminated != nil || st.LastTerminationState.Running != nil {
			state(p, "Last State", st.LastTerminationState)
		}
		p.kv(2, "Ready", boolStr(st.Ready))
		p.kv(2, "Restart Count", fmt.Sprint(st.RestartCount))
	}
	if len(c.Resources.Limits) > 0 {
		p.line(2, "Limits:")
		resources(p, 3, c.Resources.Limits)
	}
	if len(c.Resources.Requests) > 0 {
		p.line(2, "Requests:")
		resources(p, 3, c.Resources.Requests)
	}
	probe := func(name string, pr *corev1.Probe) {
		if pr == nil {
			return
		}
		p.kv(2, name, fmt.Sprintf("%s delay=%ds timeout=%ds period=%ds #success=%d #failure=%d",
			probeAction(pr), pr.InitialDelaySeconds, pr.TimeoutSeconds, pr.PeriodSeconds, pr.SuccessThreshold, pr.FailureThreshold))
	}
	probe("Liveness", c.LivenessProbe)
	probe("Readiness", c.ReadinessProbe)
	probe("Startup", c.StartupProbe)
	if len(c.Env) == 0 && len(c.EnvFrom) == 0 {
		p.kv(2, "Environment", "<none>")
	} else {
		p.line(2, "Environment:")
		for _, e := range c.Env {
			v := e.Value
			if e.ValueFrom != nil {
				v = envSource(e.ValueFrom)
			}
			p.kv(3, e.Name, v)
		}
	}
	if len(c.VolumeMounts) == 0 {
		p.kv(2, "Mounts", "<none>")
	} else {
		p.line(2, "Mounts:")
		for _, m := range c.VolumeMounts {
			mode := "rw"
			if m.ReadOnly {
				mode = "ro"
			}
			sub := ""
			if m.SubPath != "" {
				sub = ", path = \"" + m.SubPath + "\""
			}
			p.line(3, fmt.Sprintf("%s from %s (%s%s)", m.MountPath, m.Name, mode, sub))
		}
	}
	_ = pod
}

func probeAction(pr *corev1.Probe) string {
	switch {
	case pr.Exec != nil:
		return "exec " + fmt.Sprint(pr.Exec.Command)
	case pr.HTTPGet != nil:
		host := pr.HTTPGet.Host
		return fmt.Sprintf("http-get %s://%s:%s%s", strings.ToLower(string(pr.HTTPGet.Scheme)), host, pr.HTTPGet.Port.String(), pr.HTTPGet.Path)
	case pr.TCPSocket != nil:
		return "tcp-socket " + pr.TCPSocket.Host + ":" + pr.TCPSocket.Port.String()
	case pr.GRPC != nil:
		return fmt.Sprintf("grpc <pod>:%d %s", pr.GRPC.Port, ptrStr(pr.GRPC.Service))
	}
	return "unknown"
}

func ptrStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func envSource(v *corev1.EnvVarSource) string {
	switch {
	case v.FieldRef != nil:
		return fmt.Sprintf(" (%s:%s)", v.FieldRef.APIVersion, v.FieldRef.FieldPath)
	case v.ResourceFieldRef != nil:
		return fmt.Sprintf("%s (%s)", v.ResourceFieldRef.Resource, v.ResourceFieldRef.ContainerName)
	case v.ConfigMapKeyRef != nil:
		return fmt.Sprintf("<set to the key '%s' of config map '%s'>", v.ConfigMapKeyRef.Key, v.ConfigMapKeyRef.Name)
	case v.SecretKeyRef != nil:
		return fmt.Sprintf("<set to the key '%s' in secret '%s'>", v.SecretKeyRef.Key, v.SecretKeyRef.Name)
	}
	return ""
}

func state(p *prefixWriter, label string, s corev1.ContainerState) {
	switch {
	case s.Running != nil:
		p.kv(2, label, "Running")
		p.kv(3, "Started", s.Running.StartedAt.Time.Format(timeFormat))
	case s.Waiting != nil:
		p.kv(2, label, "Waiting")
		if s.Waiting.Reason != "" {
			p.kv(3, "Reason", s.Waiting.Reason)
		}
		if s.Waiting.Message != "" {
			p.kv(3, "Message", s.Waiting.Message)
		}
	case s.Terminated != nil:
		t := s.Terminated
		p.kv(2, label, "Terminated")
		if t.Reason != "" {
			p.kv(3, "Reason", t.Reason)
		}
		if t.Message != "" {
			p.kv(3, "Message", strings.TrimSpace(t.Message))
		}
		p.kv(3, "Exit Code", fmt.Sprint(t.ExitCode))
		if t.Signal > 0 {
			p.kv(3, "Signal", fmt.Sprint(t.Signal))
		}
		p.kv(3, "Started", t.StartedAt.Time.Format(timeFormat))
		p.kv(3, "Finished", t.FinishedAt.Time.Format(timeFormat))
	default:
		p.kv(2, label, "Waiting")
	}
}

func resources(p *prefixWriter, indent int, rl corev1.ResourceList) {
	var names []string
	for n := range rl {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for _, n := range names {
		q := rl[corev1.ResourceName(n)]
		p.kv(indent, n, q.String())
	}
}

func describeVolumes(p *prefixWriter, vols []corev1.Volume) {
	if len(vols) == 0 {
		p.kv(0, "Volumes", "<none>")
		return
	}
	p.line(0, "Volumes:")
	for _, v := range vols {
		p.line(1, v.Name+":")
		switch {
		case v.EmptyDir != nil:
			p.kv(2, "Type", "EmptyDir (a temporary directory that shares a pod's lifetime)")
			p.kv(2, "Medium", string(v.EmptyDir.Medium))
			if v.EmptyDir.SizeLimit != nil {
				p.kv(2, "SizeLimit", v.EmptyDir.SizeLimit.String())
			} else {
				p.kv(2, "SizeLimit", "<unset>")
			}
		case v.HostPath != nil:
			p.kv(2, "Type", "HostPath (bare host directory volume)")
			p.kv(2, "Path", v.HostPath.Path)
		case v.ConfigMap != nil:
			p.kv(2, "Type", "ConfigMap (a volume populated by a ConfigMap)")
			p.kv(2, "Name", v.ConfigMap.Name)
		case v.Secret != nil:
			p.kv(2, "Type", "Secret (a volume populated by a Secret)")
			p.kv(2, "SecretName", v.Secret.SecretName)
		case v.DownwardAPI != nil:
			p.kv(2, "Type", "DownwardAPI (a volume populated by information about the pod)")
		case v.Projected != nil:
			p.kv(2, "Type", "Projected (a volume that contains injected data from multiple sources)")
		case v.PersistentVolumeClaim != nil:
			// kubectl's printPersistentVolumeClaimVolumeSource.
			p.kv(2, "Type", "PersistentVolumeClaim (a reference to a PersistentVolumeClaim in the same namespace)")
			p.kv(2, "ClaimName", v.PersistentVolumeClaim.ClaimName)
			p.kv(2, "ReadOnly", fmt.Sprint(v.PersistentVolumeClaim.ReadOnly))
		case v.Image != nil:
			// kubectl's printImageVolumeSource.
			p.kv(2, "Type", "Image (a container image or OCI artifact)")
			p.kv(2, "Reference", v.Image.Reference)
			p.kv(2, "PullPolicy", string(v.Image.PullPolicy))
		}
	}
}

func boolStr(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func mapLines(m map[string]string, sep string) string {
	return mapLinesWidth(m, sep, 18)
}

// tolerationLines are a pod's tolerations as kubectl describe prints them,
// one a line, sorted by key (describe.go printTolerationsMultilineWithIndent).
func tolerationLines(tolerations []corev1.Toleration, width int) string {
	if len(tolerations) == 0 {
		return "<none>"
	}
	ts := slices.Clone(tolerations)
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].Key < ts[j].Key })
	var lines []string
	for _, t := range ts {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		if t.Effect != "" {
			s += ":" + string(t.Effect)
		}
		// An Exists toleration with no key and no effect tolerates everything.
		if t.Operator == corev1.TolerationOpExists && t.Value == "" {
			if t.Key != "" || t.Effect != "" {
				s += " op=Exists"
			} else {
				s += "op=Exists"
			}
		}
		if t.TolerationSeconds != nil {
			s += fmt.Sprintf(" for %ds", *t.TolerationSeconds)
		}
		lines = append(lines, s)
	}
	return strings.Join(lines, "\n"+strings.Repeat(" ", width))
}

func mapLinesWidth(m map[string]string, sep string, width int) string {
	if len(m) == 0 {
		return "<none>"
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var lines []string
	for _, k := range keys {
		lines = append(lines, k+sep+m[k])
	}
	return strings.Join(lines, "\n"+strings.Repeat(" ", width))
}

// prefixWriter writes "Key:  value" lines aligned the way kubectl describe does.
type prefixWriter struct {
	w   io.Writer
	top int // the width of the top-level keys' column, when not 18
}

func (p *prefixWriter) width0() int {
	if p.top > 0 {
		return p.top
	}
	return 18
}

func (p *prefixWriter) line(indent int, s string) {
	fmt.Fprintf(p.w, "%s%s\n", strings.Repeat("  ", indent), s)
}

func (p *prefixWriter) kv(indent int, k, v string) {
	label := strings.Repeat("  ", indent) + k + ":"
	width := p.width0()
	if indent > 0 {
		width = 16 + 2*indent
	}
	fmt.Fprintf(p.w, "%-*s%s\n", width, label, v)
}
