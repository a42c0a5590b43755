package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/fibfleet/fibfleet/cluster"
	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	"gopkg.in/yaml.v3"
)

// globals are the flags every command takes: where etcd is and how to log in, the
// fleet's name, how to reach the nodes' APIs, the output format, the time limit.
type globals struct {
	etcd                                            []string
	etcdCA, etcdCert, etcdKey, etcdUser, etcdPwFile string
	etcdInsecure                                    bool
	cluster                                         string
	apiCA, apiCert, apiKey                          string
	output                                          string
	timeout                                         time.Duration

	in          io.Reader
	out, errOut io.Writer
	// envErr is what is wrong with the environment's defaults (a usage error).
	envErr error
}

// envBool reads the boolean environment variable name (false when unset); the error
// says what is wrong with its value.
func envBool(name string) (bool, error) {
	v := os.Getenv(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q: use true or false (or unset it)", name, v)
	}
	return b, nil
}

// defaultEtcd is FIBFLEET_ETCD, else the etcd of a lab running on this host (`lab
// up`), else where a node alone on this host keeps its embedded etcd's socket
// (node_name defaults to the hostname).
func defaultEtcd() []string {
	if e := os.Getenv("FIBFLEET_ETCD"); e != "" {
		return strings.Split(e, ",")
	}
	if e := labEtcd(); e != "" {
		return []string{e}
	}
	host, _ := os.Hostname()
	return []string{"unix://" + filepath.Join("/var/lib/fibfleet", host, "etcd", "etcd.sock")}
}

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "ctl",
		Short: "Tune and watch a fibfleet fleet from one place",
		Long: `ctl tunes and watches a fibfleet fleet: the nodes' state, the destination cache's
policy and flushes for the whole fleet or one node, where a destination goes on every
node. It reads and writes the fleet's etcd (every write is validated first and made with
compare-and-swap) and reads the nodes' APIs (their addresses are registered in etcd).`,
		Example: `  ctl status
  ctl --etcd https://10.0.0.11:2379,https://10.0.0.12:2379 --etcd-ca ca.crt --etcd-cert ctl.crt --etcd-key ctl.key -o json status
  ctl cache set --mode auto --min 1024 --max 65536 --target-hit-rate 0.9
  ctl cache flush --wait
  ctl lookup 1.1.1.1
  ctl top`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if g.envErr != nil && !cmd.Flags().Changed("etcd-insecure") {
				return usageError{g.envErr}
			}
			switch g.output {
			case "table", "json", "yaml":
			default:
				return usagef("-o %q: use table, json or yaml", g.output)
			}
			if g.timeout <= 0 {
				return usagef("--timeout %s: use a positive duration such as 10s", g.timeout)
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	f := root.PersistentFlags()
	f.StringSliceVar(&g.etcd, "etcd", defaultEtcd(), "the fleet's etcd client URLs (http://, https://, unix:///path), comma-separated; env FIBFLEET_ETCD")
	// The environment gives defaults, so ctl inside a node's pod (whose env the Helm
	// chart sets) reaches the fleet's etcd with no flags.
	f.StringVar(&g.etcdCA, "etcd-ca", os.Getenv("FIBFLEET_ETCD_CA"), "CA file verifying etcd's certificates; env FIBFLEET_ETCD_CA")
	f.StringVar(&g.etcdCert, "etcd-cert", os.Getenv("FIBFLEET_ETCD_CERT"), "client certificate file for etcd; env FIBFLEET_ETCD_CERT")
	f.StringVar(&g.etcdKey, "etcd-key", os.Getenv("FIBFLEET_ETCD_KEY"), "client key file for etcd; env FIBFLEET_ETCD_KEY")
	f.StringVar(&g.etcdUser, "etcd-user", os.Getenv("FIBFLEET_ETCD_USER"), "etcd user (auth enabled); env FIBFLEET_ETCD_USER")
	f.StringVar(&g.etcdPwFile, "etcd-password-file", os.Getenv("FIBFLEET_ETCD_PASSWORD_FILE"), "file holding the etcd user's password; env FIBFLEET_ETCD_PASSWORD_FILE")
	insecure, envErr := envBool("FIBFLEET_ETCD_INSECURE")
	g.envErr = envErr
	f.BoolVar(&g.etcdInsecure, "etcd-insecure", insecure, "allow plain http:// etcd endpoints off this host (anyone on the path can change the fleet's policy, drains and blackholes): for a network nothing else reaches, such as a lab's; env FIBFLEET_ETCD_INSECURE=true")
	f.StringVar(&g.cluster, "cluster", cmp.Or(os.Getenv("FIBFLEET_CLUSTER"), "default"), "the fleet's name (its keys live under /fibfleet/<cluster>/); env FIBFLEET_CLUSTER")
	f.StringVar(&g.apiCA, "api-ca", os.Getenv("FIBFLEET_API_CA"), "CA file verifying the nodes' API certificates (their APIs serve HTTPS); env FIBFLEET_API_CA")
	f.StringVar(&g.apiCert, "api-cert", os.Getenv("FIBFLEET_API_CERT"), "client certificate file for the nodes' APIs; env FIBFLEET_API_CERT")
	f.StringVar(&g.apiKey, "api-key", os.Getenv("FIBFLEET_API_KEY"), "client key file for the nodes' APIs; env FIBFLEET_API_KEY")
	f.StringVarP(&g.output, "output", "o", "table", "output format: table, json or yaml")
	f.DurationVar(&g.timeout, "timeout", 10*time.Second, "time limit of the command (waits included)")
	root.AddCommand(newStatus(g), newCache(g), newLookup(g), newTop(g), newDrain(g), newUndrain(g), newBlackhole(g), newNeighbors(g), newRoutes(g), newAdvertised(g), newVersion(g))
	return root
}

