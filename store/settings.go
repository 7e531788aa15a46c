package store

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SettingsVersion is the version of the pod settings this podrun writes.
const SettingsVersion = 1

// Settings are a pod's host settings, fixed when it is applied and kept in
// its record: the supervisor runs the pod with them, and teardown, describe
// and revive use them rather than the flags of the command at hand (runc
// keeps a container's config and cgroup paths in its state.json likewise).
type Settings struct {
	Version        int             `json:"version"`
	CgroupParent   string          `json:"cgroupParent"`
	CgroupDriver   string          `json:"cgroupDriver"`
	Bridge         string          `json:"bridge,omitempty"`
	Subnet         string          `json:"subnet,omitempty"`
	BackoffInitial metav1.Duration `json:"backoffInitial"`
	BackoffMax     metav1.Duration `json:"backoffMax"`
	PidsLimit      int64           `json:"pidsLimit,omitempty"`
	// SyncFrequency is how often the supervisor refreshes configMap and
	// secret volumes from the store (the kubelet's --sync-frequency).
	SyncFrequency metav1.Duration `json:"syncFrequency"`
	// AllowedUnsafeSysctls is the kubelet's --allowed-unsafe-sysctls at apply.
	AllowedUnsafeSysctls []string `json:"allowedUnsafeSysctls,omitempty"`
	// LogMaxSize and LogMaxFiles rotate container logs (the kubelet's
	// --container-log-max-size and --container-log-max-files); 0 means the
	// kubelet's defaults, 10 MiB and 5.
	LogMaxSize  int64 `json:"logMaxSize,omitempty"`
	LogMaxFiles int   `json:"logMaxFiles,omitempty"`
	// SeccompDefault makes RuntimeDefault the seccomp profile of containers
	// that set none (the kubelet's --seccomp-default).
	SeccompDefault bool `json:"seccompDefault,omitempty"`
	// ClusterDNS is the cluster DNS address (the kube-dns ClusterIP) the
	// pod's resolv.conf names for dnsPolicy ClusterFirst; empty: none.
	ClusterDNS string `json:"clusterDNS,omitempty"`
	// ResolvConf is the kubelet's --resolv-conf: the resolver configuration
	// the pod's resolv.conf starts from; empty: the host's.
	ResolvConf string `json:"resolvConf,omitempty"`
}

// DefaultSyncFrequency is the kubelet's --sync-frequency.
const DefaultSyncFrequency = time.Minute

// PodLayout is l with the pod's recorded settings: where its cgroup and
// network live. A record without settings (written by an older podrun) keeps l's.
func (r *Record) PodLayout(l Layout) Layout {
	s := r.Settings
	if s.Version == 0 {
		return l
	}
	l.CgroupParent, l.CgroupDriver, l.Bridge, l.Subnet, l.ClusterDNS = s.CgroupParent, s.CgroupDriver, s.Bridge, s.Subnet, s.ClusterDNS
	l.ResolvConf = s.ResolvConf
	return l
}
