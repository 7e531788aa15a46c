package volumes

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// defaultFileMode is the API default for configMap, secret, downwardAPI and
// projected volumes' defaultMode (0644).
const defaultFileMode int32 = 0o644

func modeOrDefault(m *int32) int32 {
	if m == nil {
		return defaultFileMode
	}
	return *m
}

// setupConfigMap is the kubelet's configMap plugin: a disk-backed emptyDir with
// the atomic-writer layout.
func (b *builder) setupConfigMap(vol *Volume, src *corev1.ConfigMapVolumeSource) error {
	optional := src.Optional != nil && *src.Optional
	cm, err := b.configMap(src.Name, optional)
	if err != nil {
		return err
	}
	payload, err := configMapPayload(src.Items, cm, modeOrDefault(src.DefaultMode), optional)
	if err != nil {
		return err
	}
	if err := makeEmptyDir(vol.Path); err != nil {
		return err
	}
	return b.writeVolume(vol, payload)
}

// setupSecret is the kubelet's secret plugin: the same layout on a tmpfs, so
// secret data never reaches the disk.
func (b *builder) setupSecret(vol *Volume, src *corev1.SecretVolumeSource) error {
	optional := src.Optional != nil && *src.Optional
	secret, err := b.secret(src.SecretName, optional)
	if err != nil {
		return err
	}
	payload, err := secretPayload(src.Items, secret, modeOrDefault(src.DefaultMode), optional)
	if err != nil {
		return err
	}
	return b.writeMemoryVolume(vol, payload)
}

// setupDownwardAPI is the kubelet's downwardAPI plugin (memory-backed too).
func (b *builder) setupDownwardAPI(vol *Volume, src *corev1.DownwardAPIVolumeSource) error {
	payload, err := b.downwardAPIPayload(src.Items, modeOrDefault(src.DefaultMode))
	if err != nil {
		return err
	}
	return b.writeMemoryVolume(vol, payload)
}

// setupProjected is the kubelet's projected plugin: the sources' files merged in
// order into one memory-backed volume; every failing source is reported.
func (b *builder) setupProjected(vol *Volume, src *corev1.ProjectedVolumeSource) error {
	defaultMode := modeOrDefault(src.DefaultMode)
	payload := map[string]fileProjection{}
	var errs []error
	merge := func(p map[string]fileProjection, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		for k, v := range p {
			payload[k] = v
		}
	}
	for i, s := range src.Sources {
		switch {
		case s.ConfigMap != nil:
			optional := s.ConfigMap.Optional != nil && *s.ConfigMap.Optional
			cm, err := b.configMap(s.ConfigMap.Name, optional)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			merge(configMapPayload(s.ConfigMap.Items, cm, defaultMode, optional))
		case s.Secret != nil:
			optional := s.Secret.Optional != nil && *s.Secret.Optional
			secret, err := b.secret(s.Secret.Name, optional)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			merge(secretPayload(s.Secret.Items, secret, defaultMode, optional))
		case s.DownwardAPI != nil:
			merge(b.downwardAPIPayload(s.DownwardAPI.Items, defaultMode))
		case s.ServiceAccountToken != nil:
			errs = append(errs, fmt.Errorf("sources[%d]: serviceAccountToken (path %q) is not supported by podrun: there is no API server to issue tokens",
				i, s.ServiceAccountToken.Path))
		case s.ClusterTrustBundle != nil:
			errs = append(errs, fmt.Errorf("sources[%d]: clusterTrustBundle (path %q) is not supported by podrun", i, s.ClusterTrustBundle.Path))
		case s.PodCertificate != nil:
			errs = append(errs, fmt.Errorf("sources[%d]: podCertificate is not supported by podrun", i))
		default:
			errs = append(errs, fmt.Errorf("sources[%d]: no projection source set", i))
		}
	}
	// utilerrors.NewAggregate, as the kubelet's projected collectData: one
	// error as it is, several as "[a, b]".
	if err := utilerrors.NewAggregate(errs); err != nil {
		return err
	}
	return b.writeMemoryVolume(vol, payload)
}

