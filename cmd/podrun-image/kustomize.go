//go:build podrun_image

package main

import (
	"io"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// kustomize prints the YAML of the kustomization in dir, built as kubectl's
// -k builds it (krusty with kubectl's default options on the on-disk file
// system): the CLI runs it for every -k. It lives here because the kustomize
// library and the OpenAPI models it brings cost every CLI start 5-12 % of its
// time (page faults and package initialisers).
func kustomize(args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return usage("kustomize needs one directory")
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), args[0])
	if err != nil {
		return err
	}
	data, err := res.AsYaml()
	if err != nil {
		return err
	}
	_, err = stdout.Write(data)
	return err
}
