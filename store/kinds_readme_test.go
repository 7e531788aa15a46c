package store

import (
	"os"
	"strings"
	"testing"

	"github.com/podrun/podrun/podspec"
)

// The README's kinds table says, for each kind, what podrun does with it
// (its podrun column), what podman kube play does and what a cluster does.
// It is kept true here: every kind the loader accepts has a row that does
// not say "no", every row that does not say "no" is a kind the loader
// accepts with that apiVersion, and every kind the store keeps names its
// `get` word. Kinds added to podspec's table or to Kinds fail this test
// until the README says what they do.
func TestReadmeKindsTable(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	const begin, end = "<!-- BEGIN KINDS", "<!-- END KINDS -->"
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %q … %q table", begin, end)
	}
	type row struct{ apiVersion, podrun string }
	rows := map[string]row{}
	for _, line := range strings.Split(text[i:j], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 6 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") || strings.TrimSpace(cells[1]) == "Kind" {
			continue
		}
		kind := strings.Trim(strings.TrimSpace(cells[1]), "`")
		rows[kind] = row{apiVersion: strings.Trim(strings.TrimSpace(cells[2]), "`"), podrun: strings.TrimSpace(cells[3])}
	}
	accepted := map[string]string{}
	for _, k := range podspec.Kinds() {
		accepted[k[0]] = k[1]
		r, ok := rows[k[0]]
		switch {
		case !ok:
			t.Errorf("README kinds table: no row for %s, which apply accepts", k[0])
		case strings.HasPrefix(r.podrun, "no"):
			t.Errorf("README kinds table: %s says %q, but apply accepts it", k[0], r.podrun)
		case r.apiVersion != k[1]:
			t.Errorf("README kinds table: %s has apiVersion %q, apply wants %q", k[0], r.apiVersion, k[1])
		}
	}
	for kind, r := range rows {
		if _, ok := accepted[kind]; !ok && !strings.HasPrefix(r.podrun, "no") {
			t.Errorf("README kinds table: %s says %q, but apply refuses it", kind, r.podrun)
		}
	}
	for _, k := range Kinds {
		if r := rows[k.Name]; !strings.Contains(r.podrun, "`get "+k.Plural) && !containsAny(r.podrun, k.Aliases) {
			t.Errorf("README kinds table: the row of %s (stored by podrun) does not name its get word (`get %s`)", k.Name, k.Aliases[len(k.Aliases)-1])
		}
	}
}

func containsAny(s string, aliases []string) bool {
	for _, a := range aliases {
		if strings.Contains(s, "`get "+a+"`") {
			return true
		}
	}
	return false
}
