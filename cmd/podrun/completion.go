package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/store"
)

// The shell scripts are urfave/cli's autocomplete scripts (autocomplete/ in
// its repository) with PROG set: they ask podrun itself for the words, with
// --generate-bash-completion, so they stay true as commands and flags change.
const bashCompletion = `# podrun completion for bash: source <(podrun completion bash)
_podrun_bash_autocomplete() {
  if [[ "${COMP_WORDS[0]}" != "source" ]]; then
    local cur opts base words cword
    COMPREPLY=()
    cur="${COMP_WORDS[COMP_CWORD]}"
    if declare -F _init_completion >/dev/null 2>&1; then
      _init_completion -n "=:" || return
    else
      words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
    fi
    words=("${words[@]:0:$cword}")
    if [[ "$cur" == "-"* ]]; then
      requestComp="${words[*]} ${cur} --generate-bash-completion"
    else
      requestComp="${words[*]} --generate-bash-completion"
    fi
    opts=$(eval "${requestComp}" 2>/dev/null)
    COMPREPLY=($(compgen -W "${opts}" -- ${cur}))
    return 0
  fi
}
complete -o bashdefault -o default -o nospace -F _podrun_bash_autocomplete podrun
`

const zshCompletion = `#compdef podrun
# podrun completion for zsh: source <(podrun completion zsh)
_podrun_zsh_autocomplete() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _podrun_zsh_autocomplete podrun
`

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: `Examples:
  # bash, for this shell
  source <(podrun completion bash)

  # bash, for every shell
  podrun completion bash | sudo tee /etc/bash_completion.d/podrun

  # fish
  podrun completion fish > ~/.config/fish/completions/podrun.fish`,
		Action: func(c *cli.Context) error {
			switch c.Args().First() {
			case "bash":
				fmt.Print(bashCompletion)
			case "zsh":
				fmt.Print(zshCompletion)
			case "fish":
				s, err := c.App.ToFishCompletion()
				if err != nil {
					return err
				}
				fmt.Print(s)
			default:
				return usageError("completion needs a shell: bash, zsh or fish")
			}
			return nil
		},
	}
}

// completePods completes pod names (the words after the verb).
func completePods(c *cli.Context) {
	recs, err := store.ListPods(layout(c), namespace(c))
	if err != nil {
		return
	}
	for _, r := range recs {
		fmt.Println(r.Pod.Name)
	}
	if c.NArg() == 0 {
		for _, f := range c.Command.VisibleFlags() {
			fmt.Println(dashed(strings.TrimSpace(f.Names()[0])))
		}
	}
}
