package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podrun/podrun/podspec"
	"github.com/podrun/podrun/store"
)

// The generators of kubectl create (pkg/cmd/create): a ConfigMap, a Secret
// or a Namespace made from flags, files and env files with kubectl's rules
// and messages, then stored through apply's own path; with --dry-run=client
// -o yaml they print the object for a manifest, as CI scripts use them.

// generatorFlags are the flags every generator takes.
func generatorFlags(more ...cli.Flag) []cli.Flag {
	return append(more,
		&cli.StringFlag{Name: "dry-run", Value: "none", Usage: "client or server: print the object, create nothing"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "name, yaml or json: print the object"},
	)
}

// sourceFlags are the data flags of create configmap and create secret generic.
func sourceFlags(kind string) []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "from-file", Usage: "[KEY=]PATH: a file (its basename is the key) or a directory (each regular file in it)"},
		&cli.StringSliceFlag{Name: "from-literal", Usage: "KEY=VALUE to put in the " + kind},
		&cli.StringSliceFlag{Name: "from-env-file", Usage: "a file of KEY=VALUE lines (# comments; KEY alone takes the value from the environment)"},
	}
}

func createConfigMapCommand() *cli.Command {
	return &cli.Command{
		Name:      "configmap",
		Aliases:   []string{"cm"},
		Usage:     "create a ConfigMap from files, directories, env files or literal values",
		ArgsUsage: "NAME [--from-file=[KEY=]SOURCE] [--from-literal=KEY=VALUE] [--from-env-file=PATH]",
		Description: `Examples:
  # From every file of a directory
  podrun create configmap my-config --from-file=path/to/dir

  # Keys and values
  podrun create configmap my-config --from-literal=key1=config1 --from-literal=key2=config2

  # A manifest instead, for apply
  podrun create configmap my-config --from-env-file=ci.env --dry-run=client -o yaml`,
		Flags:  generatorFlags(append(sourceFlags("ConfigMap"), &cli.BoolFlag{Name: "append-hash", Usage: "append a hash of the ConfigMap to its name"})...),
		Action: runCreateConfigMap,
	}
}

func createSecretCommand() *cli.Command {
	return &cli.Command{
		Name:  "secret",
		Usage: "create a Secret: generic, tls or docker-registry",
		Subcommands: []*cli.Command{{
			Name:      "generic",
			Usage:     "create a Secret from files, directories, env files or literal values",
			ArgsUsage: "NAME [--type=STRING] [--from-file=[KEY=]SOURCE] [--from-literal=KEY=VALUE] [--from-env-file=PATH]",
			Flags: generatorFlags(append(sourceFlags("Secret"),
				&cli.StringFlag{Name: "type", Usage: "the Secret's type"},
				&cli.BoolFlag{Name: "append-hash", Usage: "append a hash of the Secret to its name"})...),
			Action: runCreateSecretGeneric,
		}, {
			Name:      "tls",
			Usage:     "create a TLS Secret from a certificate and its key",
			ArgsUsage: "NAME --cert=PATH --key=PATH",
			Flags: generatorFlags(
				&cli.StringFlag{Name: "cert", Usage: "the PEM certificate (chain)"},
				&cli.StringFlag{Name: "key", Usage: "the PEM private key"},
				&cli.BoolFlag{Name: "append-hash", Usage: "append a hash of the Secret to its name"}),
			Action: runCreateSecretTLS,
		}, {
			Name:      "docker-registry",
			Usage:     "create a Secret for image pulls (imagePullSecrets)",
			ArgsUsage: "NAME --docker-username=USER --docker-password=PASSWORD [--docker-server=SERVER] [--docker-email=EMAIL] | --from-file=[KEY=]PATH",
			Flags: generatorFlags(
				&cli.StringFlag{Name: "docker-server", Value: "https://index.docker.io/v1/", Usage: "the registry"},
				&cli.StringFlag{Name: "docker-username"},
				&cli.StringFlag{Name: "docker-password"},
				&cli.StringFlag{Name: "docker-email"},
				&cli.StringSliceFlag{Name: "from-file", Usage: "[KEY=]PATH: a docker config file (key .dockerconfigjson)"},
				&cli.BoolFlag{Name: "append-hash", Usage: "append a hash of the Secret to its name"}),
			Action: runCreateSecretDockerRegistry,
		}},
	}
}

