package main

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	dockerarchive "go.podman.io/image/v5/docker/archive"
)

func TestRun(t *testing.T) {
	rootfs := t.TempDir()
	out := filepath.Join(t.TempDir(), "img.tar")
	err := run([]string{"-rootfs", rootfs, "-tag", "app:2", "-o", out,
		"-entrypoint", `["/bin/sh","-c"]`, "-cmd", "echo", "-cmd", "hi", "-env", "A=1", "-env", "B=2",
		"-workdir", "/w", "-user", "1000:1000", "-stopsignal", "SIGUSR1", "-label", "k=v", "-expose", "8080", "-arch", "arm64"})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := dockerarchive.ParseReference(out)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	img, err := ref.NewImage(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	cfg, err := img.OCIConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if !slices.Equal(c.Entrypoint, []string{"/bin/sh", "-c"}) || !slices.Equal(c.Cmd, []string{"echo", "hi"}) ||
		!slices.Equal(c.Env, []string{"A=1", "B=2"}) || c.WorkingDir != "/w" || c.User != "1000:1000" ||
		c.StopSignal != "SIGUSR1" || c.Labels["k"] != "v" || len(c.ExposedPorts) != 1 || cfg.Architecture != "arm64" {
		t.Errorf("config = %+v (arch %s)", c, cfg.Architecture)
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("exposed ports %v", c.ExposedPorts)
	}

	for _, args := range [][]string{
		{"-o", out},
		{"-rootfs", rootfs},
		{"-rootfs", rootfs, "-o", out + "2", "-env", "NOEQUALS"},
		{"-rootfs", rootfs, "-o", out + "3", "-entrypoint", "[not json"},
	} {
		if err := run(args); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}