// labEtcd is the etcd of a lab running on this host: the lab (cmd/lab) reports it in
// state.json in its directory, FIBFLEET_LAB_DIR or /run/fibfleet-lab-up, with its
// process, which must be alive.
func labEtcd() string {
	b, err := os.ReadFile(filepath.Join(cmp.Or(os.Getenv("FIBFLEET_LAB_DIR"), "/run/fibfleet-lab-up"), "state.json"))
	var st struct {
		PID  int    `json:"pid"`
		Etcd string `json:"etcd"`
	}
	if err != nil || json.Unmarshal(b, &st) != nil || st.PID <= 0 || syscall.Kill(st.PID, 0) != nil {
		return ""
	}
	return st.Etcd
}

// exactArgs is cobra.ExactArgs as a usage error.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("give %s (%d argument), not %d arguments", what, n, len(args))
		}
		return nil
	}
}

func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

// store connects to the fleet's etcd and returns the fleet's store.
func (g *globals) store(ctx context.Context) (*cluster.Store, *clientv3.Client, error) {
	cfg := cluster.EtcdConfig{Endpoints: g.etcd, CA: g.etcdCA, Cert: g.etcdCert, Key: g.etcdKey, Username: g.etcdUser, PasswordFile: g.etcdPwFile,
		DialTimeout: min(g.timeout, 5*time.Second), Insecure: g.etcdInsecure}
	if err := cfg.Validate(); err != nil {
		return nil, nil, usageError{inFlags(err)}
	}
	if err := cluster.CheckName(g.cluster); err != nil {
		return nil, nil, usagef("--cluster: %v", err)
	}
	cli, err := cluster.Connect(ctx, cfg, g.cluster)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (give the fleet's etcd with --etcd or FIBFLEET_ETCD)", err)
	}
	s, err := cluster.NewStore(cli, g.cluster)
	if err != nil {
		cli.Close()
		return nil, nil, err
	}
	return s, cli, nil
}

// inFlags words the etcd settings' errors with ctl's flags: a plain-HTTP endpoint's
// refusal names a config file's setting, insecure: true.
func inFlags(err error) error {
	parts := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	}
	out := make([]error, len(parts))
	for i, e := range parts {
		var p *cluster.PlainHTTPError
		if errors.As(e, &p) {
			e = fmt.Errorf("--etcd %q is plain HTTP off this host: %s; use https:// with --etcd-ca, --etcd-cert and --etcd-key, or give --etcd-insecure (FIBFLEET_ETCD_INSECURE=true)",
				p.Endpoint, cluster.PlainHTTPRisk)
		}
		out[i] = e
	}
	return errors.Join(out...)
}

