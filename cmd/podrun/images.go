package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	units "github.com/docker/go-units"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/podrun/podrun/image"
	"github.com/podrun/podrun/printers"
	records "github.com/podrun/podrun/store"
)

func openStore(c *cli.Context) (*image.Store, error) {
	return image.Open(layout(c).ImagesDir())
}

func pullCommand() *cli.Command {
	return &cli.Command{
		Name:        "pull",
		Description: "Examples:\n  # From a registry (docker.io/library/ is implied)\n  podrun pull busybox:1.28\n\n  # From a local registry over HTTP, only the ID printed\n  podrun pull localhost:5000/app:ci --insecure -q",
		Usage:       "pull an image from a registry into the local store",
		ArgsUsage:   "IMAGE",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "authfile", Usage: "registry credentials (default: containers auth.json, then ~/.docker/config.json)"},
			&cli.BoolFlag{Name: "insecure", Usage: "allow HTTP and unverified TLS for this registry"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only the image ID"},
			// For podrun-shim, which pulls through this command: a pod's pull
			// secrets on stdin, and each blob's progress as JSON lines.
			&cli.BoolFlag{Name: "keyring-stdin", Hidden: true},
			&cli.IntFlag{Name: "layer-progress-fd", Hidden: true},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("pull needs one image reference")
			}
			store, err := openStore(c)
			if err != nil {
				return err
			}
			opts := image.PullOptions{AuthFile: c.String("authfile"), Insecure: c.Bool("insecure")}
			if !c.Bool("quiet") {
				opts.Progress = os.Stderr
				opts.Terminal = term.IsTerminal(int(os.Stderr.Fd()))
			}
			if c.Bool("keyring-stdin") {
				opts.Keyring = &image.Keyring{}
				if err := json.NewDecoder(os.Stdin).Decode(opts.Keyring); err != nil {
					return usageError("--keyring-stdin: %v", err)
				}
			}
			if fd := c.Int("layer-progress-fd"); fd > 0 {
				f := os.NewFile(uintptr(fd), "layer-progress")
				defer f.Close()
				enc := json.NewEncoder(f)
				var mu sync.Mutex
				opts.OnLayer = func(lp image.LayerProgress) {
					mu.Lock()
					defer mu.Unlock()
					_ = enc.Encode(lp)
				}
			}
			img, err := store.Pull(context.Background(), c.Args().First(), opts)
			if err != nil {
				return failed("%v", err)
			}
			fmt.Println(img.ID)
			return nil
		},
	}
}

func loadCommand() *cli.Command {
	return &cli.Command{
		Name:  "load",
		Usage: "load images from a docker-archive or oci-archive file",
		Description: `Examples:
  # An image archive built earlier in the job
  podrun load -i app.tar --tag app:ci

  # Straight from docker or podman
  docker save app:ci | podrun load`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "input", Aliases: []string{"i"}, Usage: "the archive (- or none: stdin)"},
			&cli.StringFlag{Name: "tag", Usage: "name the loaded image (e.g. busybox:1.28)"},
		},
		Action: func(c *cli.Context) error {
			input := c.String("input")
			if input == "" || input == "-" {
				if term.IsTerminal(int(os.Stdin.Fd())) {
					return usageError("load needs an archive: podrun load -i FILE, or one on stdin")
				}
				// The archive readers need a file they can seek in: stdin is
				// copied next to the store first (same file system, root's).
				tmp, err := stdinToFile(layout(c).Root)
				if err != nil {
					return failed("reading the archive from stdin: %v", err)
				}
				defer os.Remove(tmp)
				input = tmp
			}
			store, err := openStore(c)
			if err != nil {
				return err
			}
			imgs, err := store.Load(context.Background(), input, c.String("tag"), os.Stderr)
			if err != nil {
				return failed("%v", err)
			}
			for _, img := range imgs {
				fmt.Printf("Loaded image: %s\n", strings.Join(img.Names, ", "))
			}
			return nil
		},
	}
}

