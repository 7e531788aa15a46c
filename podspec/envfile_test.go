//go:build !podrun_lean

package podspec

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// ParseEnvFile follows the kubelet's ParseEnv (pkg/kubelet/util/env), its
// values and its messages.
func TestParseEnvFile(t *testing.T) {
	tests := []struct {
		name, content, key string
		want               string
		err                string // a substring of the error
	}{
		// What the e2e tests' init containers write: echo K=\'v\' > file.
		{name: "echo's lines", content: "CONFIG_1='value1'\nCONFIG_2='value2'\n", key: "CONFIG_2", want: "value2"},
		{name: "leading blanks", content: "   A='1'\n\t\tB='2'\n", key: "B", want: "2"},
		{name: "comments and blank lines", content: "# c\n\n   # c2\n \t\nA='1'\n", key: "A", want: "1"},
		{name: "comment after the value", content: "A='1'   # note\n", key: "A", want: "1"},
		{name: "no newline at the end", content: "A='1'", key: "A", want: "1"},
		{name: "CRLF lines", content: "A='1'\r\nB='2'\r\n", key: "B", want: "2"},
		{name: "literal content", content: `A='$HOME ${X} \n "q" #x =y'` + "\n", key: "A", want: `$HOME ${X} \n "q" #x =y`},
		{name: "blanks kept inside quotes", content: "A='  x  '\n", key: "A", want: "  x  "},
		{name: "a value over lines", content: "A='one\n  two\nthree'\nB='b'\n", key: "A", want: "one\n  two\nthree"},
		{name: "a key over lines skipped", content: "A='one\ntwo'\nB='b'\n", key: "B", want: "b"},
		{name: "the first definition wins", content: "A='1'\nA='2'\n", key: "A", want: "1"},
		{name: "lines after the key are not read", content: "A='1'\nnot a line\n", key: "A", want: "1"},
		{name: "missing key", content: "A='1'\n", key: "B", want: ""},
		{name: "empty value", content: "A=''\n", key: "A", want: ""},
		{name: "blank after = empties the value", content: "A= 'x'\nB='b'\n", key: "A", want: ""},
		{name: "blank after = on another key", content: "A= 'x'\nB='b'\n", key: "B", want: "b"},
		{name: "empty file", content: "", key: "A", want: ""},
		{name: "relaxed key names", content: "a.b-c:d='v'\n", key: "a.b-c:d", want: "v"},

		{name: "missing =", content: "A='1'\nJUNK\nB='2'\n", key: "B", err: "invalid environment variable format at line 2: missing '='"},
		{name: "empty name", content: "='x'\nB='2'\n", key: "B", err: "invalid environment variable format at line 1: empty variable name"},
		{name: "blank before =", content: "A ='1'\n", key: "A", err: "invalid environment variable format at line 1: whitespace before '=' is not allowed"},
		{name: "unquoted", content: "A=1\n", key: "A", err: "invalid environment variable format at line 1: value must be enclosed in single quotes"},
		{name: "double quotes", content: `A="1"` + "\n", key: "A", err: "value must be enclosed in single quotes"},
		{name: "content after the quote", content: "A='1'x\n", key: "A", err: "invalid environment variable format at line 1: unexpected content after closing quote"},
		{name: "adjacent quoted strings", content: "A='1''2'\n", key: "A", err: "unexpected content after closing quote"},
		// The line number is the line of the closing quote.
		{name: "content after a quote lines later", content: "A='1\n2'x\n", key: "A", err: "at line 2: unexpected content after closing quote"},
		{name: "unclosed quote", content: "A='1\nB='2'\n", key: "B", err: "at line 2: unexpected content after closing quote"},
		{name: "unclosed at the end", content: "B='2'\nA='1\n", key: "A", err: "invalid environment variable format starting at line 2: unclosed single quote"},
		{name: "an error before the key", content: "A=1\nB='2'\n", key: "B", err: "at line 1"},
		{name: "a line over 64 KiB", content: "A='" + strings.Repeat("x", 70000) + "'\n", key: "A", err: "error reading environment variable file"},
	}
	dir := t.TempDir()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "f"+string(rune('a'+i%26))+strings.Repeat("x", i/26))
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ParseEnvFile(path, tt.key)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseEnvFile = %q, %v; want error with %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseEnvFile = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := ParseEnvFile(filepath.Join(dir, "absent"), "A"); err == nil || !strings.Contains(err.Error(), `failed to open environment variable file "`) {
		t.Errorf("absent file: %v", err)
	}
}

