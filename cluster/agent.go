package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/fibfleet/fibfleet/cache"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// FromConfig says the node applies its config file's policy: etcd holds none for it.
const FromConfig Source = "config"

// Applier is what an Agent drives on its node.
type Applier interface {
	// ApplyEpoch makes the dataplane's cache entries of other epochs stale.
	ApplyEpoch(epoch uint32) error
	// ApplyPolicy sizes the cache by a (validated) policy.
	ApplyPolicy(p cache.Policy) error
	// Report fills in what only the node knows: cache geometry, FIB digests and
	// route counts, version.
	Report(a *Applied)
}

// Drainer takes the node out of service and back (ctl drain, ctl undrain).
type Drainer interface {
	ApplyDrain(drained bool) error
}

// AgentConfig configures a node's agent.
type AgentConfig struct {
	Store *Store
	Node  string
	// Default is the config file's policy: in force while etcd holds none.
	Default cache.Policy
	// DefaultApplied says the node applied Default itself before etcd answered (as
	// a node must: it forwards, with its config's cache, while etcd is away); else
	// Run applies it first.
	DefaultApplied bool
	Applier        Applier
	// Drainer, when set, follows the node's drain key; nil: drains are not applied.
	Drainer Drainer
	// Blackholer, when set, follows the fleet's blackholes (ctl blackhole); nil:
	// they are not applied.
	Blackholer Blackholer
	Logger     *slog.Logger
	// ReportEvery is how often the applied state is written again when it changed
	// (cache geometry, digests, routes; default 5 s). Epochs and policies are
	// reported as soon as they are applied.
	ReportEvery time.Duration
	// CheckEvery is how often etcd is asked whether it answers (default 5 s): a
	// watch waits silently while etcd is away.
	CheckEvery time.Duration
}

// AgentStatus is what the agent applied and whether etcd answers.
type AgentStatus struct {
	Connected bool   `json:"connected"`
	LastError string `json:"last_error,omitempty"`
	Epoch     uint32 `json:"epoch"`
	// NodeEpoch is the node's own epoch (flushes of this node alone); the
	// dataplane runs at Epoch + NodeEpoch.
	NodeEpoch      uint32       `json:"node_epoch"`
	Policy         cache.Policy `json:"policy"`
	PolicySource   Source       `json:"policy_source"`
	PolicyRevision int64        `json:"policy_revision"`
	// Flushes counts epochs applied after the first; Resyncs, full reads of etcd.
	Flushes uint64 `json:"flushes"`
	Resyncs uint64 `json:"resyncs"`
	// Drained: the node's drain key is set and applied.
	Drained bool `json:"drained,omitempty"`
	// Blackholes are the fleet's blackholes in force, applied; BlackholeRevision
	// the etcd revision of the last change to them the node has applied.
	Blackholes        []netip.Prefix `json:"blackholes,omitempty"`
	BlackholeRevision int64          `json:"blackhole_revision,omitempty"`
}

// Agent keeps a node in step with the fleet's keys: it reads the epoch and the
// policies (the node's override, the fleet's) at one revision, applies what differs
// from what the node has, reports, then follows changes from that revision. A flush
// goes from the watch event straight to the dataplane. While etcd is away the node
// keeps what it applied; when etcd answers again the agent reads everything again
// and applies only what changed, so a restart of etcd is not a flush.
type Agent struct {
	cfg AgentConfig
	log *slog.Logger

	applyMu  sync.Mutex
	mu       sync.Mutex
	status   AgentStatus
	applied  bool // an epoch has been applied (the first is not a flush)
	fleet    *Versioned
	override *Versioned
	reported Applied
	bh       blackholeState
}

// NewAgent returns an agent; Run starts it.
func NewAgent(cfg AgentConfig) (*Agent, error) {
	if cfg.Store == nil || cfg.Applier == nil {
		return nil, errors.New("cluster: an agent needs a store and an applier")
	}
	if err := checkNode(cfg.Node); err != nil {
		return nil, err
	}
	if err := cfg.Default.Validate(); err != nil {
		return nil, fmt.Errorf("cluster: the config file's cache policy: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ReportEvery == 0 {
		cfg.ReportEvery = 5 * time.Second
	}
	if cfg.CheckEvery == 0 {
		cfg.CheckEvery = 5 * time.Second
	}
	a := &Agent{cfg: cfg, log: cfg.Logger}
	a.status.Policy, a.status.PolicySource = cfg.Default, FromConfig
	return a, nil
}

// Status is what the agent applied, and whether etcd answers.
func (a *Agent) Status() AgentStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}

