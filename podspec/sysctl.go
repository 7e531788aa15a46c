package podspec

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/internal/lazyregexp"
)

// ReasonSysctlForbidden is the reason of a pod the kubelet rejects for its
// sysctls (pkg/kubelet/sysctl ForbiddenReason).
const ReasonSysctlForbidden = "SysctlForbidden"

// safeSysctls is the kubelet's safe sysctl list (pkg/kubelet/sysctl/safe_sysctls.go),
// with the kernel version from which each is namespaced.
var safeSysctls = []struct {
	name   string
	kernel string // minimum kernel version, "" for any
}{
	{name: "kernel.shm_rmid_forced"},
	{name: "net.ipv4.ip_local_port_range"},
	{name: "net.ipv4.tcp_syncookies"},
	{name: "net.ipv4.ping_group_range"},
	{name: "net.ipv4.ip_unprivileged_port_start"},
	{name: "net.ipv4.ip_local_reserved_ports", kernel: "3.16"},
	{name: "net.ipv4.tcp_keepalive_time", kernel: "4.5"},
	{name: "net.ipv4.tcp_fin_timeout", kernel: "4.6"},
	{name: "net.ipv4.tcp_keepalive_intvl", kernel: "4.5"},
	{name: "net.ipv4.tcp_keepalive_probes", kernel: "4.5"},
	{name: "net.ipv4.tcp_rmem"},
	{name: "net.ipv4.tcp_wmem"},
}

// SafeSysctls is the kubelet's SafeSysctlAllowlist for a kernel release
// (uname -r): the sysctls that are namespaced and isolated from other pods.
func SafeSysctls(kernelRelease string) []string {
	var out []string
	for _, s := range safeSysctls {
		if s.kernel == "" || kernelAtLeast(kernelRelease, s.kernel) {
			out = append(out, s.name)
		}
	}
	return out
}

// kernelAtLeast compares the leading major.minor of a kernel release.
func kernelAtLeast(release, min string) bool {
	parse := func(v string) (int, int, bool) {
		parts := strings.SplitN(v, ".", 3)
		if len(parts) < 2 {
			return 0, 0, false
		}
		minor := parts[1] // "18" of "6.18", "4-rc1" of "5.4-rc1"
		if i := strings.IndexFunc(minor, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
			minor = minor[:i]
		}
		major, err1 := strconv.Atoi(parts[0])
		n, err2 := strconv.Atoi(minor)
		return major, n, err1 == nil && err2 == nil
	}
	rMaj, rMin, ok := parse(release)
	if !ok {
		return false // the kubelet drops version-bound sysctls when it cannot tell
	}
	mMaj, mMin, _ := parse(min)
	return rMaj > mMaj || rMaj == mMaj && rMin >= mMin
}

// The sysctls known to be namespaced, and by which namespace
// (component-helpers/node/util/sysctl namespaceOf).
var (
	sysctlNamespaceByName = map[string]string{
		"kernel.sem":    "IPC",
		"kernel.shmall": "IPC", "kernel.shmmax": "IPC", "kernel.shmmni": "IPC", "kernel.shm_rmid_forced": "IPC",
		"kernel.shm":    "IPC",
		"kernel.msgmax": "IPC", "kernel.msgmnb": "IPC", "kernel.msgmni": "IPC",
		"kernel.msg": "IPC",
	}
	sysctlNamespaceByPrefix = map[string]string{"net": "Net", "fs.mqueue": "IPC"}
)

func sysctlNamespaceOf(name string) string {
	if ns, ok := sysctlNamespaceByName[name]; ok {
		return ns
	}
	for p, ns := range sysctlNamespaceByPrefix {
		if strings.HasPrefix(name, p+".") {
			return ns
		}
	}
	return ""
}

// normalizeSysctlName is component-helpers' NormalizeName: a name whose
// first separator is "/" uses "/" between segments and "." inside them.
func normalizeSysctlName(name string) string {
	i := strings.IndexAny(name, "./")
	if i < 0 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, name)
}

// sysctlPatternRegexp is policy validation's IsValidSysctlPattern.
// sysctlSegmentFmt is one dot- or slash-separated part of a sysctl name
// (pkg/apis/core/validation).
const (
	sysctlSegmentFmt = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
	sysctlMaxLength  = 253
)

var sysctlPatternRegexp = lazyregexp.New("^(" + sysctlSegmentFmt + "[\\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]$")

// SysctlAllowlist is the kubelet's sysctl admission (pkg/kubelet/sysctl
// patternAllowlist): the safe sysctls plus --allowed-unsafe-sysctls.
type SysctlAllowlist struct {
	sysctls, prefixes map[string]string // name or prefix → namespace
}

// NewSysctlAllowlist builds the kubelet's allowlist for a kernel release from
// the safe sysctls and the allowed unsafe ones (names or patterns ending in
// "*"), which must be known to be namespaced, as the kubelet requires.
func NewSysctlAllowlist(kernelRelease string, allowedUnsafe []string) (*SysctlAllowlist, error) {
	w := &SysctlAllowlist{sysctls: map[string]string{}, prefixes: map[string]string{}}
	for _, s := range append(SafeSysctls(kernelRelease), allowedUnsafe...) {
		if len(s) > sysctlMaxLength || !sysctlPatternRegexp.MatchString(s) {
			return nil, fmt.Errorf("sysctl %q must have at most %d characters and match regex %s", s, sysctlMaxLength, strings.Trim(sysctlPatternRegexp.String(), "^$"))
		}
		name := normalizeSysctlName(s)
		prefixed := false
		if i := strings.Index(name, "*"); i >= 0 {
			name, prefixed = name[:i], true
		}
		ns := sysctlNamespaceOf(name)
		if ns == "" {
			return nil, fmt.Errorf("the sysctls %q are not known to be namespaced", name)
		}
		if prefixed {
			w.prefixes[name] = ns
		} else {
			w.sysctls[name] = ns
		}
	}
	return w, nil
}

// Admit is the kubelet's admission of a pod's sysctls: it returns the reason
// and message of a rejection, or ok.
func (w *SysctlAllowlist) Admit(pod *corev1.Pod) (message string, ok bool) {
	sc := pod.Spec.SecurityContext
	if sc == nil {
		return "", true
	}
	for _, s := range sc.Sysctls {
		if err := w.validate(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC); err != nil {
			return fmt.Sprintf("forbidden sysctl: %v", err), false
		}
	}
	return "", true
}

func (w *SysctlAllowlist) validate(name string, hostNet, hostIPC bool) error {
	name = normalizeSysctlName(name)
	check := func(ns string) error {
		if ns == "IPC" && hostIPC || ns == "Net" && hostNet {
			return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
		}
		return nil
	}
	if ns, ok := w.sysctls[name]; ok {
		return check(ns)
	}
	prefixes := make([]string, 0, len(w.prefixes))
	for p := range w.prefixes {
		prefixes = append(prefixes, p)
	}
	sort.Strings(prefixes)
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return check(w.prefixes[p])
		}
	}
	return fmt.Errorf("%q not allowlisted", name)
}
