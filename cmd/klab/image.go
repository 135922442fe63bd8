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
	cmd := &cobra.Command{
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
	cmd.AddCommand(newImagePruneCmd())
	return cmd
}

// newImagePruneCmd is `klab image prune`: removes the images of klab builds
// other than this one, which pile up as klab is upgraded.
func newImagePruneCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "prune",
		Short: i18n.T("image.prune.short"),
		Long:  i18n.T("image.prune.long"),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, _, err := lab.ResolveRuntime(cmd.Context(), lab.RuntimeDocker); err != nil {
				return err
			}
			return pruneImages(cmd)
		},
	}
}

// pruneImages removes klab's images of other builds and says what it did.
func pruneImages(cmd *cobra.Command) error {
	out := cmd.OutOrStdout()
	keep, err := docker.CurrentBuildID(docker.ImageOptions{BuildID: dockerBuildID()})
	if err != nil {
		return err
	}
	res, err := docker.PruneImages(cmd.Context(), docker.PruneOptions{Keep: keep})
	for _, name := range res.Removed {
		fmt.Fprintln(out, i18n.T("image.prune.removed", name))
	}
	for _, name := range res.InUse {
		fmt.Fprintln(out, i18n.T("image.prune.in-use", name))
	}
	if len(res.Removed) == 0 && len(res.InUse) == 0 {
		fmt.Fprintln(out, i18n.T("image.prune.none", keep))
	} else {
		fmt.Fprintln(out, i18n.T("image.prune.done", len(res.Removed), fmt.Sprintf("%.1f", float64(res.Bytes)/(1<<20)), keep))
	}
	return err
}
