package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/printers"
)

// FuzzRecord feeds arbitrary record.json, pod.json, status.json and
// events.jsonl files to the record reader and to what every verb does with a
// record: reading never panics nor hides the pod, a record it cannot read is
// Broken and shown as Unknown with the reason, and the STATUS column is never
// blank. Seeds: the records of the examples and test manifests as apply
// writes them, and damaged copies of them.
func FuzzRecord(f *testing.F) {
	files, _ := filepath.Glob("../examples/*.yaml")
	more, _ := filepath.Glob("../podspec/testdata/*.yaml")
	files = append(files, more...)
	l := Layout{Root: f.TempDir(), RunRoot: f.TempDir()}
	seeds := 0
	for _, file := range files {
		m, err := podspec.LoadFile(file)
		if err != nil {
			continue
		}
		for _, p := range m.Pods {
			p.UID = "0f0e0d0c-0b0a-0908-0706-050403020100"
			rec, err := CreateRecord(l, p, &Objects{ConfigMaps: m.ConfigMaps}, Settings{CgroupParent: "/podrun"}, "h")
			if err != nil {
				f.Fatal(err)
			}
			read := func(name string) []byte {
				b, err := os.ReadFile(filepath.Join(rec.Paths.Dir, name))
				if err != nil {
					f.Fatal(err)
				}
				return b
			}
			h, pod, st := read("record.json"), read("pod.json"), read("status.json")
			ev := []byte(`{"time":"2026-11-26T10:00:00Z","type":"Normal","reason":"Started","object":"spec.containers{c}","message":"Started container c"}` + "\n")
			f.Add(h, pod, st, ev)
			f.Add(h[:len(h)/2], pod, st, ev[:10])
			f.Add(h, pod[:len(pod)/2], []byte(`{"phase":"Running","containerStatuses":[{"name":"c","ready":true,"state":{}}]}`), ev)
			f.Add(h, pod, []byte(`{"phase":`), []byte("\x00\n{}\n"))
			f.Add([]byte(`{"version": 99}`), pod, st, ev)
			_ = os.RemoveAll(rec.Paths.Dir)
			seeds++
		}
	}
	if seeds == 0 {
		f.Fatal("no seed records")
	}
	f.Add([]byte(""), []byte(""), []byte(""), []byte(""))
	f.Add([]byte("null"), []byte("null"), []byte("null"), []byte("null"))
	f.Add([]byte("[]"), []byte(`{"metadata":{"name":"x"}}`), []byte(`{"initContainerStatuses":[{}],"containerStatuses":[{"state":{"terminated":{}}}]}`), []byte(""))
	f.Fuzz(func(t *testing.T, header, pod, status, events []byte) {
		l := Layout{Root: t.TempDir(), RunRoot: t.TempDir()}
		dir := filepath.Join(l.PodsDir(), "default_web_0f0e0d0c-0b0a-0908-0706-050403020100")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string][]byte{"record.json": header, "pod.json": pod, "status.json": status, "events.jsonl": events} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		recs, err := ListPods(l, "")
		if err != nil || len(recs) != 1 {
			t.Fatalf("ListPods: %d records, %v; want the one pod", len(recs), err)
		}
		r := recs[0]
		if r.Pod == nil || r.Pod.Name == "" {
			t.Fatalf("a record without a name: %+v", r.Pod)
		}
		v := r.View()
		if r.Broken != nil && v.Status.Phase != corev1.PodUnknown {
			t.Fatalf("a broken record (%v) shows phase %q; want Unknown", r.Broken, v.Status.Phase)
		}
		if row := printers.PodRow(v, time.Now()); row.Status == "" || row.Ready == "" {
			t.Fatalf("blank STATUS or READY for %+v", v.Status)
		}
		_, _ = r.Plan()
		_, _ = ReadEvents(r.Paths)
		if _, err := FindPod(l, r.Pod.Namespace, r.Pod.Name); err != nil && r.Broken != nil {
			// A broken record is found by the name of its directory.
			if _, err := FindPod(l, "default", "web"); err != nil {
				t.Fatalf("a broken record cannot be found: %v", err)
			}
		}
	})
}