// writeVolume finishes an atomic-writer volume as the kubelet does: nested
// mount points for volumes mounted beneath this one (the container cannot create
// them in a read-only mount), the payload, then fsGroup ownership.
func (b *builder) writeVolume(vol *Volume, payload map[string]fileProjection) error {
	if err := makeNestedMountpoints(vol.Name, vol.Path, b.pod); err != nil {
		return err
	}
	w := &atomicWriter{targetDir: vol.Path}
	return w.write(payload, func() error {
		if err := b.setUserNSOwner(vol.Path); err != nil {
			return err
		}
		return b.setOwnership(vol.Path, vol.ReadOnly)
	})
}

func (b *builder) configMap(name string, optional bool) (*corev1.ConfigMap, error) {
	if cm := b.opts.Objects.ConfigMaps[name]; cm != nil {
		return cm, nil
	}
	if optional {
		return &corev1.ConfigMap{}, nil
	}
	return nil, fmt.Errorf("configmap %q not found", name)
}

func (b *builder) secret(name string, optional bool) (*corev1.Secret, error) {
	s := b.opts.Objects.Secrets[name]
	if s == nil {
		if optional {
			return &corev1.Secret{}, nil
		}
		return nil, fmt.Errorf("secret %q not found", name)
	}
	if len(s.StringData) == 0 {
		return s, nil
	}
	// Without an API server nobody has merged stringData into data yet; it
	// wins over data, as on create.
	merged := s.DeepCopy()
	if merged.Data == nil {
		merged.Data = map[string][]byte{}
	}
	for k, v := range s.StringData {
		merged.Data[k] = []byte(v)
	}
	return merged, nil
}

// configMapPayload is the kubelet's configmap.MakePayload.
func configMapPayload(items []corev1.KeyToPath, cm *corev1.ConfigMap, defaultMode int32, optional bool) (map[string]fileProjection, error) {
	payload := make(map[string]fileProjection, len(cm.Data)+len(cm.BinaryData))
	if len(items) == 0 {
		for k, v := range cm.Data {
			payload[k] = fileProjection{data: []byte(v), mode: defaultMode}
		}
		for k, v := range cm.BinaryData {
			payload[k] = fileProjection{data: v, mode: defaultMode}
		}
		return payload, nil
	}
	for _, ktp := range items {
		var data []byte
		if s, ok := cm.Data[ktp.Key]; ok {
			data = []byte(s)
		} else if bin, ok := cm.BinaryData[ktp.Key]; ok {
			data = bin
		} else {
			if optional {
				continue
			}
			return nil, fmt.Errorf("configmap references non-existent config key: %s", ktp.Key)
		}
		payload[ktp.Path] = fileProjection{data: data, mode: itemMode(ktp.Mode, defaultMode)}
	}
	return payload, nil
}

// secretPayload is the kubelet's secret.MakePayload.
func secretPayload(items []corev1.KeyToPath, s *corev1.Secret, defaultMode int32, optional bool) (map[string]fileProjection, error) {
	payload := make(map[string]fileProjection, len(s.Data))
	if len(items) == 0 {
		for k, v := range s.Data {
			payload[k] = fileProjection{data: v, mode: defaultMode}
		}
		return payload, nil
	}
	for _, ktp := range items {
		data, ok := s.Data[ktp.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("references non-existent secret key: %s", ktp.Key)
		}
		payload[ktp.Path] = fileProjection{data: data, mode: itemMode(ktp.Mode, defaultMode)}
	}
	return payload, nil
}

func itemMode(m *int32, defaultMode int32) int32 {
	if m != nil {
		return *m
	}
	return defaultMode
}

// volumeFieldPaths are the fieldRefs the API server allows in downward API
// volumes (validVolumeDownwardAPIFieldPathExpressions).
var volumeFieldPaths = map[string]bool{
	"metadata.name":        true,
	"metadata.namespace":   true,
	"metadata.uid":         true,
	"metadata.labels":      true,
	"metadata.annotations": true,
}

