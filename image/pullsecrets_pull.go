//go:build podrun_image

package image

import (
	"context"
	"errors"
	"fmt"

	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/pkg/docker/config"
	"go.podman.io/image/v5/types"
)

// hostHasCredentials reports whether this host's auth files (the places
// containers/image reads) hold credentials for the image's registry: the
// kubelet's own keyring, tried after a pod's pull secrets.
func hostHasCredentials(sys *types.SystemContext, named reference.Named) bool {
	a, err := config.GetCredentialsForRef(sys, named)
	return err == nil && (a.Username != "" || a.IdentityToken != "")
}

// pullWithKeyring pulls as the kubelet's PullImage does with pull secrets:
// each matching credential of the secrets in turn, then the host's own (its
// auth files) when it has any for the registry; the errors of every attempt
// are returned together. Without a matching credential it is a plain pull.
func (s *Store) pullWithKeyring(ctx context.Context, named reference.Named, opts PullOptions) (*Image, error) {
	creds := opts.Keyring.Lookup(named.String())
	if len(creds) == 0 {
		return s.pull(ctx, named, opts)
	}
	var errs []error
	for _, a := range creds {
		o := opts
		o.auth = &types.DockerAuthConfig{Username: a.Username, Password: a.Password}
		img, err := s.pull(ctx, named, o)
		if err == nil {
			return img, nil
		}
		errs = append(errs, fmt.Errorf("with the credentials of secret %q: %w", a.From, err))
		if ctx.Err() != nil {
			return nil, errors.Join(errs...)
		}
	}
	o := opts
	if hostHasCredentials(o.systemContext(s, named), named) {
		img, err := s.pull(ctx, named, o)
		if err == nil {
			return img, nil
		}
		errs = append(errs, fmt.Errorf("with this host's credentials: %w", err))
	}
	return nil, errors.Join(errs...)
}
