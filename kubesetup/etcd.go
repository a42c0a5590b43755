package kubesetup

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/fibfleet/fibfleet/cluster"
)

// EnableEtcdAuth turns the bundled etcd's auth on (cluster.EnableAuth), logged in
// with root's client certificate (etcd's ca, cert, key in e). The members may still
// be starting (volumes bound, images pulled, a quorum formed): it tries again every
// few seconds, saying why, until it succeeds or wait is over.
func EnableEtcdAuth(ctx context.Context, e cluster.EtcdConfig, a cluster.Auth, wait time.Duration, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if e.DialTimeout == 0 {
		e.DialTimeout = 5 * time.Second
	}
	// A file that is not there will not come: say so at once, not after the wait.
	for _, f := range []string{e.CA, e.Cert, e.Key} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("etcd auth: %w: the job mounts root's certificate from the setup job's Secret; check that it ran", err)
		}
	}
	tick := time.NewTicker(3 * time.Second)
	defer tick.Stop()
	for attempt := 1; ; attempt++ {
		err := enableOnce(ctx, e, a)
		if err == nil {
			log.Info("etcd auth on", "cluster", a.Cluster, "role", cluster.RoleName(a.Cluster), "users", a.Users, "attempts", attempt)
			return nil
		}
		log.Info("etcd not ready for auth yet; trying again", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("etcd auth not on after %s (%d attempts), last: %w: check that the etcd pods run (kubectl get pods -n <the release's namespace> -l app.kubernetes.io/component=etcd) and their logs", wait, attempt, err)
		case <-tick.C:
		}
	}
}

func enableOnce(ctx context.Context, e cluster.EtcdConfig, a cluster.Auth) error {
	cli, err := cluster.NewClient(e)
	if err != nil {
		return err
	}
	defer cli.Close()
	actx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return cluster.EnableAuth(actx, cli, a)
}
