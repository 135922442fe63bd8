package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/etcd"
)

// newComponentEtcdRestoreCmd is `klab component etcd-restore --spec <json>`:
// klab's `etcdutl snapshot restore`, run by the Docker runtime in a one-shot
// container that mounts a stopped member's volume. It restores the member's
// data dir in place (etcd.RestoreInPlace) and prints what it made as JSON
// on stdout.
func newComponentEtcdRestoreCmd() *cobra.Command {
	var spec string
	cmd := &cobra.Command{
		Use:   "etcd-restore --spec <json>",
		Short: i18n.T("component.etcd-restore.short"),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var cfg etcd.RestoreConfig
			if err := decodeSpec("etcd-restore", spec, &cfg, []string{"snapshot", "name", "dataDir", "clusterToken", "initialCluster"}); err != nil {
				return err
			}
			res, err := etcd.RestoreInPlace(cfg)
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		},
	}
	cmd.Flags().StringVar(&spec, "spec", "", i18n.T("component.flag.spec"))
	return cmd
}