// fileKeyPlan is a pod whose init container "setup" writes an env file in
// the emptyDir "config" that its app container "app" reads with env.
func fileKeyPlan(t *testing.T, env string) *Plan {
	t.Helper()
	return envPlan(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"+`  initContainers:
  - name: setup
    image: busybox
    volumeMounts: [{name: config, mountPath: /data}]
  containers:
  - name: app
    image: busybox
`+env+`
  volumes:
  - {name: config, emptyDir: {}}
  - {name: unused, emptyDir: {}}
`)
}

// writeEnvFile makes a volume directory with config.env holding content;
// RuntimeInfo.VolumePaths names it as the runtime does.
func writeEnvFile(t *testing.T, content string) (string, RuntimeInfo) {
	t.Helper()
	dir := t.TempDir()
	vol := filepath.Join(dir, "volumes", "config")
	if err := os.MkdirAll(vol, 0o777); err != nil {
		t.Fatal(err)
	}
	if content != "" {
		if err := os.WriteFile(filepath.Join(vol, "config.env"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rt := testRuntime
	rt.VolumePaths = map[string]string{"config": vol, "unused": filepath.Join(dir, "volumes", "unused")}
	return vol, rt
}

func TestPodEnvFileKeyRef(t *testing.T) {
	p := fileKeyPlan(t, `    env:
    - {name: CONFIG_1, valueFrom: {fileKeyRef: {volumeName: config, path: config.env, key: CONFIG_1}}}
    - {name: SECOND, valueFrom: {fileKeyRef: {volumeName: config, path: /config.env, key: CONFIG_2}}}
    - {name: EXPANDED, value: "$(CONFIG_1)-x"}
    - {name: MISSING, valueFrom: {fileKeyRef: {volumeName: config, path: config.env, key: MISSING, optional: true}}}
    - {name: EMPTY, valueFrom: {fileKeyRef: {volumeName: config, path: config.env, key: EMPTY, optional: true}}}
    - {name: LITERAL, valueFrom: {fileKeyRef: {volumeName: config, path: config.env, key: LITERAL}}}
`)
	if o := p.Pod.Spec.Containers[0].Env[0].ValueFrom.FileKeyRef.Optional; o == nil || *o {
		t.Errorf("optional defaults to %v, want false (+default=false)", o)
	}
	_, rt := writeEnvFile(t, "CONFIG_1='value1'\nCONFIG_2='value2'\nEMPTY=''\nLITERAL='$(CONFIG_1)'\n")
	got, err := p.PodEnv(&p.Pod.Spec.Containers[0], rt)
	if err != nil {
		t.Fatal(err)
	}
	// Values are not expanded, later values see them; an optional key
	// missing or empty is not set.
	want := []string{"CONFIG_1=value1", "SECOND=value2", "EXPANDED=value1-x", "LITERAL=$(CONFIG_1)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PodEnv =\n%q\nwant\n%q", got, want)
	}
}

// The kubelet's errors at container start, which become the container's
// CreateContainerConfigError message.
func TestPodEnvFileKeyRefErrors(t *testing.T) {
	ref := func(volume, path, key string, optional bool) string {
		return `    env: [{name: V, valueFrom: {fileKeyRef: {volumeName: ` + volume + `, path: "` + path + `", key: ` + key +
			`, optional: ` + map[bool]string{true: "true", false: "false"}[optional] + `}}}]`
	}
	tests := []struct {
		name, content, env string
		want               string // %s is the volume's directory
		cause              error
	}{
		{name: "missing key", content: "A='1'\n", env: ref("config", "config.env", "MISSING_KEY", false),
			want: `environment variable key "MISSING_KEY" not found in file "%s/config.env"`},
		{name: "empty value", content: "A=''\n", env: ref("config", "config.env", "A", false),
			want: `environment variable key "A" not found in file "%s/config.env"`},
		{name: "missing file", env: ref("config", "config.env", "A", false),
			want: `couldn't parse env file`, cause: fs.ErrNotExist},
		{name: "missing file, optional", env: ref("config", "config.env", "A", true),
			want: `couldn't parse env file`, cause: fs.ErrNotExist},
		{name: "malformed file, optional", content: "A=1\n", env: ref("config", "config.env", "A", true),
			want: `couldn't parse env file`},
		{name: "a directory", content: "A='1'\n", env: ref("config", ".", "A", false),
			want: `couldn't parse env file`},
		{name: "a volume no container mounts", content: "A='1'\n", env: ref("unused", "config.env", "A", false),
			want: `cannot find the volume "unused" referenced by FileKeyRef`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fileKeyPlan(t, tt.env)
			vol, rt := writeEnvFile(t, tt.content)
			_, err := p.PodEnv(&p.Pod.Spec.Containers[0], rt)
			if want := strings.ReplaceAll(tt.want, "%s", vol); err == nil || err.Error() != want {
				t.Fatalf("PodEnv error = %v, want %s", err, want)
			}
			if tt.cause != nil && !errors.Is(err, tt.cause) {
				t.Errorf("error %v does not wrap %v", err, tt.cause)
			}
		})
	}
	// Before the volumes exist (no VolumePaths) the volume is not found.
	p := fileKeyPlan(t, ref("config", "config.env", "A", false))
	if _, err := p.PodEnv(&p.Pod.Spec.Containers[0], testRuntime); err == nil || err.Error() != `cannot find the volume "config" referenced by FileKeyRef` {
		t.Errorf("without volumes: %v", err)
	}
}

// The path is joined inside the volume (securejoin): a symlink the
// containers made cannot lead out of it.
func TestFileKeyRefStaysInTheVolume(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.env")
	if err := os.WriteFile(outside, []byte("K='outside'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	vol, rt := writeEnvFile(t, "")
	if err := os.Symlink(outside, filepath.Join(vol, "link.env")); err != nil {
		t.Fatal(err)
	}
	ref := &corev1.FileKeySelector{VolumeName: "config", Path: "link.env", Key: "K", Optional: ptrTo(true)}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "config"}}}}}}
	v, err := FileKeyRefValue(pod, &pod.Spec.Containers[0], ref, rt)
	if v == "outside" || err == nil {
		t.Fatalf("FileKeyRefValue through a symlink out of the volume = %q, %v; want the file inside the volume (absent)", v, err)
	}
}
