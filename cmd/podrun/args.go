package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed lets flags go anywhere on the line, as kubectl (cobra) takes
// them: `podrun logs myapp -c init-mydb`, `podrun get pods -n ci`. urfave/cli
// v2 stops at the first positional argument and knows the global flags only
// before the command name, so the line is reordered before it is parsed:
// global flags first (wherever they were), then the command, its flags, and
// its positional arguments. Everything after "--" stays as it is.
//
// `--dry-run` without a value means `--dry-run=client`, as kubectl's
// deprecated bare form did.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	// Shell completion asks with a last --generate-bash-completion; it must stay last.
	if last := len(args) - 1; args[last] == "--generate-bash-completion" {
		return append(interspersed(app, args[:last]), args[last])
	}
	// `podrun help VERB` is `podrun VERB --help`.
	if len(args) > 2 && args[1] == "help" {
		return append(append([]string{args[0]}, args[2:]...), "--help")
	}
	var global []string
	rest := args[1:]
	// Global flags before the command name.
	i := 0
	for i < len(rest) && strings.HasPrefix(rest[i], "-") && rest[i] != "--" && rest[i] != "-" {
		n := flagArity(app.Flags, rest[i])
		global = append(global, rest[i:min(i+n, len(rest))]...)
		i += n
	}
	if i >= len(rest) {
		return append(args[:1:1], global...)
	}
	cmdPath := []string{rest[i]}
	cmd := findCommand(app.Commands, rest[i])
	rest = rest[i+1:]
	for cmd != nil && len(cmd.Subcommands) > 0 && len(rest) > 0 {
		sub := findCommand(cmd.Subcommands, rest[0])
		if sub == nil {
			break
		}
		cmdPath = append(cmdPath, rest[0])
		rest, cmd = rest[1:], sub
	}
	if cmd == nil {
		out := append(append(args[:1:1], global...), cmdPath...)
		return append(out, rest...)
	}
	var flags, positional []string
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		if a == "--" {
			positional = append(positional, rest[j:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		name := flagName(a)
		if name == "dry-run" && !strings.Contains(a, "=") && hasFlag(cmd.Flags, name) {
			flags = append(flags, "--dry-run=client")
			continue
		}
		if !hasFlag(cmd.Flags, name) && hasFlag(app.Flags, name) {
			n := flagArity(app.Flags, a)
			global = append(global, rest[j:min(j+n, len(rest))]...)
			j += n - 1
			continue
		}
		n := flagArity(cmd.Flags, a)
		flags = append(flags, rest[j:min(j+n, len(rest))]...)
		j += n - 1
	}
	out := append(append(args[:1:1], global...), cmdPath...)
	return append(append(out, flags...), positional...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.Name == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}

// flagName is the name of a flag argument: "-n" → "n", "--output=json" → "output".
func flagName(arg string) string {
	name := strings.TrimLeft(arg, "-")
	if k, _, ok := strings.Cut(name, "="); ok {
		return k
	}
	return name
}

func hasFlag(flags []cli.Flag, name string) bool {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return true
		}
	}
	return false
}

// flagArity is how many arguments a flag occupies: 1 for booleans and
// --flag=value, 2 for a flag that takes its value from the next argument.
func flagArity(flags []cli.Flag, arg string) int {
	if strings.Contains(arg, "=") {
		return 1
	}
	name := flagName(arg)
	for _, f := range flags {
		if !slices.Contains(f.Names(), name) {
			continue
		}
		if _, ok := f.(*cli.BoolFlag); ok {
			return 1
		}
		return 2
	}
	return 1
}

// checkCommand refuses an unknown command before urfave/cli sees it (it would
// print "No help topic" and exit 3): exit 2 with kubectl's suggestion.
func checkCommand(app *cli.App, args []string) error {
	for i := 1; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			i += flagArity(app.Flags, a) - 1
			continue
		}
		if a == "help" || findCommand(app.Commands, a) != nil {
			return nil
		}
		var names []string
		for _, c := range app.Commands {
			if !c.Hidden {
				names = append(names, c.Names()...)
			}
		}
		msg := fmt.Sprintf("unknown command %q for \"podrun\"", a)
		if s := suggest(a, names); len(s) > 0 {
			msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
		}
		return usageError("%s\nRun 'podrun --help' for usage.", msg)
	}
	return nil
}

// flagSuggestion turns urfave/cli's "flag provided but not defined: -x" into
// the same message with the closest flags of the command.
func flagSuggestion(err error, flags []cli.Flag) string {
	msg := err.Error()
	const undefined = "flag provided but not defined: "
	i := strings.Index(msg, undefined)
	if i < 0 {
		return msg
	}
	bad := flagName(strings.Fields(msg[i+len(undefined):])[0])
	var names []string
	for _, f := range append(append([]cli.Flag(nil), flags...), globalFlags()...) {
		names = append(names, f.Names()...)
	}
	s := suggest(bad, names)
	if len(s) == 0 {
		return "unknown flag: " + dashed(bad)
	}
	for i := range s {
		s[i] = dashed(s[i])
	}
	return fmt.Sprintf("unknown flag: %s\n\nDid you mean this?\n\t%s", dashed(bad), strings.Join(s, "\n\t"))
}

func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// suggest follows cobra's SuggestionsFor: names within Levenshtein distance 2
// (case-insensitive), or that start with what was typed.
func suggest(typed string, names []string) []string {
	var out []string
	lt := strings.ToLower(typed)
	if len(lt) < 3 {
		return nil // every short flag is within distance 2 of every other
	}
	for _, n := range names {
		if n == typed || slices.Contains(out, n) {
			continue
		}
		ln := strings.ToLower(n)
		if levenshtein(lt, ln) <= 2 || (len(lt) > 1 && strings.HasPrefix(ln, lt)) {
			out = append(out, n)
		}
	}
	return out
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
