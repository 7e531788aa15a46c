package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

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
		},
		// podrun-image pulls (the CLI does not link the registry client).
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("pull needs one image reference")
			}
			args := []string{"--root", layout(c).Root, "pull"}
			if v := c.String("authfile"); v != "" {
				args = append(args, "--authfile", v)
			}
			if c.Bool("insecure") {
				args = append(args, "--insecure")
			}
			if c.Bool("quiet") {
				args = append(args, "-q")
			}
			return runImageHelper(append(args, "--", c.Args().First()))
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
		// podrun-image loads (the CLI does not link the archive readers).
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageError("load takes no arguments: podrun load -i FILE, or an archive on stdin")
			}
			input := c.String("input")
			if (input == "" || input == "-") && term.IsTerminal(int(os.Stdin.Fd())) {
				return usageError("load needs an archive: podrun load -i FILE, or one on stdin")
			}
			args := []string{"--root", layout(c).Root, "load"}
			if input != "" {
				args = append(args, "-i", input)
			}
			if v := c.String("tag"); v != "" {
				args = append(args, "--tag", v)
			}
			return runImageHelper(args)
		},
	}
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