// stdinToFile copies stdin into a new file under dir and returns its path.
func stdinToFile(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".load-stdin-*.tar")
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, os.Stdin); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func imagesCommand() *cli.Command {
	return &cli.Command{
		Name:        "images",
		Description: "Examples:\n  # Every image in the store\n  podrun images",
		Usage:       "list the images in the local store",
		Flags:       []cli.Flag{&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "only IDs"}},
		Action:      listImages,
	}
}

func listImages(c *cli.Context) error {
	store, err := openStore(c)
	if err != nil {
		return err
	}
	imgs, err := store.List()
	if err != nil {
		return err
	}
	if c.Bool("quiet") {
		for _, img := range imgs {
			fmt.Println(shortID(img.ID))
		}
		return nil
	}
	tw := printers.NewTabWriter(os.Stdout)
	fmt.Fprintln(tw, "REPOSITORY\tTAG\tIMAGE ID\tSIZE")
	for _, img := range imgs {
		names := img.Names
		if len(names) == 0 {
			names = []string{"<none>:<none>"}
		}
		for _, n := range names {
			repo, tag := splitName(n)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", repo, tag, shortID(img.ID), humanSize(img.Size))
		}
	}
	return tw.Flush()
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func splitName(n string) (repo, tag string) {
	if i := strings.LastIndex(n, "@"); i >= 0 {
		return n[:i], "<none>"
	}
	if i := strings.LastIndex(n, ":"); i > strings.LastIndex(n, "/") {
		return n[:i], n[i+1:]
	}
	return n, "<none>"
}

// humanSize is the SIZE column as podman images prints it (decimal, three digits).
func humanSize(b int64) string { return units.HumanSizeWithPrecision(float64(b), 3) }

func rmiCommand() *cli.Command {
	return &cli.Command{
		Name:        "rmi",
		Description: "Examples:\n  # Remove an image no pod uses\n  podrun rmi busybox:1.28",
		Usage:       "remove images from the local store (not one a pod uses)",
		ArgsUsage:   "IMAGE...",
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return usageError("rmi needs at least one image")
			}
			store, err := openStore(c)
			if err != nil {
				return err
			}
			users, err := records.ImageUsers(layout(c), store)
			if err != nil {
				return err
			}
			inUse := func(id string) bool { return len(users[id]) > 0 }
			var errs []error
			for _, ref := range c.Args().Slice() {
				if err := store.Remove(ref, inUse); err != nil {
					if img, lerr := store.Lookup(ref); lerr == nil && errors.Is(err, image.ErrInUse) {
						err = fmt.Errorf("%w: %s", err, strings.Join(users[img.ID], ", "))
					}
					errs = append(errs, err)
					continue
				}
				fmt.Printf("Untagged: %s\n", ref)
			}
			if len(errs) > 0 {
				return failed("%v", errors.Join(errs...))
			}
			return nil
		},
	}
}

func imageCommand() *cli.Command {
	return &cli.Command{
		Name:  "image",
		Usage: "manage images",
		Subcommands: []*cli.Command{
			{Name: "ls", Aliases: []string{"list"}, Usage: "list images", Description: "Examples:\n  podrun image ls", Action: listImages},
			{
				Name:        "prune",
				Usage:       "remove images no pod uses, and their layers",
				Description: "Examples:\n  # Free the space of every image no pod uses\n  podrun image prune",
				Action: func(c *cli.Context) error {
					store, err := openStore(c)
					if err != nil {
						return err
					}
					inUse, err := records.ImagesInUse(layout(c), store)
					if err != nil {
						return err
					}
					removed, freed, err := store.Prune(inUse)
					if err != nil {
						return failed("%v", err)
					}
					for _, img := range removed {
						fmt.Printf("deleted: %s\n", img.ID)
					}
					fmt.Printf("Total reclaimed space: %s\n", humanSize(freed))
					return nil
				},
			},
		},
	}
}