// downwardAPIPayload is the kubelet's downwardapi.CollectData: every item is
// tried and all failures are reported together.
func (b *builder) downwardAPIPayload(items []corev1.DownwardAPIVolumeFile, defaultMode int32) (map[string]fileProjection, error) {
	payload := map[string]fileProjection{}
	var errs []error
	for _, item := range items {
		fp := fileProjection{mode: itemMode(item.Mode, defaultMode)}
		switch {
		case item.FieldRef != nil:
			v, err := b.fieldRef(item.FieldRef.FieldPath)
			if err != nil {
				errs = append(errs, fmt.Errorf("downwardAPI item %q: %w", item.Path, err))
				continue
			}
			fp.data = []byte(v)
		case item.ResourceFieldRef != nil:
			if b.opts.Fields == nil {
				errs = append(errs, fmt.Errorf("downwardAPI item %q: resourceFieldRef %q cannot be resolved: no field resolver", item.Path, item.ResourceFieldRef.Resource))
				continue
			}
			v, err := b.opts.Fields.ResourceFieldRef(item.ResourceFieldRef.ContainerName, item.ResourceFieldRef)
			if err != nil {
				errs = append(errs, fmt.Errorf("downwardAPI item %q: %w", item.Path, err))
				continue
			}
			fp.data = []byte(v)
		}
		payload[filepath.Clean(item.Path)] = fp
	}
	return payload, errors.Join(errs...)
}

// fieldRef resolves a downward API volume fieldRef. The label and annotation
// maps are formatted here exactly as the kubelet's fieldpath.FormatMap does;
// everything else goes to the caller's resolver, or with none, to the pod's
// metadata.
func (b *builder) fieldRef(path string) (string, error) {
	base, key, subscripted := splitSubscript(path)
	if subscripted {
		if base != "metadata.labels" && base != "metadata.annotations" {
			return "", fmt.Errorf("fieldRef %q: unsupported value: only metadata.labels and metadata.annotations take a subscript", path)
		}
	} else if !volumeFieldPaths[path] {
		return "", fmt.Errorf("fieldRef %q: unsupported value: supported values: \"metadata.annotations\", \"metadata.labels\", \"metadata.name\", \"metadata.namespace\", \"metadata.uid\"", path)
	}
	switch {
	case path == "metadata.labels":
		return formatMap(b.pod.Labels), nil
	case path == "metadata.annotations":
		return formatMap(b.pod.Annotations), nil
	case b.opts.Fields != nil:
		return b.opts.Fields.FieldRef(path)
	case subscripted && base == "metadata.labels":
		return b.pod.Labels[key], nil
	case subscripted:
		return b.pod.Annotations[key], nil
	case path == "metadata.name":
		return b.pod.Name, nil
	case path == "metadata.namespace":
		return b.pod.Namespace, nil
	default: // metadata.uid
		return string(b.pod.UID), nil
	}
}

// splitSubscript splits "metadata.labels['key']" into its path and key, as the
// kubelet's fieldpath.SplitMaybeSubscriptedPath.
func splitSubscript(fieldPath string) (string, string, bool) {
	if !strings.HasSuffix(fieldPath, "']") {
		return fieldPath, "", false
	}
	parts := strings.SplitN(strings.TrimSuffix(fieldPath, "']"), "['", 2)
	if len(parts) < 2 || parts[0] == "" {
		return fieldPath, "", false
	}
	return parts[0], parts[1], true
}

// formatMap is the kubelet's fieldpath.FormatMap: sorted key="value" lines with
// Go quoting and no trailing newline.
func formatMap(m map[string]string) string {
	var sb strings.Builder
	for i, k := range sortedKeys(m) {
		if i > 0 {
			sb.WriteByte('\n')
		}
		fmt.Fprintf(&sb, "%v=%q", k, m[k])
	}
	return sb.String()
}

// writeMemoryVolume writes a payload onto a tmpfs of the pod's memory size, as
// the kubelet keeps secret, downwardAPI and projected volumes off the disk.
func (b *builder) writeMemoryVolume(vol *Volume, payload map[string]fileProjection) error {
	vol.SizeBytes = b.memorySize(nil)
	if err := setupTmpfs(vol.Path, vol.SizeBytes); err != nil {
		return err
	}
	return b.writeVolume(vol, payload)
}
