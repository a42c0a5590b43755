package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// versionDoc is `ctl version`'s document.
type versionDoc struct {
	Version string `json:"version"`
}

func newVersion(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print ctl's version",
		Long:    `version prints ctl's version (set at build time); it reads neither etcd nor the nodes.`,
		Example: "  ctl version\n  ctl version -o json",
		Args:    noArgs,
		RunE: func(*cobra.Command, []string) error {
			return g.render(versionDoc{Version: version}, func(w io.Writer) { fmt.Fprintf(w, "ctl %s\n", version) })
		},
	}
}
