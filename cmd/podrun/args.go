package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed lets flags follow positional arguments, as kubectl does
// (`podrun logs myapp -c init-mydb`): urfave/cli v2 stops at the first
// positional argument, so each command's flags are moved in front of them.
// Everything after "--" stays as it is.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	rest := args[1:]
	// Global flags come before the command name.
	i := 0
	for i < len(rest) && strings.HasPrefix(rest[i], "-") && rest[i] != "--" {
		n := flagArity(app.Flags, rest[i])
		out = append(out, rest[i:min(i+n, len(rest))]...)
		i += n
	}
	if i >= len(rest) {
		return out
	}
	cmd := findCommand(app.Commands, rest[i])
	out = append(out, rest[i])
	rest = rest[i+1:]
	for cmd != nil && len(cmd.Subcommands) > 0 && len(rest) > 0 {
		sub := findCommand(cmd.Subcommands, rest[0])
		if sub == nil {
			break
		}
		out = append(out, rest[0])
		rest, cmd = rest[1:], sub
	}
	if cmd == nil {
		return append(out, rest...)
	}
	var flags, positional []string
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		if a == "--" {
			positional = append(positional, rest[j:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			n := flagArity(cmd.Flags, a)
			flags = append(flags, rest[j:min(j+n, len(rest))]...)
			j += n - 1
			continue
		}
		positional = append(positional, a)
	}
	return append(append(out, flags...), positional...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.Name == name {
			return c
		}
		for _, a := range c.Aliases {
			if a == name {
				return c
			}
		}
	}
	return nil
}

// flagArity is how many arguments a flag occupies: 1 for booleans and
// --flag=value, 2 for a flag that takes its value from the next argument.
func flagArity(flags []cli.Flag, arg string) int {
	name := strings.TrimLeft(arg, "-")
	if strings.Contains(name, "=") {
		return 1
	}
	for _, f := range flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			if _, ok := f.(*cli.BoolFlag); ok {
				return 1
			}
			return 2
		}
	}
	return 1
}
