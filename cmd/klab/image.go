package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime/docker"
)

// newImageCmd is `klab image`: builds klab's Docker images from the klab
// binary ($KLAB_BINARY, else this one) now, rather than on the first
// `klab up --runtime docker`.
func newImageCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "image",
		Short: i18n.T("image.short"),
		Long:  i18n.T("image.long"),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, _, err := lab.ResolveRuntime(cmd.Context(), lab.RuntimeDocker); err != nil {
				return err
			}
			img, err := docker.EnsureImage(cmd.Context(), docker.ImageOptions{BuildID: dockerBuildID()})
			if err != nil {
				return err
			}
			state := i18n.T("image.present")
			if img.Built {
				state = i18n.T("image.built")
			}
			fmt.Fprintln(cmd.OutOrStdout(), i18n.T("image.done", img.Node, img.App, state, fmt.Sprintf("%.1f", float64(img.Size)/(1<<20))))
			return nil
		},
	}
}