// Run applies the config's policy (unless the node did), then follows etcd until ctx
// ends.
func (a *Agent) Run(ctx context.Context) {
	if !a.cfg.DefaultApplied {
		if err := a.cfg.Applier.ApplyPolicy(a.cfg.Default); err != nil {
			a.log.Error("apply the config file's cache policy", "err", err)
		}
	}
	for ctx.Err() == nil {
		rev, err := a.sync(ctx)
		if err == nil {
			err = a.follow(ctx, rev)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			a.disconnected(err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

func (a *Agent) disconnected(err error) {
	a.mu.Lock()
	was := a.status.Connected
	a.status.Connected, a.status.LastError = false, err.Error()
	a.mu.Unlock()
	if was {
		a.log.Warn("etcd does not answer: keeping the last epoch and cache policy applied, forwarding as before", "err", err)
	}
}

func (a *Agent) keys() (epoch, fleet, node string) {
	s := a.cfg.Store
	return s.prefix + "epoch", s.policyKey(""), s.policyKey(a.cfg.Node)
}

func (a *Agent) nodeEpochKey() string { return a.cfg.Store.nodeEpochKey(a.cfg.Node) }

// sync reads the epoch and both policies at one revision, applies what differs and
// reports; it returns the revision read.
func (a *Agent) sync(ctx context.Context) (int64, error) {
	ek, fk, nk := a.keys()
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	nek, dk := a.nodeEpochKey(), a.cfg.Store.drainKey(a.cfg.Node)
	resp, err := a.cfg.Store.cli.Txn(tctx).Then(clientv3.OpGet(ek), clientv3.OpGet(fk), clientv3.OpGet(nk), clientv3.OpGet(nek), clientv3.OpGet(dk),
		clientv3.OpGet(a.cfg.Store.blackholePrefix(), clientv3.WithPrefix())).Commit()
	if err != nil {
		return 0, fmt.Errorf("cluster: read the fleet's epoch and policies: %w", err)
	}
	var epoch, own epochDoc
	var fleet, node *Versioned
	drained := false
	for i, r := range resp.Responses {
		kvs := r.GetResponseRange().Kvs
		if i == 5 {
			a.readBlackholes(kvs, resp.Header.Revision)
			continue
		}
		if len(kvs) == 0 {
			continue
		}
		if i == 4 {
			drained = true
			continue
		}
		switch i {
		case 0:
			if err := decode(kvs[0].Value, &epoch, ek); err != nil {
				a.log.Error("the fleet's epoch key is unreadable: ignored", "err", err)
			}
		case 1:
			fleet = a.decodePolicy(kvs[0].Value, kvs[0].ModRevision, fk)
		case 2:
			node = a.decodePolicy(kvs[0].Value, kvs[0].ModRevision, nk)
		case 3:
			if err := decode(kvs[0].Value, &own, nek); err != nil {
				a.log.Error("the node's epoch key is unreadable: ignored", "err", err)
			}
		}
	}
	a.mu.Lock()
	was := a.status.Connected
	a.status.Connected, a.status.LastError = true, ""
	a.status.Resyncs++
	a.fleet, a.override = fleet, node
	a.mu.Unlock()
	if !was {
		a.log.Info("etcd answers: following the fleet's epoch and cache policy", "revision", resp.Header.Revision)
	}
	a.applyEpoch(epoch.Epoch, own.Epoch)
	a.applyPolicy()
	a.applyDrain(drained)
	a.applyBlackholes()
	a.report(ctx, true)
	return resp.Header.Revision, nil
}

// decodePolicy reads a policy value; an invalid one is logged and left out (the
// next in precedence applies), since a node cannot fix it.
func (a *Agent) decodePolicy(b []byte, rev int64, key string) *Versioned {
	var d policyDoc
	if err := decode(b, &d, key); err != nil {
		a.log.Error("a cache policy in etcd is unreadable: ignored (fix it with ctl cache set)", "key", key, "err", err)
		return nil
	}
	p := d.Policy()
	if err := p.Validate(); err != nil {
		a.log.Error("a cache policy in etcd is invalid: ignored (fix it with ctl cache set)", "key", key, "err", err)
		return nil
	}
	return &Versioned{Policy: p, Revision: rev}
}

// follow applies changes of the epoch and the policies after revision rev, until the
// watch fails, etcd comes back after being away (then everything is read again), or
// ctx ends.
func (a *Agent) follow(ctx context.Context, rev int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	ek, fk, nk := a.keys()
	cli := a.cfg.Store.cli
	nek := a.nodeEpochKey()
	// The fleet's epoch and every node's own (this node's is picked out below).
	epochs := cli.Watch(wctx, ek, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	policies := cli.Watch(wctx, fk, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	dk := a.cfg.Store.drainKey(a.cfg.Node)
	drains := cli.Watch(wctx, dk, clientv3.WithRev(rev+1))
	blackholes := cli.Watch(wctx, a.cfg.Store.blackholePrefix(), clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	// expiry fires when the next blackhole's --until comes (never, while none has one).
	expiry := time.NewTimer(time.Hour)
	defer expiry.Stop()
	reapply := func() {
		expiry.Stop()
		if next := a.applyBlackholes(); !next.IsZero() {
			expiry.Reset(time.Until(next))
		}
	}
	reapply()
	check := time.NewTicker(a.cfg.CheckEvery)
	defer check.Stop()
	report := time.NewTicker(a.cfg.ReportEvery)
	defer report.Stop()
	away := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-check.C:
			if err := a.cfg.Store.Ping(ctx); err != nil {
				a.disconnected(err)
				away = true
			} else if away {
				return nil // back: read everything again
			} else {
				reapply() // retries a set the node failed to apply
			}
		case <-expiry.C:
			reapply()
			a.report(ctx, true)
		case resp, ok := <-blackholes:
			if !ok || resp.Err() != nil {
				return watchErr(resp, ok)
			}
			a.blackholeEvents(resp)
			reapply()
			a.report(ctx, true)
		case <-report.C:
			if !away {
				a.report(ctx, false)
			}
		case resp, ok := <-epochs:
			if !ok || resp.Err() != nil {
				return watchErr(resp, ok)
			}
			changed := false
			for _, ev := range resp.Events {
				k := string(ev.Kv.Key)
				if k != ek && k != nek {
					continue // another node's epoch
				}
				var d epochDoc
				if ev.Type == clientv3.EventTypePut {
					if err := decode(ev.Kv.Value, &d, k); err != nil {
						a.log.Error("an epoch key is unreadable: ignored", "key", k, "err", err)
						continue
					}
				}
				a.mu.Lock()
				fleet, own := a.status.Epoch, a.status.NodeEpoch
				a.mu.Unlock()
				if k == ek {
					fleet = d.Epoch
				} else {
					own = d.Epoch
				}
				a.applyEpoch(fleet, own)
				changed = true
			}
			if changed {
				a.report(ctx, true)
			}
		case resp, ok := <-drains:
			if !ok || resp.Err() != nil {
				return watchErr(resp, ok)
			}
			if n := len(resp.Events); n > 0 {
				a.applyDrain(resp.Events[n-1].Type == clientv3.EventTypePut)
				a.report(ctx, true)
			}
		case resp, ok := <-policies:
			if !ok || resp.Err() != nil {
				return watchErr(resp, ok)
			}
			changed := false
			for _, ev := range resp.Events {
				k := string(ev.Kv.Key)
				if k != fk && k != nk {
					continue // another node's override
				}
				var v *Versioned
				if ev.Type == clientv3.EventTypePut {
					v = a.decodePolicy(ev.Kv.Value, ev.Kv.ModRevision, k)
				}
				a.mu.Lock()
				if k == fk {
					a.fleet = v
				} else {
					a.override = v
				}
				a.mu.Unlock()
				changed = true
			}
			if changed {
				a.applyPolicy()
				a.report(ctx, true)
			}
		}
	}
}

func watchErr(resp clientv3.WatchResponse, ok bool) error {
	if !ok {
		return errors.New("cluster: the watch of the fleet's keys closed")
	}
	return fmt.Errorf("cluster: the watch of the fleet's keys failed: %w", resp.Err())
}

// applyEpoch sets the dataplane's epoch to the fleet's plus the node's own when either
// differs from the one applied: a change of either is a flush.
func (a *Agent) applyEpoch(fleet, own uint32) {
	a.mu.Lock()
	same := a.applied && a.status.Epoch == fleet && a.status.NodeEpoch == own
	first := !a.applied
	a.mu.Unlock()
	if same {
		return
	}
	if err := a.cfg.Applier.ApplyEpoch(fleet + own); err != nil {
		a.log.Error("apply the flush epoch to the dataplane", "epoch", fleet, "node_epoch", own, "err", err)
		return
	}
	a.mu.Lock()
	a.status.Epoch, a.status.NodeEpoch, a.applied = fleet, own, true
	if !first {
		a.status.Flushes++
	}
	a.mu.Unlock()
	if first {
		a.log.Info("fleet epoch applied", "epoch", fleet, "node_epoch", own)
	} else {
		a.log.Info("fleet flush applied: cached destinations of earlier epochs are stale", "epoch", fleet, "node_epoch", own)
	}
}

// applyDrain drains the node or puts it back when that differs from what is
// applied; without a Drainer it does nothing.
func (a *Agent) applyDrain(drained bool) {
	if a.cfg.Drainer == nil {
		return
	}
	a.mu.Lock()
	same := a.status.Drained == drained
	a.mu.Unlock()
	if same {
		return
	}
	if err := a.cfg.Drainer.ApplyDrain(drained); err != nil {
		a.log.Error("apply the node's drain", "drained", drained, "err", err)
		return
	}
	a.mu.Lock()
	a.status.Drained = drained
	a.mu.Unlock()
	a.log.Info("drain applied", "drained", drained)
}

// SetDefault replaces the config file's policy (the node's configuration was
// reloaded): applied at once unless etcd holds the fleet's or the node's, and
// reported.
func (a *Agent) SetDefault(ctx context.Context, p cache.Policy) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	a.mu.Lock()
	a.cfg.Default = p
	a.mu.Unlock()
	a.applyPolicy()
	a.report(ctx, true)
	return nil
}

// applyPolicy applies the policy in force (override, fleet, config) when it differs
// from the one applied. One at a time: the agent's loop and a reload both call it.
func (a *Agent) applyPolicy() {
	a.applyMu.Lock()
	defer a.applyMu.Unlock()
	a.mu.Lock()
	p, src, rev := a.cfg.Default, FromConfig, int64(0)
	if a.override != nil {
		p, src, rev = a.override.Policy, FromNode, a.override.Revision
	} else if a.fleet != nil {
		p, src, rev = a.fleet.Policy, FromFleet, a.fleet.Revision
	}
	same := p == a.status.Policy
	a.status.PolicySource, a.status.PolicyRevision = src, rev
	a.mu.Unlock()
	if same {
		return
	}
	if err := a.cfg.Applier.ApplyPolicy(p); err != nil {
		a.log.Error("apply the fleet's cache policy", "source", src, "revision", rev, "err", err)
		a.mu.Lock()
		a.status.LastError = err.Error()
		a.mu.Unlock()
		return
	}
	a.mu.Lock()
	a.status.Policy = p
	a.mu.Unlock()
	a.log.Info("cache policy from "+string(src)+" applied", "mode", p.Mode, "revision", rev)
}

// report writes the applied state: always when now is set (something was applied),
// else only when it changed.
func (a *Agent) report(ctx context.Context, now bool) {
	a.mu.Lock()
	st := Applied{Node: a.cfg.Node, Epoch: a.status.Epoch, NodeEpoch: a.status.NodeEpoch, Drained: a.status.Drained,
		Blackholes: len(a.status.Blackholes), BlackholeRevision: a.status.BlackholeRevision}
	st.SetPolicy(a.status.Policy, a.status.PolicySource, a.status.PolicyRevision)
	last := a.reported
	a.mu.Unlock()
	a.cfg.Applier.Report(&st)
	last.At = time.Time{}
	if !now && st == last {
		return
	}
	cmp := st
	st.At = time.Now().UTC()
	tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := a.cfg.Store.ReportApplied(tctx, st); err != nil {
		a.log.Warn("report the applied state to etcd", "err", err)
		return
	}
	a.mu.Lock()
	a.reported = cmp
	a.mu.Unlock()
}
