package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ServiceKind is core/v1 Service: a host-wide object whose allocations
// (ClusterIP, node ports) are part of the stored object, so that they stay
// the same when the Service is applied again.
var ServiceKind = &Kind{
	Name: "Service", Plural: "services", Aliases: []string{"service", "svc"},
	newObject: func() object { return &corev1.Service{} },
	same: func(a, b object) bool {
		x, y := a.(*corev1.Service), b.(*corev1.Service)
		return reflect.DeepEqual(x.Spec, y.Spec) && sameMeta(x, y)
	},
	immutable: func(object) bool { return false },
}

// Services returns the stored Services of a namespace ("" = every namespace),
// sorted by namespace and name.
func (l Layout) Services(namespace string) []*corev1.Service {
	objs, _ := l.List(ServiceKind, namespace)
	out := make([]*corev1.Service, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*corev1.Service))
	}
	return out
}

// ServiceSettings are the host's Service settings, recorded when the first
// pod or Service is applied: the service range, the cluster DNS address in
// it, and the pod network the cluster DNS serves on.
type ServiceSettings struct {
	Version     int    `json:"version"`
	ServiceCIDR string `json:"serviceCIDR"`
	ClusterDNS  string `json:"clusterDNS"`
	Bridge      string `json:"bridge,omitempty"`
	Subnet      string `json:"subnet,omitempty"`
	// ResolvConf is the kubelet's --resolv-conf: the file whose nameservers
	// the cluster DNS forwards other names to (CoreDNS's forward . /etc/resolv.conf
	// in a pod of dnsPolicy Default); empty: the host's.
	ResolvConf string `json:"resolvConf,omitempty"`
}

// ServicesDir holds the recorded Service settings and the services owner's log.
func (l Layout) ServicesDir() string { return filepath.Join(l.Root, "services") }

func (l Layout) serviceSettingsFile() string {
	return filepath.Join(l.ServicesDir(), "settings.json")
}

// ReadServiceSettings returns the recorded settings; fs.ErrNotExist before
// the first record.
func (l Layout) ReadServiceSettings() (ServiceSettings, error) {
	var s ServiceSettings
	err := ReadJSON(l.serviceSettingsFile(), &s)
	return s, err
}

// WriteServiceSettings records the settings.
func (l Layout) WriteServiceSettings(s ServiceSettings) error {
	if err := os.MkdirAll(l.ServicesDir(), 0o700); err != nil {
		return err
	}
	s.Version = 1
	return WriteJSON(l.serviceSettingsFile(), s)
}

// OwnerPaths are the services owner's process files under the run root: the
// lock it holds for its life, its pid and start time, and the start lock that
// a command starting it and the owner deciding to exit both take.
type OwnerPaths struct{ Dir string }

// ServicesOwner returns the services owner's paths.
func (l Layout) ServicesOwner() OwnerPaths {
	return OwnerPaths{Dir: filepath.Join(l.RunRoot, "services")}
}

func (o OwnerPaths) LockFile() string      { return filepath.Join(o.Dir, "owner.lock") }
func (o OwnerPaths) StartLockFile() string { return filepath.Join(o.Dir, "start.lock") }
func (o OwnerPaths) PidFile() string       { return filepath.Join(o.Dir, "owner.pid") }
func (o OwnerPaths) StartTimeFile() string { return filepath.Join(o.Dir, "owner.start") }

// The exiting owner's record: the one RemoveOwner gave up, kept so that a
// command can wait through the process's last steps after it.
func (o OwnerPaths) exitingPidFile() string   { return filepath.Join(o.Dir, "exiting.pid") }
func (o OwnerPaths) exitingStartFile() string { return filepath.Join(o.Dir, "exiting.start") }

// WriteOwner records the calling process as the services owner.
func WriteOwner(o OwnerPaths) error {
	start, err := ProcessStartTime(os.Getpid())
	if err != nil {
		return err
	}
	if err := writeFileAtomic(o.StartTimeFile(), []byte(strconv.FormatUint(start, 10))); err != nil {
		return err
	}
	return writeFileAtomic(o.PidFile(), []byte(strconv.Itoa(os.Getpid())))
}

// RemoveOwner forgets the recorded owner: no command counts on it any more
// and the next one starts a new owner. Its record becomes the exiting
// owner's (ExitingOwnerPid), for the process still runs its last steps
// (releasing what it holds) after this. The start time moves first: a
// reader that finds the moved pid finds its start time beside it.
func RemoveOwner(o OwnerPaths) {
	_ = os.Rename(o.StartTimeFile(), o.exitingStartFile())
	_ = os.Rename(o.PidFile(), o.exitingPidFile())
}

// OwnerPid returns the pid of the services owner when it is alive, else 0
// (the recorded pid runs with the recorded start time).
func OwnerPid(o OwnerPaths) int {
	return livePid(o.PidFile(), o.StartTimeFile())
}

// ExitingOwnerPid returns the pid of the owner that RemoveOwner forgot while
// it still runs, else 0.
func ExitingOwnerPid(o OwnerPaths) int {
	return livePid(o.exitingPidFile(), o.exitingStartFile())
}

// HasObjectsForOwner reports whether any pod record or Service exists: the
// services owner runs while one does.
func HasObjectsForOwner(l Layout) bool {
	if entries, err := os.ReadDir(l.PodsDir()); err == nil {
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !Removing(filepath.Join(l.PodsDir(), e.Name())) {
				return true
			}
		}
	}
	objs, err := l.List(ServiceKind, "")
	return (err == nil || errors.Is(err, fs.ErrNotExist)) && len(objs) > 0
}
