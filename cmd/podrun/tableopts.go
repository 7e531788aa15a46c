package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/printers"
)

// tableOptions are get's table flags that apply to every kind's table, as
// kubectl's HumanReadablePrinter applies them after the kind's columns
// (printers/tablegenerator and PrintOptions): --no-headers, -L KEY (a column
// a key, upper-cased) then --show-labels (LABELS last).
type tableOptions struct {
	noHeaders  bool
	showLabels bool
	columns    []string
}

// getTable is the command's table options (set by get; zero elsewhere).
var getTable tableOptions

func setTableOptions(c *cli.Context) {
	getTable = tableOptions{noHeaders: c.Bool("no-headers"), showLabels: c.Bool("show-labels")}
	for _, v := range c.StringSlice("label-columns") {
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); k != "" {
				getTable.columns = append(getTable.columns, k)
			}
		}
	}
}

func (t tableOptions) header(h []string) []string {
	for _, k := range t.columns {
		parts := strings.Split(k, "/")
		h = append(h, strings.ToUpper(parts[len(parts)-1]))
	}
	if t.showLabels {
		h = append(h, "LABELS")
	}
	return h
}

func (t tableOptions) row(r []string, labels map[string]string) []string {
	for _, k := range t.columns {
		r = append(r, labels[k])
	}
	if t.showLabels {
		r = append(r, printers.FormatLabels(labels))
	}
	return r
}

// tableRow is one object's row of a get table.
type tableRow struct {
	namespace string
	cells     []string
	labels    map[string]string
}

// print writes a get table to stdout: the kind's header and rows with these
// options, and with allNS (-A) a NAMESPACE column first, as kubectl prints.
func (t tableOptions) print(header []string, rows []tableRow, allNS bool) error {
	header = t.header(header)
	if allNS {
		header = append([]string{"NAMESPACE"}, header...)
	}
	w := printers.NewTabWriter(os.Stdout)
	if !t.noHeaders {
		fmt.Fprintln(w, strings.Join(header, "\t"))
	}
	for _, r := range rows {
		row := t.row(r.cells, r.labels)
		if allNS {
			row = append([]string{r.namespace}, row...)
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	return w.Flush()
}
