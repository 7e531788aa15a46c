// Package image is podrun's local image store: it loads docker-archive and oci-archive
// files, pulls from registries with containers/image, unpacks every layer once, and
// mounts a container's root filesystem as an overlay of the image's layers.
//
// On disk, under the store root (`<--root>/images`):
//
//	blobs/sha256/<hex>   manifests, configs and layer blobs by digest (an OCI layout's
//	                     shared blob directory, filled by containers/image's oci: transport,
//	                     which skips blobs already present: a pull fetches only what is missing)
//	layers/<hex>/        one unpacked layer per diffID (uncompressed digest), shared by every
//	                     image and container; OCI whiteouts are converted to overlayfs
//	                     whiteouts (0/0 character devices, trusted.overlay.opaque=y)
//	images.json          the index: images by ID with their names, layers, config and sizes;
//	                     rewritten atomically (write, fsync, rename) under locks/index.lock
//	locks/               flock(2) files: store.lock (shared by Load/Pull, exclusive for
//	                     Remove/Prune), index.lock, one per pulled name, one per layer
//	tmp/                 work directories; layers are unpacked here and renamed into
//	                     layers/ when complete, so a crash never leaves a half layer
//
// Layers are unpacked by containers/storage's pkg/archive on a dedicated OS thread that has
// chroot(2)ed into the new layer directory, so `../`, absolute paths and symlinks in a
// layer tar cannot reach anything outside it. The uncompressed stream is checked against
// the diffID in the image config before the layer is published.
//
// Signature policy: PullOptions.SignaturePolicyPath, else the host's policy
// ($HOME/.config/containers/policy.json, then /etc/containers/policy.json), else — when the
// host has no policy file — a default that accepts any image (insecureAcceptAnything), as
// the policy.json that container tools ship does. The same policy applies to Load.
package image