func createNamespaceCommand() *cli.Command {
	return &cli.Command{
		Name:      "namespace",
		Aliases:   []string{"ns"},
		Usage:     "create a Namespace",
		ArgsUsage: "NAME",
		Flags:     generatorFlags(),
		Action: func(c *cli.Context) error {
			name, err := generatorName(c)
			if err != nil {
				return err
			}
			ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
			return createGenerated(c, store.NamespaceKind, "namespace", ns, "created")
		},
	}
}

// generatorName is the NAME argument (kubectl's NameFromCommandArgs).
func generatorName(c *cli.Context) (string, error) {
	switch c.NArg() {
	case 0:
		return "", usageError("NAME is required")
	case 1:
		return c.Args().First(), nil
	default:
		return "", usageError("exactly one NAME is required, got %d", c.NArg())
	}
}

func runCreateConfigMap(c *cli.Context) error {
	name, err := sourcesName(c)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace(c)},
		Data:       map[string]string{},
		BinaryData: map[string][]byte{},
	}
	// validateNewConfigMap: the key rules, and each key once in Data and BinaryData.
	add := func(key string, value []byte, binary bool) error {
		if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
			return fmt.Errorf("%q is not a valid key name for a ConfigMap: %s", key, strings.Join(errs, ","))
		}
		if _, ok := cm.Data[key]; ok {
			return fmt.Errorf("cannot add key %q, another key by that name already exists in Data for ConfigMap %q", key, name)
		}
		if _, ok := cm.BinaryData[key]; ok {
			return fmt.Errorf("cannot add key %q, another key by that name already exists in BinaryData for ConfigMap %q", key, name)
		}
		if binary {
			cm.BinaryData[key] = value
		} else {
			cm.Data[key] = string(value)
		}
		return nil
	}
	if err := addSources(c, add); err != nil {
		return failed("%v", err)
	}
	if c.Bool("append-hash") {
		enc := map[string]any{"kind": "ConfigMap", "name": cm.Name, "data": cm.Data}
		if len(cm.BinaryData) > 0 {
			enc["binaryData"] = cm.BinaryData
		}
		h, err := objectHash(enc)
		if err != nil {
			return err
		}
		cm.Name += "-" + h
	}
	return createGenerated(c, store.ConfigMapKind, "configmap", cm, "created")
}

func runCreateSecretGeneric(c *cli.Context) error {
	name, err := sourcesName(c)
	if err != nil {
		return err
	}
	s := newSecret(c, name, corev1.SecretType(c.String("type")))
	if err := addSources(c, secretAdder(s)); err != nil {
		return failed("%v", err)
	}
	return createSecret(c, s)
}

func runCreateSecretTLS(c *cli.Context) error {
	name, err := generatorName(c)
	if err != nil {
		return err
	}
	if c.String("cert") == "" || c.String("key") == "" {
		return usageError("key and cert must be specified")
	}
	cert, err := os.ReadFile(c.String("cert"))
	if err != nil {
		return failed("%v", err)
	}
	key, err := os.ReadFile(c.String("key"))
	if err != nil {
		return failed("%v", err)
	}
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		return failed("failed to load key pair %v", err)
	}
	s := newSecret(c, name, corev1.SecretTypeTLS)
	s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey] = cert, key
	return createSecret(c, s)
}

func runCreateSecretDockerRegistry(c *cli.Context) error {
	name, err := generatorName(c)
	if err != nil {
		return err
	}
	s := newSecret(c, name, corev1.SecretTypeDockerConfigJson)
	if files := c.StringSlice("from-file"); len(files) > 0 {
		if err := addFileSources(files, secretAdder(s)); err != nil {
			return failed("%v", err)
		}
		return createSecret(c, s)
	}
	user, password := c.String("docker-username"), c.String("docker-password")
	if user == "" || password == "" {
		return usageError("either --from-file or the combination of --docker-username, --docker-password and --docker-server is required")
	}
	// kubectl's DockerConfigEntry, its fields in its order.
	type entry struct {
		Username string `json:"username,omitempty"`
		Password string `json:"password,omitempty"`
		Email    string `json:"email,omitempty"`
		Auth     string `json:"auth,omitempty"`
	}
	e := entry{user, password, c.String("docker-email"), base64.StdEncoding.EncodeToString([]byte(user + ":" + password))}
	data, err := json.Marshal(map[string]any{"auths": map[string]entry{c.String("docker-server"): e}})
	if err != nil {
		return err
	}
	s.Data[corev1.DockerConfigJsonKey] = data
	return createSecret(c, s)
}

