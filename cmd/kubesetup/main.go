// Command kubesetup runs the Helm chart's hook jobs (package kubesetup):
//
//	kubesetup secrets    before install and upgrade: the fleet's CA, certificates and gossip key, made once and kept
//	kubesetup etcd-auth  after install and upgrade: the bundled etcd's auth on, the fleet's role and users
//	kubesetup version
//
// This file is wiring only: flags, the Kubernetes client, signals.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fibfleet/fibfleet/kubesetup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], log); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "kubesetup:", err)
		// 2: the command line is wrong; 1: the work failed.
		var u usageError
		if errors.As(err, &u) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

const usage = `usage:
  kubesetup secrets --namespace NS [--label k=v]... [--ca-secret S] [--etcd-server-secret S --etcd-server-name N...] [--etcd-client USER=SECRET]... [--gossip-secret S]
  kubesetup etcd-auth --endpoints URL[,URL] --ca F --cert F --key F --cluster NAME --user U... [--wait 5m]
  kubesetup version`

func run(ctx context.Context, args []string, log *slog.Logger) error {
	if len(args) == 0 {
		return usageError{errors.New(usage)}
	}
	switch args[0] {
	case "secrets":
		return secrets(ctx, args[1:], log)
	case "etcd-auth":
		return etcdAuth(ctx, args[1:], log)
	case "version":
		fmt.Println("kubesetup", version)
		return nil
	default:
		return usageError{fmt.Errorf("unknown command %q\n%s", args[0], usage)}
	}
}

// usageError is a wrong command line.
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

func secrets(ctx context.Context, args []string, log *slog.Logger) error {
	job, err := kubesetup.ParseSecrets(args)
	if err != nil {
		return usageError{err}
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return fmt.Errorf("the Kubernetes API (this runs as the chart's hook job, in a pod): %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	changes, err := kubesetup.Reconcile(ctx, kubesetup.KubeSecrets{Client: cs, Namespace: job.Namespace, Labels: job.Labels}, job.Plan, time.Now(), log)
	if err != nil {
		return err
	}
	log.Info("secrets in place", "namespace", job.Namespace, "written", len(changes))
	return nil
}

func etcdAuth(ctx context.Context, args []string, log *slog.Logger) error {
	job, err := kubesetup.ParseEtcdAuth(args)
	if err != nil {
		return usageError{err}
	}
	return kubesetup.EnableEtcdAuth(ctx, job.Etcd, job.Auth, job.Wait, log)
}
