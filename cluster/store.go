// Package cluster keeps what the fleet shares in etcd: the cache policy (for the
// fleet, and per node), the flush epoch, and the nodes registered under leases. Every
// value is JSON with a schema version; every write is validated and made with
// compare-and-swap on the key's revision, so two operators (or ctl and a node) never
// overwrite each other unseen.
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fibfleet/fibfleet/cache"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Schema is the version of the JSON values this package writes; it refuses others.
const Schema = 1

// ErrConflict: the key changed since the revision the write expected. Read it again.
var ErrConflict = errors.New("cluster: the value changed since it was read (compare-and-swap failed): read it again and retry")

// ErrNoPolicy: etcd holds no policy for the node or the fleet; the node's config file
// decides.
var ErrNoPolicy = errors.New("cluster: no cache policy in etcd")

// AnyRevision makes a write unconditional; NoRevision requires the key to be absent.
const (
	AnyRevision int64 = -1
	NoRevision  int64 = 0
)

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// Store reads and writes the fleet's keys under /fibfleet/<cluster>/.
type Store struct {
	cli    *clientv3.Client
	prefix string
}

// CheckName says whether a cluster or node name is one etcd keys can carry.
func CheckName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("name %q: use letters, digits, '.', '_' or '-' (at most 63, starting with a letter or digit)", name)
	}
	return nil
}

// NewStore uses cli for the cluster's keys.
func NewStore(cli *clientv3.Client, clusterName string) (*Store, error) {
	if err := CheckName(clusterName); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return &Store{cli: cli, prefix: Prefix(clusterName)}, nil
}

// Prefix is where a fleet's keys live in etcd.
func Prefix(clusterName string) string { return "/fibfleet/" + clusterName + "/" }

// policyDoc is a cache policy as stored: the flat policy's fields beside the schema.
type policyDoc struct {
	Schema int `json:"schema"`
	cache.FlatPolicy
}

func (s *Store) policyKey(node string) string {
	if node == "" {
		return s.prefix + "policy"
	}
	return s.prefix + "policy/nodes/" + node
}

// Source says where a policy came from.
type Source string

const (
	FromNode  Source = "node"  // the node's override in etcd
	FromFleet Source = "fleet" // the fleet's policy in etcd
)

// PolicyInForce is the policy in force for a node: its override, else the fleet's
// (ErrNoPolicy when neither is in etcd: the node's config file then applies).
func (s *Store) PolicyInForce(ctx context.Context, node string) (cache.Policy, Source, error) {
	if err := checkNode(node); err != nil {
		return cache.Policy{}, "", err
	}
	for _, src := range []struct {
		node string
		from Source
	}{{node, FromNode}, {"", FromFleet}} {
		v, err := s.StoredPolicy(ctx, src.node)
		if errors.Is(err, ErrNoPolicy) {
			continue
		}
		return v.Policy, src.from, err
	}
	return cache.Policy{}, "", ErrNoPolicy
}

// StoredPolicy reads the fleet's policy (node "") or a node's override as etcd holds
// it, with the revision to give SetPolicy (ErrNoPolicy when there is none).
func (s *Store) StoredPolicy(ctx context.Context, node string) (Versioned, error) {
	var d policyDoc
	rev, err := s.get(ctx, s.policyKey(node), &d)
	if err != nil {
		return Versioned{}, err
	}
	if rev == 0 {
		return Versioned{}, ErrNoPolicy
	}
	p := d.Policy()
	if err := p.Validate(); err != nil {
		return Versioned{}, fmt.Errorf("cluster: the policy at %s is invalid (fix it with ctl cache set): %w", s.policyKey(node), err)
	}
	return Versioned{Policy: p, Revision: rev}, nil
}

// SetPolicy validates a policy and writes it for the fleet (node "") or a node, if the
// key is still at revision rev (AnyRevision: whatever it is; NoRevision: absent). It
// returns the new revision; on a failed validation nothing is written.
func (s *Store) SetPolicy(ctx context.Context, node string, p cache.Policy, rev int64) (int64, error) {
	if node != "" {
		if err := checkNode(node); err != nil {
			return 0, err
		}
	}
	if err := p.Validate(); err != nil {
		return 0, fmt.Errorf("cluster: %w", err)
	}
	d := policyDoc{Schema: Schema, FlatPolicy: p.Flat()}
	return s.put(ctx, s.policyKey(node), d, rev)
}