// api is a client of the nodes' APIs.
type api struct {
	tls     *tls.Config
	timeout time.Duration
}

func (g *globals) api() (*api, error) {
	a := &api{timeout: min(g.timeout, 5*time.Second)}
	if g.apiCA == "" && g.apiCert == "" {
		return a, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if g.apiCA != "" {
		pem, err := os.ReadFile(g.apiCA)
		if err != nil {
			return nil, fmt.Errorf("--api-ca: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--api-ca %s: no PEM certificate in it", g.apiCA)
		}
	}
	if (g.apiCert == "") != (g.apiKey == "") {
		return nil, usagef("--api-cert and --api-key go together")
	}
	if g.apiCert != "" {
		c, err := tls.LoadX509KeyPair(g.apiCert, g.apiKey)
		if err != nil {
			return nil, fmt.Errorf("--api-cert/--api-key: %w", err)
		}
		tc.Certificates = []tls.Certificate{c}
	}
	a.tls = tc
	return a, nil
}

// get fetches a node API path from addr (host:port, or unix:///path) into v.
func (a *api) get(ctx context.Context, addr, path string, v any) error {
	if addr == "" {
		return fmt.Errorf("the node registered no API address")
	}
	tr := &http.Transport{TLSClientConfig: a.tls}
	scheme, host := "http", addr
	if a.tls != nil {
		scheme = "https"
	}
	if sock, ok := strings.CutPrefix(addr, "unix://"); ok {
		host = "node"
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}
	}
	c := &http.Client{Transport: tr, Timeout: a.timeout}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+host+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("node API at %s: %w", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("node API at %s: %w", addr, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("node API at %s: %s: %s", addr, resp.Status, strings.TrimSpace(string(body)))
	}
	return json.Unmarshal(body, v)
}

// render prints v as JSON or YAML, or calls table with a tab writer.
func (g *globals) render(v any, table func(w io.Writer)) error {
	switch g.output {
	case "json":
		enc := json.NewEncoder(g.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		// Through JSON, so YAML has the same field names.
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		var x any
		if err := json.Unmarshal(b, &x); err != nil {
			return err
		}
		enc := yaml.NewEncoder(g.out)
		defer enc.Close()
		return enc.Encode(x)
	}
	tw := tabwriter.NewWriter(g.out, 0, 0, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

// context is the command's context, bounded by --timeout.
func (g *globals) context(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), g.timeout)
}

// fleetView is a command's connection to etcd and what etcd knows of the fleet's nodes.
type fleetView struct {
	store      *cluster.Store
	cli        *clientv3.Client
	registered []cluster.NodeInfo
	applied    map[string]cluster.Applied
	names      []string
}

// open connects to etcd and reads the fleet's nodes; node, when set, must be one of
// them (a usage error names the known ones).
func (g *globals) open(ctx context.Context, node string) (*fleetView, error) {
	s, cli, err := g.store(ctx)
	if err != nil {
		return nil, err
	}
	v := &fleetView{store: s, cli: cli}
	if v.registered, v.applied, v.names, err = knownNodes(ctx, s); err != nil {
		cli.Close()
		return nil, err
	}
	if node != "" && !slices.Contains(v.names, node) {
		cli.Close()
		return nil, usagef("--node %q: no such node in fleet %q (known: %s)", node, g.cluster, strings.Join(v.names, ", "))
	}
	return v, nil
}

func (v *fleetView) Close() { v.cli.Close() }

// knownNodes are the nodes etcd knows: registered under a live lease, or with an
// applied state (a node that went away).
func knownNodes(ctx context.Context, s *cluster.Store) (registered []cluster.NodeInfo, applied map[string]cluster.Applied, names []string, err error) {
	if registered, err = s.Nodes(ctx); err != nil {
		return nil, nil, nil, err
	}
	if applied, err = s.AppliedStates(ctx); err != nil {
		return nil, nil, nil, err
	}
	for _, n := range registered {
		names = append(names, n.Name)
	}
	for n := range applied {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return registered, applied, names, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
