package kubesetup

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fibfleet/fibfleet/cluster"
)

// SecretsJob is `kubesetup secrets`: where, with which labels, what to make. The
// chart's job runs it; its test reads the same arguments from the rendered job.
type SecretsJob struct {
	Namespace string
	Labels    map[string]string
	Plan      Plan
}

// ParseSecrets reads `kubesetup secrets`'s arguments.
func ParseSecrets(args []string) (SecretsJob, error) {
	fs := flag.NewFlagSet("kubesetup secrets", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ns := fs.String("namespace", "", "the namespace of the Secrets (the release's)")
	var labels, names, clients list
	fs.Var(&labels, "label", "k=v: a label for the Secrets made (repeat)")
	ca := fs.String("ca-secret", "", "the Secret holding the CA (ca.crt, ca.key)")
	server := fs.String("etcd-server-secret", "", "the Secret of the bundled etcd's certificate")
	fs.Var(&names, "etcd-server-name", "DNS names and IP addresses of the etcd members (comma-separated, or repeat)")
	fs.Var(&clients, "etcd-client", "USER=SECRET: a client certificate for etcd user USER in SECRET (repeat)")
	gossip := fs.String("gossip-secret", "", "the Secret holding the gossip key")
	seed := fs.String("gossip-seed", "", "a Secret whose gossip key a new --gossip-secret takes, when it has one")
	if err := fs.Parse(args); err != nil {
		return SecretsJob{}, fmt.Errorf("secrets: %w", err)
	}
	if fs.NArg() > 0 {
		return SecretsJob{}, fmt.Errorf("secrets: unexpected arguments %q", fs.Args())
	}
	j := SecretsJob{Namespace: *ns, Labels: map[string]string{}, Plan: Plan{CASecret: *ca, GossipSecret: *gossip, GossipSeed: *seed}}
	if j.Namespace == "" {
		return j, errors.New("secrets: give --namespace (the release's)")
	}
	if *server != "" {
		j.Plan.Server = &Server{Secret: *server, Names: names}
	} else if len(names) > 0 {
		return j, errors.New("secrets: --etcd-server-name without --etcd-server-secret: name the Secret of etcd's certificate")
	}
	for _, c := range clients {
		user, secret, _ := strings.Cut(c, "=")
		j.Plan.Clients = append(j.Plan.Clients, Client{User: user, Secret: secret})
	}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return j, fmt.Errorf("secrets: --label %q: write key=value", l)
		}
		j.Labels[k] = v
	}
	return j, j.Plan.Validate()
}

// EtcdAuthJob is `kubesetup etcd-auth`: the etcd to log in to as root, the auth to
// set up, how long to wait for the members.
type EtcdAuthJob struct {
	Etcd cluster.EtcdConfig
	Auth cluster.Auth
	Wait time.Duration
}

// ParseEtcdAuth reads `kubesetup etcd-auth`'s arguments.
func ParseEtcdAuth(args []string) (EtcdAuthJob, error) {
	fs := flag.NewFlagSet("kubesetup etcd-auth", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var endpoints, users list
	fs.Var(&endpoints, "endpoints", "the etcd members' client URLs (comma-separated)")
	ca := fs.String("ca", "", "CA file verifying etcd's certificate")
	cert := fs.String("cert", "", "root's client certificate file")
	key := fs.String("key", "", "its key file")
	name := fs.String("cluster", "", "the fleet's name: its role may touch /fibfleet/<name>/ only")
	fs.Var(&users, "user", "a fleet user, given the fleet's role (repeat)")
	wait := fs.Duration("wait", 5*time.Minute, "how long to wait for etcd to answer")
	if err := fs.Parse(args); err != nil {
		return EtcdAuthJob{}, fmt.Errorf("etcd-auth: %w", err)
	}
	if fs.NArg() > 0 {
		return EtcdAuthJob{}, fmt.Errorf("etcd-auth: unexpected arguments %q", fs.Args())
	}
	j := EtcdAuthJob{Etcd: cluster.EtcdConfig{Endpoints: endpoints, CA: *ca, Cert: *cert, Key: *key},
		Auth: cluster.Auth{Cluster: *name, Users: users}, Wait: *wait}
	var errs []error
	if err := j.Etcd.Validate(); err != nil {
		errs = append(errs, err)
	}
	if *cert == "" || *ca == "" {
		errs = append(errs, errors.New("give etcd's CA (--ca) and root's client certificate (--cert, --key)"))
	}
	if err := cluster.CheckName(*name); err != nil {
		errs = append(errs, fmt.Errorf("--cluster: %w", err))
	}
	if len(users) == 0 {
		errs = append(errs, errors.New("give the fleet's users (--user)"))
	}
	if err := errors.Join(errs...); err != nil {
		return j, fmt.Errorf("etcd-auth: %w", err)
	}
	return j, nil
}

// list is a repeatable, comma-separated flag.
type list []string

func (l *list) String() string { return strings.Join(*l, ",") }

func (l *list) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}