// Versioned is a policy with the etcd revision of its key (0: no key).
type Versioned struct {
	Policy   cache.Policy `json:"policy"`
	Revision int64        `json:"revision"`
}

// Overrides are every node's override, by node.
func (s *Store) Overrides(ctx context.Context) (map[string]Versioned, error) {
	prefix := s.policyKey("") + "/nodes/"
	resp, err := s.cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cluster: read the nodes' policies (is etcd reachable?): %w", err)
	}
	out := map[string]Versioned{}
	for _, kv := range resp.Kvs {
		var d policyDoc
		if err := decode(kv.Value, &d, string(kv.Key)); err != nil {
			return nil, err
		}
		out[strings.TrimPrefix(string(kv.Key), prefix)] = Versioned{Policy: d.Policy(), Revision: kv.ModRevision}
	}
	return out, nil
}

// Revision is etcd's current revision: what a write would move.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	resp, err := s.cli.Get(ctx, s.prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("cluster: read etcd's revision (is etcd reachable?): %w", err)
	}
	return resp.Header.Revision, nil
}

// DeletePolicy removes the fleet's policy (node "") or a node's override if its key is
// still at revision rev (AnyRevision: whatever it is): the next in precedence applies.
// Removing an absent key is not an error.
func (s *Store) DeletePolicy(ctx context.Context, node string, rev int64) error {
	if node != "" {
		if err := checkNode(node); err != nil {
			return err
		}
	}
	key := s.policyKey(node)
	txn := s.cli.Txn(ctx)
	if rev != AnyRevision {
		txn = txn.If(clientv3.Compare(clientv3.ModRevision(key), "=", rev))
	}
	resp, err := txn.Then(clientv3.OpDelete(key)).Commit()
	if err != nil {
		return fmt.Errorf("cluster: delete %s (is etcd reachable?): %w", key, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w (%s)", ErrConflict, key)
	}
	return nil
}

// epochDoc is the flush epoch as stored.
type epochDoc struct {
	Schema int    `json:"schema"`
	Epoch  uint32 `json:"epoch"`
}

// Epoch is the fleet's flush epoch (0 before the first flush) and its revision.
func (s *Store) Epoch(ctx context.Context) (uint32, int64, error) {
	var d epochDoc
	rev, err := s.get(ctx, s.prefix+"epoch", &d)
	return d.Epoch, rev, err
}

// Flush bumps the fleet's epoch by one, with compare-and-swap (retried when another
// flush won the race), and returns the new epoch: every node's cached entries of the
// old epoch are stale once it applies it.
func (s *Store) Flush(ctx context.Context) (uint32, error) { return s.bump(ctx, s.prefix+"epoch") }

func (s *Store) nodeEpochKey(node string) string { return s.prefix + "epoch/nodes/" + node }

// FlushNode bumps one node's own epoch (its dataplane runs at the fleet's epoch plus
// its own): a flush of that node alone.
func (s *Store) FlushNode(ctx context.Context, node string) (uint32, error) {
	if err := checkNode(node); err != nil {
		return 0, err
	}
	return s.bump(ctx, s.nodeEpochKey(node))
}

// NodeEpoch is a node's own epoch (0 before its first flush) and its revision.
func (s *Store) NodeEpoch(ctx context.Context, node string) (uint32, int64, error) {
	if err := checkNode(node); err != nil {
		return 0, 0, err
	}
	var d epochDoc
	rev, err := s.get(ctx, s.nodeEpochKey(node), &d)
	return d.Epoch, rev, err
}

// drainDoc is a node's drain as stored: present while it is drained.
type drainDoc struct {
	Schema int       `json:"schema"`
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
}

func (s *Store) drainKey(node string) string { return s.prefix + "drain/nodes/" + node }

// Drain takes a node out of service (drained) or puts it back: the node announces
// its routes with GRACEFUL_SHUTDOWN and lower preference while the key exists.
// It stays drained across restarts until undrained.
func (s *Store) Drain(ctx context.Context, node string, drained bool, reason string) error {
	if err := checkNode(node); err != nil {
		return err
	}
	if !drained {
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := s.cli.Delete(tctx, s.drainKey(node)); err != nil {
			return fmt.Errorf("cluster: undrain %s: %w", node, err)
		}
		return nil
	}
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := s.put(tctx, s.drainKey(node), drainDoc{Schema: Schema, Reason: reason, Since: time.Now().UTC()}, AnyRevision)
	return err
}

// Drained lists the drained nodes with the reason given.
func (s *Store) Drained(ctx context.Context) (map[string]string, error) {
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := s.cli.Get(tctx, s.prefix+"drain/nodes/", clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cluster: read the drained nodes: %w", err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		var d drainDoc
		if err := decode(kv.Value, &d, string(kv.Key)); err != nil {
			return nil, err
		}
		out[strings.TrimPrefix(string(kv.Key), s.prefix+"drain/nodes/")] = d.Reason
	}
	return out, nil
}

// bump increments an epoch key with compare-and-swap, retried on conflict.
func (s *Store) bump(ctx context.Context, key string) (uint32, error) {
	for {
		var d epochDoc
		rev, err := s.get(ctx, key, &d)
		if err != nil {
			return 0, err
		}
		_, err = s.put(ctx, key, epochDoc{Schema: Schema, Epoch: d.Epoch + 1}, rev)
		if errors.Is(err, ErrConflict) {
			continue
		}
		return d.Epoch + 1, err
	}
}

// NodeInfo is what a node registers: who it is and where to reach it.
type NodeInfo struct {
	Schema     int    `json:"schema"`
	Name       string `json:"name"`
	BGPAddress string `json:"bgp_address,omitempty"`
	ASN        uint32 `json:"asn,omitempty"`
	APIAddress string `json:"api_address,omitempty"`
	// GossipAddress is where its memberlist listens (host:port): a node starting
	// joins the fleet through the registered ones.
	GossipAddress string `json:"gossip_address,omitempty"`
	Version       string `json:"version,omitempty"`
}

// Registration is a node's key under a lease kept alive until Close. A process that
// dies stops the keep-alive and its key goes when the lease expires; a lease lost while
// the node lives (etcd away for longer than the ttl) is granted again and the key put
// back, by the registration itself, as soon as etcd answers.
type Registration struct {
	store *Store
	info  []byte
	key   string
	ttl   time.Duration
	log   *slog.Logger

	kctx   context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	lease  clientv3.LeaseID
	ka     <-chan *clientv3.LeaseKeepAliveResponse
	// registered is false from a lease's loss until the key is back.
	registered bool
}

// Register puts the node under /nodes/<name> with a lease of ttl, kept alive in the
// background: the registered nodes are the fleet a flush waits for. The first
// registration happens before it returns (an error says etcd did not take it).
func (s *Store) Register(ctx context.Context, n NodeInfo, ttl time.Duration, log *slog.Logger) (*Registration, error) {
	if err := checkNode(n.Name); err != nil {
		return nil, err
	}
	if ttl < time.Second {
		return nil, fmt.Errorf("cluster: lease ttl %s: use at least 1s", ttl)
	}
	if log == nil {
		log = slog.Default()
	}
	n.Schema = Schema
	b, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	kctx, cancel := context.WithCancel(context.Background())
	r := &Registration{store: s, info: b, key: s.prefix + "nodes/" + n.Name, ttl: ttl, log: log, kctx: kctx, cancel: cancel}
	if err := r.register(ctx); err != nil {
		cancel()
		return nil, err
	}
	go r.keep()
	return r, nil
}

// register grants a lease, puts the key under it and starts its keep-alive.
func (r *Registration) register(ctx context.Context) error {
	cli := r.store.cli
	l, err := cli.Grant(ctx, int64(r.ttl/time.Second))
	if err != nil {
		return fmt.Errorf("cluster: grant a lease (is etcd reachable?): %w", err)
	}
	if _, err := cli.Put(ctx, r.key, string(r.info), clientv3.WithLease(l.ID)); err != nil {
		return fmt.Errorf("cluster: register %s: %w", r.key, err)
	}
	ka, err := cli.KeepAlive(r.kctx, l.ID)
	if err != nil {
		return fmt.Errorf("cluster: keep the lease of %s alive: %w", r.key, err)
	}
	r.mu.Lock()
	r.lease, r.ka, r.registered = l.ID, ka, true
	r.mu.Unlock()
	return nil
}

// keep drains keep-alive responses; when the channel closes without Close (the lease
// expired or was revoked) it registers again, retrying every second.
func (r *Registration) keep() {
	for {
		r.mu.Lock()
		ka := r.ka
		r.mu.Unlock()
		for range ka {
		}
		if r.kctx.Err() != nil {
			return
		}
		r.mu.Lock()
		r.registered = false
		r.mu.Unlock()
		r.log.Warn("etcd lease lost (etcd away for longer than the lease ttl?): registering again", "key", r.key)
		for {
			ctx, cancel := context.WithTimeout(r.kctx, 5*time.Second)
			err := r.register(ctx)
			cancel()
			if err == nil {
				r.log.Info("registered in etcd again", "key", r.key)
				break
			}
			select {
			case <-r.kctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// Registered says whether the node's key is under a live lease, as far as this
// process knows.
func (r *Registration) Registered() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.registered
}

// Close stops the keep-alive and revokes the lease: the node leaves at once.
func (r *Registration) Close(ctx context.Context) error {
	r.cancel()
	r.mu.Lock()
	lease := r.lease
	r.mu.Unlock()
	if _, err := r.store.cli.Revoke(ctx, lease); err != nil {
		return fmt.Errorf("cluster: revoke the node's lease: %w", err)
	}
	return nil
}

// Nodes are the nodes registered under live leases.
func (s *Store) Nodes(ctx context.Context) ([]NodeInfo, error) {
	resp, err := s.cli.Get(ctx, s.prefix+"nodes/", clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cluster: list the registered nodes (is etcd reachable?): %w", err)
	}
	var out []NodeInfo
	for _, kv := range resp.Kvs {
		var n NodeInfo
		if err := decode(kv.Value, &n, string(kv.Key)); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// get decodes a key's value into v and returns its revision (0: absent, v untouched).
func (s *Store) get(ctx context.Context, key string, v any) (int64, error) {
	resp, err := s.cli.Get(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("cluster: read %s (is etcd reachable?): %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	kv := resp.Kvs[0]
	return kv.ModRevision, decode(kv.Value, v, key)
}

// decode reads a JSON value of this schema.
func decode(b []byte, v any, key string) error {
	var head struct {
		Schema int `json:"schema"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("cluster: %s is not JSON: %w", key, err)
	}
	if head.Schema != Schema {
		return fmt.Errorf("cluster: %s has schema %d, this version reads %d: upgrade the node or rewrite the key", key, head.Schema, Schema)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("cluster: decode %s: %w", key, err)
	}
	return nil
}

// put writes v as JSON if the key's revision is rev (AnyRevision: unconditionally).
func (s *Store) put(ctx context.Context, key string, v any, rev int64) (int64, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	op := clientv3.OpPut(key, string(b))
	if rev == AnyRevision {
		resp, err := s.cli.Put(ctx, key, string(b))
		if err != nil {
			return 0, fmt.Errorf("cluster: write %s (is etcd reachable?): %w", key, err)
		}
		return resp.Header.Revision, nil
	}
	resp, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).Then(op).Commit()
	if err != nil {
		return 0, fmt.Errorf("cluster: write %s (is etcd reachable?): %w", key, err)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("%w (%s)", ErrConflict, key)
	}
	return resp.Header.Revision, nil
}

func checkNode(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("cluster: node name %q: use letters, digits, '.', '_' or '-' (at most 63)", name)
	}
	return nil
}

// Applied is what a node reports it applied: the epoch, the cache policy (and where
// it came from, and the etcd revision of its key), the cache's geometry in force, its
// FIB's digests and sizes per family, its version.
type Applied struct {
	Schema int    `json:"schema"`
	Node   string `json:"node"`
	Epoch  uint32 `json:"epoch"`
	// NodeEpoch is the node's own epoch applied (ctl cache flush --node).
	NodeEpoch    uint32 `json:"node_epoch"`
	PolicySource string `json:"policy_source"` // node, fleet or config
	// PolicyRevision is the etcd revision of the policy key applied (0: the config's).
	PolicyRevision int64 `json:"policy_revision"`
	// Drained: the node announces with GRACEFUL_SHUTDOWN (ctl drain).
	Drained bool `json:"drained,omitempty"`
	// Blackholes is how many of the fleet's blackholes the node applies;
	// BlackholeRevision the etcd revision of the last change to them it applied
	// (a blackhole written at or before it is applied, or expired).
	Blackholes        int     `json:"blackholes,omitempty"`
	BlackholeRevision int64   `json:"blackhole_revision,omitempty"`
	Mode              string  `json:"mode"`
	FixedEntries      [2]int  `json:"fixed_entries,omitempty"`
	MinEntries        int     `json:"min_entries,omitempty"`
	MaxEntries        int     `json:"max_entries,omitempty"`
	TargetHitRate     float64 `json:"target_hit_rate,omitempty"`
	// Entries is the cache's size in force per family (IPv4, IPv6; 0: off).
	Entries [2]int    `json:"entries"`
	Digests [2]string `json:"digests"`
	// Prefixes are digests of the prefixes alone: equal on nodes that hold the same
	// routes, whichever next hops each selected.
	Prefixes [2]string `json:"prefixes"`
	Routes   [2]int    `json:"routes"`
	Version  string    `json:"version"`
	At       time.Time `json:"at"`
}

// SetPolicy fills the policy fields from p.
func (a *Applied) SetPolicy(p cache.Policy, src Source, rev int64) {
	a.PolicySource, a.PolicyRevision, a.Mode = string(src), rev, string(p.Mode)
	a.FixedEntries, a.MinEntries, a.MaxEntries, a.TargetHitRate = p.Entries, p.MinEntries, p.MaxEntries, p.TargetHitRate
}

// Policy is the policy the node applied.
func (a Applied) Policy() cache.Policy {
	return cache.Policy{Mode: cache.Mode(a.Mode), Entries: a.FixedEntries, MinEntries: a.MinEntries, MaxEntries: a.MaxEntries, TargetHitRate: a.TargetHitRate}
}

// ReportApplied writes a node's applied state (last writer wins: only the node writes
// its own).
func (s *Store) ReportApplied(ctx context.Context, a Applied) error {
	if err := checkNode(a.Node); err != nil {
		return err
	}
	a.Schema = Schema
	_, err := s.put(ctx, s.prefix+"applied/"+a.Node, a, AnyRevision)
	return err
}

// AppliedStates are every node's last report, by node.
func (s *Store) AppliedStates(ctx context.Context) (map[string]Applied, error) {
	resp, err := s.cli.Get(ctx, s.prefix+"applied/", clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cluster: read the applied states (is etcd reachable?): %w", err)
	}
	out := map[string]Applied{}
	for _, kv := range resp.Kvs {
		var a Applied
		if err := decode(kv.Value, &a, string(kv.Key)); err != nil {
			return nil, err
		}
		out[a.Node] = a
	}
	return out, nil
}

// Ack is one node's acknowledgement of an epoch, After the wait started.
type Ack struct {
	Node  string
	After time.Duration
}

// WaitApplied waits until every node in nodes reports an epoch of at least epoch, or
// ctx ends. It returns who acknowledged (in order of arrival, with the time since the
// call) and who did not; it fails only when etcd cannot be read.
//
// The watch opens before the read: a watch from a past revision is served by etcd's
// catch-up loop (100 ms ticks), one from now is pushed at once; a report in between
// is in the read.
func (s *Store) WaitApplied(ctx context.Context, epoch uint32, nodes []string) ([]Ack, []string, error) {
	return s.WaitAppliedFunc(ctx, nodes, func(a Applied) bool { return a.Epoch >= epoch })
}

// WaitAppliedFunc is WaitApplied for any condition on the nodes' reports (a node's
// own epoch, a policy's revision).
func (s *Store) WaitAppliedFunc(ctx context.Context, nodes []string, done func(Applied) bool) ([]Ack, []string, error) {
	start := time.Now()
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	ch := s.cli.Watch(wctx, s.prefix+"applied/", clientv3.WithPrefix())
	waiting := map[string]bool{}
	for _, n := range nodes {
		waiting[n] = true
	}
	var acks []Ack
	see := func(a Applied) {
		if waiting[a.Node] && done(a) {
			delete(waiting, a.Node)
			acks = append(acks, Ack{Node: a.Node, After: time.Since(start)})
		}
	}
	states, err := s.AppliedStates(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, a := range states {
		see(a)
	}
	for len(waiting) > 0 {
		select {
		case <-ctx.Done():
			return acks, missing(waiting), nil
		case resp, ok := <-ch:
			if !ok {
				return acks, missing(waiting), ctx.Err()
			}
			if err := resp.Err(); err != nil {
				return acks, missing(waiting), fmt.Errorf("cluster: watch the applied states: %w", err)
			}
			for _, ev := range resp.Events {
				var a Applied
				if ev.Type == clientv3.EventTypePut && decode(ev.Kv.Value, &a, string(ev.Kv.Key)) == nil {
					see(a)
				}
			}
		}
	}
	return acks, nil, nil
}

func missing(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
