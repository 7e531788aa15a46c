package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// podrun version and podrun info name the binaries next to the CLI, and say
// when one is missing, broken or of another version (a half-installed upgrade).
func TestHelperInfo(t *testing.T) {
	for _, name := range []string{shimName, imageName} {
		t.Run(name, func(t *testing.T) { testHelperInfo(t, name) })
	}
}

func testHelperInfo(t *testing.T, name string) {
	dir := t.TempDir()
	shim := filepath.Join(dir, name)
	if info := helperInfoIn(dir, name, "v1.2.3"); info.Path != shim || !strings.Contains(info.Problem, "missing: "+helperConsequence[name]) {
		t.Errorf("no shim: %+v", info)
	}
	write := func(script string) {
		t.Helper()
		if err := os.WriteFile(shim, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(`[ "$1" = version ] && echo "` + name + ` v1.2.3"`)
	if info := helperInfoIn(dir, name, "v1.2.3"); info.Version != "v1.2.3" || info.Problem != "" || info.String() != shim+" v1.2.3" {
		t.Errorf("same version: %+v %q", info, info)
	}
	if info := helperInfoIn(dir, name, "v1.3.0"); info.Version != "v1.2.3" || !strings.Contains(info.Problem, "version v1.2.3 is not podrun's v1.3.0") {
		t.Errorf("other version: %+v", info)
	}
	write(`exit 3`)
	if info := helperInfoIn(dir, name, "v1.2.3"); info.Version != "" || !strings.Contains(info.Problem, "cannot be run") {
		t.Errorf("broken shim: %+v", info)
	}
}