func newSecret(c *cli.Context, name string, typ corev1.SecretType) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace(c)},
		Type:       typ,
		Data:       map[string][]byte{},
	}
}

// secretAdder is create_secret.go's addKeyFromLiteralToSecret.
func secretAdder(s *corev1.Secret) func(key string, value []byte, binary bool) error {
	return func(key string, value []byte, _ bool) error {
		if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
			return fmt.Errorf("%q is not valid key name for a Secret %s", key, strings.Join(errs, ";"))
		}
		if _, ok := s.Data[key]; ok {
			return fmt.Errorf("cannot add key %s, another key by that name already exists", key)
		}
		s.Data[key] = value
		return nil
	}
}

func createSecret(c *cli.Context, s *corev1.Secret) error {
	if c.Bool("append-hash") {
		h, err := objectHash(map[string]any{"kind": "Secret", "type": s.Type, "name": s.Name, "data": s.Data})
		if err != nil {
			return err
		}
		s.Name += "-" + h
	}
	return createGenerated(c, store.SecretKind, "secret", s, "created")
}

// sourcesName is the NAME of create configmap and create secret generic,
// once their sources pass ConfigMapOptions.Validate's rule.
func sourcesName(c *cli.Context) (string, error) {
	name, err := generatorName(c)
	if err != nil {
		return "", err
	}
	if len(c.StringSlice("from-env-file")) > 0 && (len(c.StringSlice("from-file")) > 0 || len(c.StringSlice("from-literal")) > 0) {
		return "", usageError("from-env-file cannot be combined with from-file or from-literal")
	}
	return name, nil
}

// addSources adds --from-file, --from-literal and --from-env-file, in
// kubectl's order.
func addSources(c *cli.Context, add func(key string, value []byte, binary bool) error) error {
	if err := addFileSources(c.StringSlice("from-file"), add); err != nil {
		return err
	}
	for _, src := range c.StringSlice("from-literal") {
		// util.ParseLiteralSource: split at the first '='; a leading one is no key.
		key, value, ok := strings.Cut(src, "=")
		if !ok || key == "" {
			return fmt.Errorf("invalid literal source %v, expected key=value", src)
		}
		if err := add(key, []byte(value), false); err != nil {
			return err
		}
	}
	for _, f := range c.StringSlice("from-env-file") {
		if err := addEnvFile(f, add); err != nil {
			return err
		}
	}
	return nil
}

