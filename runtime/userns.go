package runtime

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/store"
)

// usernsLength is the number of IDs a pod with hostUsers: false gets, the
// kubelet's userNsLength: container IDs 0-65535 map to 65536 host IDs of
// the pod's own, a multiple of 65536 (pkg/kubelet/userns/userns_manager.go).
const usernsLength = 65536

// usernsRange is the host IDs pods' user namespaces are taken from: the
// subordinate IDs of the user "kubelet" in /etc/subuid when it has some (as
// the kubelet's getKubeletMappings asks getsubids), else the kubelet's
// default, every range above the first 65536 IDs.
func usernsRange() (first, count uint64) {
	first, count = usernsLength, 1<<32-usernsLength
	f, err := os.Open("/etc/subuid")
	if err != nil {
		return first, count
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(parts) != 3 || parts[0] != "kubelet" {
			continue
		}
		s, err1 := strconv.ParseUint(parts[1], 10, 32)
		n, err2 := strconv.ParseUint(parts[2], 10, 32)
		// The kubelet refuses a range that is not made of whole 65536-ID blocks.
		if err1 == nil && err2 == nil && s%usernsLength == 0 && n >= usernsLength && n%usernsLength == 0 {
			return s, n
		}
	}
	return first, count
}

// allocateUserNS gives the pod the first free block of the range: a file
// per block under the run root, created exclusively, names the pod that
// holds it, and the pod's run directory keeps its block's first host ID.
// The pod holds its block until it is removed (ReleaseUserNS), not only
// while its containers run, as the kubelet's userns manager keeps a pod's
// mapping until the pod is gone; a block whose pod's run directory is gone
// (removed while its remover was cut short) is taken back.
func allocateUserNS(l store.Layout, paths store.PodPaths, uid string) (uint32, error) {
	if data, err := os.ReadFile(paths.UserNSFile()); err == nil {
		if base, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 32); err == nil {
			return uint32(base), nil // kept from an earlier attempt of this sandbox
		}
	}
	dir := filepath.Join(l.RunRoot, "userns")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	first, count := usernsRange()
	for block := uint64(0); block < count/usernsLength; block++ {
		base := first + block*usernsLength
		name := filepath.Join(dir, strconv.FormatUint(base, 10))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			if holder, rerr := os.ReadFile(name); rerr == nil && len(holder) > 0 {
				if _, serr := os.Stat(filepath.Join(l.RunRoot, "pods", strings.TrimSpace(string(holder)))); errors.Is(serr, fs.ErrNotExist) {
					_ = os.Remove(name) // its pod is gone
					block--
				}
			}
			continue
		}
		if err != nil {
			return 0, err
		}
		_, err = f.WriteString(uid + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = store.ReplaceFile(paths.UserNSFile(), []byte(strconv.FormatUint(base, 10)+"\n"))
		}
		if err != nil {
			_ = os.Remove(name)
			return 0, err
		}
		return uint32(base), nil
	}
	return 0, fmt.Errorf("no free user namespace range: all %d ranges of %d IDs from host ID %d are taken", count/usernsLength, usernsLength, first)
}

// ReleaseUserNS gives a removed pod's block of host IDs back.
func ReleaseUserNS(l store.Layout, paths store.PodPaths) {
	data, err := os.ReadFile(paths.UserNSFile())
	if err != nil {
		return
	}
	if base, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 32); err == nil {
		_ = os.Remove(filepath.Join(l.RunRoot, "userns", strconv.FormatUint(base, 10)))
	}
	_ = os.Remove(paths.UserNSFile())
}

// openUserNS returns a user namespace with the pod's mapping, for the
// idmapped mounts of its containers' image layers: a process started in a
// new user namespace with the mapping (the kernel writes it before the
// process runs anything) is killed once its namespace is open; the open
// file keeps the namespace.
func openUserNS(base uint32) (*os.File, error) {
	m := []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(base), Size: usernsLength}}
	// /proc/self/exe: the magic link reaches the binary without searching
	// the directories above it, which the namespace's root may not.
	cmd := exec.Command("/proc/self/exe", "pause")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER, UidMappings: m, GidMappings: m, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("making the pod's user namespace: %w", err)
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if err != nil {
		return nil, fmt.Errorf("making the pod's user namespace: %w", err)
	}
	return f, nil
}

// reachableRootfs lets the processes of the pod's user namespace reach its
// containers' root filesystems: runc's init prepares the rootfs from inside
// the container's user namespace, where the host's root owns nothing, so
// every directory on the way must be searchable by others (o+x), as
// containerd keeps its state directories 0711. podrun's own directories
// (the run root down to the pod's) get o+x; a directory above the run root
// that lacks it is an error that says so.
func reachableRootfs(l store.Layout, paths store.PodPaths) error {
	for _, d := range []string{l.RunRoot, filepath.Join(l.RunRoot, "pods"), paths.RunDir} {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, fi.Mode().Perm()|0o011); err != nil {
				return err
			}
		}
	}
	for d := filepath.Dir(filepath.Clean(l.RunRoot)); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("hostUsers: false: directory %s above the run root %s is not searchable by other users (mode %04o), so the pod's user namespace cannot reach its containers' root filesystems: use a run root under /run (the default, --run-root) or chmod o+x %s", d, l.RunRoot, fi.Mode().Perm(), d)
		}
		if d == "/" {
			return nil
		}
	}
}