// addFileSources is handleConfigMapFromFileSources: KEY=PATH or PATH (the
// basename is the key); a directory gives each of its regular files.
func addFileSources(sources []string, add func(key string, value []byte, binary bool) error) error {
	for _, src := range sources {
		key, file, err := parseFileSource(src)
		if err != nil {
			return err
		}
		info, err := statSource(file)
		if err != nil {
			return err
		}
		if !info.IsDir() {
			if err := addFile(key, file, add); err != nil {
				return err
			}
			continue
		}
		if strings.Contains(src, "=") {
			return fmt.Errorf("cannot give a key name for a directory path")
		}
		entries, err := os.ReadDir(file)
		if err != nil {
			return fmt.Errorf("error listing files in %s: %v", file, err)
		}
		for _, e := range entries {
			if e.Type().IsRegular() {
				if err := addFile(e.Name(), path.Join(file, e.Name()), add); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// addFile adds a file's content: text as data, other bytes as binary data
// (addKeyFromFileToConfigMap).
func addFile(key, file string, add func(key string, value []byte, binary bool) error) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	return add(key, data, !utf8.Valid(data))
}

// statSource is os.Stat with kubectl's message: "error reading PATH: REASON".
func statSource(file string) (os.FileInfo, error) {
	info, err := os.Stat(file)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("error reading %s: %v", file, err)
	}
	return info, nil
}

// parseFileSource is kubectl's util.ParseFileSource.
func parseFileSource(source string) (key, file string, err error) {
	n := strings.Count(source, "=")
	switch {
	case n == 0:
		return path.Base(filepath.ToSlash(source)), source, nil
	case n == 1 && strings.HasPrefix(source, "="):
		return "", "", fmt.Errorf("key name for file path %v missing", strings.TrimPrefix(source, "="))
	case n == 1 && strings.HasSuffix(source, "="):
		return "", "", fmt.Errorf("file path for key name %v missing", strings.TrimSuffix(source, "="))
	case n > 1:
		return "", "", errors.New("key names or file paths cannot contain '='")
	}
	key, file, _ = strings.Cut(source, "=")
	return key, file, nil
}

// addEnvFile is cmdutil.AddFromEnvFile: KEY=VALUE lines, leading space
// trimmed, blank and # lines skipped, a UTF-8 BOM dropped from the first
// line, KEY alone taking its value from the environment.
func addEnvFile(file string, add func(key string, value []byte, binary bool) error) error {
	info, err := statSource(file)
	if err != nil {
		return err
	}
	if info.IsDir() {
		return fmt.Errorf("env config file cannot be a directory")
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 0; sc.Scan(); n++ {
		line := sc.Bytes()
		if !utf8.Valid(line) {
			return fmt.Errorf("env file %s contains invalid utf8 bytes at line %d: %v", file, n+1, line)
		}
		if n == 0 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		line = bytes.TrimLeftFunc(line, unicode.IsSpace)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		key, value, ok := strings.Cut(string(line), "=")
		if errs := validation.IsEnvVarName(key); len(errs) != 0 {
			return fmt.Errorf("%q is not a valid key name: %s", key, strings.Join(errs, ";"))
		}
		if !ok {
			value = os.Getenv(key)
		}
		if err := add(key, []byte(value), false); err != nil {
			return err
		}
	}
	return sc.Err()
}

// objectHash is kubectl's hash.ConfigMapHash and SecretHash: the SHA-256 of
// the object's JSON encoding (map keys sorted), its first ten hex digits with
// 0, 1, 3, a and e swapped for letters (encodeHash), so no bad word forms.
func objectHash(v map[string]any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := fmt.Sprintf("%x", sha256.Sum256(data))
	return strings.NewReplacer("0", "g", "1", "h", "3", "k", "a", "m", "e", "t").Replace(sum[:10]), nil
}

// createGenerated stores the generated object as apply stores one (kubectl
// create fails when it exists: "failed to create configmap: configmaps "x"
// already exists") and says so ("configmap/x created", done being the
// verb's word), or prints it.
func createGenerated(c *cli.Context, k *store.Kind, resource string, obj store.Object, done string) error {
	dryRun := c.String("dry-run")
	switch dryRun {
	case "none", "client", "server":
	case "true":
		dryRun = "client"
	default:
		return usageError("--dry-run=%q: want none, client or server", dryRun)
	}
	output := c.String("output")
	if output != "" && output != "name" && output != "yaml" && output != "json" {
		return usageError("--output %q: create prints name, yaml or json", output)
	}
	if errs := validation.IsDNS1123Subdomain(obj.GetName()); len(errs) > 0 {
		return usageError("%s %q is invalid: metadata.name: %s", resource, obj.GetName(), strings.Join(errs, ", "))
	}
	l := layout(c)
	exists := func() error {
		return failed("failed to create %s: %s %q already exists", resource, k.Plural, obj.GetName())
	}
	if dryRun != "client" {
		if _, err := l.Get(k, obj.GetNamespace(), obj.GetName()); err == nil {
			return exists()
		}
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	source := fmt.Sprintf("the generated %s/%s", resource, obj.GetName())
	load := func(string) (*podspec.Manifest, error) { return podspec.Load(data, source) }
	if dryRun == "none" {
		// Created by this command, or made by another one since the look
		// above: then it is kubectl's AlreadyExists, not a success.
		action := ""
		report := func(_, _, a string) { action = a }
		if err := applyManifests(c, []string{source}, applyHow{load: load, report: report}); err != nil {
			return err
		}
		if action != "created" {
			return exists()
		}
	} else if _, err := loadPlans(l, []string{source}, load, ""); err != nil {
		return err
	}
	if output == "" {
		suffix := map[string]string{"none": "", "client": " (dry run)", "server": " (server dry run)"}[dryRun]
		fmt.Printf("%s/%s %s%s\n", resource, obj.GetName(), done, suffix)
		return nil
	}
	if dryRun != "none" {
		return printPatched(output, resource, obj.GetName(), data, obj)
	}
	return printStored(l, output, resource, fileObject{kind: k.Name, namespace: obj.GetNamespace(), name: obj.GetName()})
}
