package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fibfleet/fibfleet/bgp"
	"github.com/fibfleet/fibfleet/cache"
	"github.com/fibfleet/fibfleet/memory"
	"github.com/fsnotify/fsnotify"
)

// Live reconfiguration. On SIGHUP, and when a file under -config-dir or in the
// directory of a neighbour's password_file changes (a ConfigMap's or Secret's update
// swaps the directory's ..data symlink: the directories are watched, not the files),
// the node reads its whole configuration again. An invalid one is refused
// whole, every error listed, and the running configuration stays. A valid one is
// compared with the running one and the difference applied: neighbours added and
// removed; a neighbour whose session settings changed (AS, port, families, passive,
// multihop, TCP-MD5 password, GTSM) reset, one whose limits alone changed (max
// prefixes, its restart time, the expected dump) updated with its session up; the
// cache policy and the log level at once. What only a restart can change (interfaces,
// addresses, the dataplane's sizes, the fleet's settings) is refused, named, so that
// nothing is half applied.

// liveFields are the settings a reload applies without a restart, by their path in
// the file; every other one takes a restart.
var liveFields = map[string]bool{
	"log_level": true, "bgp.neighbors": true, "bgp.originate.hold_down": true, "bgp.originate.prefixes": true,
	"memory_limit": true, // read by the memory limit's update, every 5 s
	"cache.mode":   true, "cache.entries_v4": true, "cache.entries_v6": true, "cache.min_entries": true, "cache.max_entries": true, "cache.target_hit_rate": true,
}

// restartFields lists the settings, by path, that differ between two configurations
// and take a restart.
func restartFields(a, b Config) []string {
	var out []string
	var walk func(path string, x, y reflect.Value)
	walk = func(path string, x, y reflect.Value) {
		if x.Kind() != reflect.Struct {
			if !liveFields[path] && !reflect.DeepEqual(x.Interface(), y.Interface()) {
				out = append(out, path)
			}
			return
		}
		for i := 0; i < x.NumField(); i++ {
			f := x.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			p := path
			if opts != "inline" {
				p = strings.TrimPrefix(path+"."+name, ".")
			}
			walk(p, x.Field(i), y.Field(i))
		}
	}
	walk("", reflect.ValueOf(a), reflect.ValueOf(b))
	return out
}

// reloadPlan is what a reload changes.
type reloadPlan struct {
	// add and reset are started (reset after a removal), remove stopped; limits are
	// neighbours whose max_prefixes or expected_prefixes changed, imports those
	// whose import rules did (both live, the session kept).
	add, remove, reset, limits, imports []bgp.Neighbor
	// exports are neighbours whose export changed (live: a soft reset out).
	exports []bgp.Neighbor
	// originate is the new bgp.originate, when it changed.
	originate *OriginateConfig
	cache     *cache.Policy
	logLevel  string
}

func (p reloadPlan) empty() bool {
	return len(p.add)+len(p.remove)+len(p.reset)+len(p.limits)+len(p.imports)+len(p.exports) == 0 && p.originate == nil && p.cache == nil && p.logLevel == ""
}

// sessionChanged says whether a neighbour's session must start again for a change.
func sessionChanged(a, b bgp.Neighbor) bool {
	fams := func(n bgp.Neighbor) []bgp.Family {
		if len(n.Families) == 0 {
			return []bgp.Family{bgp.IPv4Unicast}
		}
		f := slices.Clone(n.Families)
		slices.Sort(f)
		return f
	}
	return a.ASN != b.ASN || a.Port != b.Port || a.Passive != b.Passive || a.MultihopTTL != b.MultihopTTL || !slices.Equal(fams(a), fams(b)) ||
		a.Password != b.Password || a.TTLSecurity != b.TTLSecurity
}

// planReload compares the running configuration with a new valid one: the plan, or
// an error naming every change that takes a restart.
func planReload(old, cur Config) (reloadPlan, error) {
	var p reloadPlan
	var errs []error
	for _, f := range restartFields(old, cur) {
		errs = append(errs, fmt.Errorf("%s changed: that takes a restart of the node", f))
	}
	if len(errs) > 0 {
		return p, errors.Join(errs...)
	}
	ob, _ := old.bgpConfig() // both validated
	nb, _ := cur.bgpConfig()
	was := map[netip.Addr]bgp.Neighbor{}
	for _, n := range ob.Neighbors {
		was[n.Address] = n
	}
	for _, n := range nb.Neighbors {
		o, ok := was[n.Address]
		delete(was, n.Address)
		switch {
		case !ok:
			p.add = append(p.add, n)
		case sessionChanged(o, n):
			p.reset = append(p.reset, n)
		default:
			if o.MaxPrefixes != n.MaxPrefixes || o.ExpectedPrefixes != n.ExpectedPrefixes || o.MaxPrefixRestart != n.MaxPrefixRestart {
				p.limits = append(p.limits, n)
			}
			if !reflect.DeepEqual(o.Import, n.Import) || !reflect.DeepEqual(o.ImportActions, n.ImportActions) {
				p.imports = append(p.imports, n)
			}
			if !reflect.DeepEqual(o.Export, n.Export) {
				p.exports = append(p.exports, n)
			}
		}
	}
	for _, n := range ob.Neighbors {
		if _, gone := was[n.Address]; gone {
			p.remove = append(p.remove, n)
		}
	}
	if !reflect.DeepEqual(old.BGP.Originate, cur.BGP.Originate) {
		o := cur.BGP.Originate
		p.originate = &o
	}
	if np := cur.Cache.Policy(); np != old.Cache.Policy() {
		p.cache = &np
	}
	if cur.LogLevel != old.LogLevel {
		p.logLevel = cur.LogLevel
	}
	return p, nil
}

// neighbors is what a reload changes of the BGP speaker.
type neighbors interface {
	AddNeighbor(ctx context.Context, n bgp.Neighbor) error
	RemoveNeighbor(ctx context.Context, a netip.Addr) error
	SetLimits(a netip.Addr, maxPrefixes, expected uint32, restart time.Duration) error
	SetImport(ctx context.Context, a netip.Addr, r *bgp.ImportRules, act *bgp.ImportActions) error
	SetExport(ctx context.Context, a netip.Addr, e *bgp.Export) error
}

// origins is what a reload changes of the fleet's prefixes (the originator).
type origins interface {
	configure(ctx context.Context, c OriginateConfig) error
}

// Reload results, counted in fibfleet_config_reloads_total.
const (
	reloadApplied   = "applied"
	reloadRefused   = "refused"
	reloadUnchanged = "unchanged"
	// reloadFailed: valid, but part of it could not be applied (a neighbour GoBGP
	// refused); what was applied stays, the rest is tried at the next reload.
	reloadFailed = "failed"
)

// reloader re-reads and applies the configuration.
type reloader struct {
	args  []string
	log   *slog.Logger
	level *slog.LevelVar
	bgp   neighbors
	// cachePolicy applies the configuration's cache policy (in force while etcd
	// holds none).
	cachePolicy func(cache.Policy) error
	// origin applies bgp.originate (set before run).
	origin origins
	// bfd makes the BFD sessions those of the neighbours (set before run; nil: none).
	bfd func([]NeighborConfig) error
	// weights sets the neighbours' next-hop weights (set before run; nil: none).
	weights func(map[netip.Addr]int) error

	mu      sync.Mutex
	running Config
	counts  map[string]uint64
	last    reloadStatus
}

// reloadStatus is the last reload's outcome.
type reloadStatus struct {
	At     time.Time
	Result string
	Error  string
}

func newReloader(args []string, running Config, log *slog.Logger, level *slog.LevelVar, b neighbors, cachePolicy func(cache.Policy) error) *reloader {
	return &reloader{args: args, running: running, log: log.With("component", "config"), level: level, bgp: b, cachePolicy: cachePolicy,
		counts: map[string]uint64{reloadApplied: 0, reloadRefused: 0, reloadUnchanged: 0, reloadFailed: 0}}
}

// reload reads the configuration again and applies it (see above); it returns the
// result and the error that made it anything but applied or unchanged.
func (r *reloader) reload(ctx context.Context, why string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	result, err := r.reloadLocked(ctx)
	r.counts[result]++
	r.last = reloadStatus{At: time.Now(), Result: result}
	switch {
	case err != nil:
		r.last.Error = err.Error()
		r.log.Error("configuration "+result+"; the running configuration stays", "trigger", why, "files", r.running.files, "err", err)
	case result == reloadUnchanged:
		r.log.Debug("configuration read again: unchanged", "trigger", why)
	}
	return result, err
}

func (r *reloader) reloadLocked(ctx context.Context) (string, error) {
	cur, err := loadConfig(r.args)
	if err != nil {
		return reloadRefused, err
	}
	plan, err := planReload(r.running, cur)
	if err != nil {
		return reloadRefused, fmt.Errorf("refused whole:\n  %w", joinLines(unjoin(err)))
	}
	bfdChanged := !reflect.DeepEqual(bfdOf(r.running), bfdOf(cur))
	weightsChanged := !maps.Equal(weightsOf(r.running), weightsOf(cur))
	if plan.empty() && !bfdChanged && !weightsChanged {
		r.running = cur
		return reloadUnchanged, nil
	}
	// What is applied goes into running as it succeeds, so a failure is tried again
	// at the next reload and nothing applied is applied twice.
	running := map[netip.Addr]NeighborConfig{}
	for _, n := range r.running.BGP.Neighbors {
		running[netip.MustParseAddr(n.Address)] = n
	}
	want := map[netip.Addr]NeighborConfig{}
	for _, n := range cur.BGP.Neighbors {
		want[netip.MustParseAddr(n.Address)] = n
	}
	var errs []error
	// The fleet's prefixes first: an export may list one just added (a prefix
	// removed is withdrawn by the originator, and no export lists it any more).
	if plan.originate != nil {
		if err := r.origin.configure(ctx, *plan.originate); err != nil {
			errs = append(errs, fmt.Errorf("bgp.originate: %w", err))
			cur.BGP.Originate = r.running.BGP.Originate
		} else {
			r.log.Info("the fleet's prefixes changed", "prefixes", len(plan.originate.Prefixes), "hold_down", plan.originate.HoldDown)
		}
	}
	for _, n := range plan.remove {
		if err := r.bgp.RemoveNeighbor(ctx, n.Address); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(running, n.Address)
		r.log.Info("neighbour removed", "neighbor", n.Address)
	}
	for _, n := range plan.reset {
		if err := r.bgp.RemoveNeighbor(ctx, n.Address); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(running, n.Address)
		if err := r.bgp.AddNeighbor(ctx, n); err != nil {
			errs = append(errs, err)
			continue
		}
		running[n.Address] = want[n.Address]
		r.log.Info("neighbour's session settings changed: session started again", "neighbor", n.Address)
	}
	for _, n := range plan.add {
		if err := r.bgp.AddNeighbor(ctx, n); err != nil {
			errs = append(errs, err)
			continue
		}
		running[n.Address] = want[n.Address]
		r.log.Info("neighbour added", "neighbor", n.Address)
	}
	// Live changes of a kept neighbour: applied, then the changed settings taken
	// into the running configuration; attrs (may be nil) adds to the log line.
	live := func(ns []bgp.Neighbor, msg string, apply func(bgp.Neighbor) error, take func(run *NeighborConfig, want NeighborConfig), attrs func(bgp.Neighbor) []any) {
		for _, n := range ns {
			if err := apply(n); err != nil {
				errs = append(errs, err)
				continue
			}
			rn := running[n.Address]
			take(&rn, want[n.Address])
			running[n.Address] = rn
			args := []any{"neighbor", n.Address}
			if attrs != nil {
				args = append(args, attrs(n)...)
			}
			r.log.Info(msg, args...)
		}
	}
	live(plan.limits, "neighbour's limits changed, its session kept",
		func(n bgp.Neighbor) error {
			return r.bgp.SetLimits(n.Address, n.MaxPrefixes, n.ExpectedPrefixes, n.MaxPrefixRestart)
		},
		func(run *NeighborConfig, w NeighborConfig) {
			run.MaxPrefixes, run.ExpectedPrefixes, run.MaxPrefixRestart = w.MaxPrefixes, w.ExpectedPrefixes, w.MaxPrefixRestart
		},
		func(n bgp.Neighbor) []any {
			return []any{"max_prefixes", n.MaxPrefixes, "expected_prefixes", n.ExpectedPrefixes}
		})
	live(plan.imports, "neighbour's import rules changed: its routes checked again (soft reset in), its session kept",
		func(n bgp.Neighbor) error { return r.bgp.SetImport(ctx, n.Address, n.Import, n.ImportActions) },
		func(run *NeighborConfig, w NeighborConfig) { run.Import = w.Import }, nil)
	live(plan.exports, "neighbour's export changed: its updates recomputed (soft reset out), its session kept",
		func(n bgp.Neighbor) error { return r.bgp.SetExport(ctx, n.Address, n.Export) },
		func(run *NeighborConfig, w NeighborConfig) { run.Export = w.Export }, nil)
	next := cur
	next.BGP.Neighbors = nil
	for _, n := range cur.BGP.Neighbors { // in the file's order
		if rn, ok := running[netip.MustParseAddr(n.Address)]; ok {
			rn.BFD, rn.Weight = n.BFD, n.Weight // applied below, for the neighbours running
			next.BGP.Neighbors = append(next.BGP.Neighbors, rn)
		}
	}
	for _, n := range r.running.BGP.Neighbors { // failed removals stay
		if _, ok := want[netip.MustParseAddr(n.Address)]; !ok {
			if _, still := running[netip.MustParseAddr(n.Address)]; still {
				next.BGP.Neighbors = append(next.BGP.Neighbors, n)
			}
		}
	}
	if bfdChanged && r.bfd != nil {
		if err := r.bfd(next.BGP.Neighbors); err != nil {
			errs = append(errs, fmt.Errorf("bfd: %w", err))
		} else {
			r.log.Info("BFD sessions changed", "sessions", len(bfdOf(next)))
		}
	}
	if weightsChanged && r.weights != nil {
		if err := r.weights(weightsOf(next)); err != nil {
			errs = append(errs, fmt.Errorf("weights: %w", err))
		} else {
			r.log.Info("next-hop weights changed", "weights", weightsOf(next))
		}
	}
	if plan.cache != nil {
		if err := r.cachePolicy(*plan.cache); err != nil {
			errs = append(errs, fmt.Errorf("cache policy: %w", err))
			next.Cache.FlatPolicy = r.running.Cache.FlatPolicy
		} else {
			r.log.Info("configuration's cache policy changed (in force unless etcd holds the fleet's or this node's)", "mode", plan.cache.Mode)
		}
	}
	if plan.logLevel != "" {
		var l slog.Level
		_ = l.UnmarshalText([]byte(plan.logLevel)) // validated
		r.level.Set(l)
		r.log.Info("log level changed", "log_level", plan.logLevel)
	}
	r.running = next
	if len(errs) > 0 {
		return reloadFailed, errors.Join(errs...)
	}
	r.log.Info("configuration reloaded", "files", cur.files, "added", len(plan.add), "removed", len(plan.remove), "reset", len(plan.reset), "limits", len(plan.limits),
		"import_rules", len(plan.imports), "exports", len(plan.exports), "originate", plan.originate != nil)
	return reloadApplied, nil
}

// weightsOf is the neighbours' next-hop weights other than the default, by address.
func weightsOf(c Config) map[netip.Addr]int {
	out := map[netip.Addr]int{}
	for _, n := range c.BGP.Neighbors {
		if n.Weight > 1 {
			out[netip.MustParseAddr(n.Address)] = n.Weight
		}
	}
	return out
}

// bfdOf is the neighbours' BFD settings, by address.
func bfdOf(c Config) map[string]BFDConfig {
	out := map[string]BFDConfig{}
	for _, n := range c.BGP.Neighbors {
		if n.BFD != nil {
			out[n.Address] = *n.BFD
		}
	}
	return out
}

// unjoin splits a joined error into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// memorySetting is the running configuration's memory_limit.
func (r *reloader) memorySetting() memory.Setting {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, _ := memory.ParseSetting(r.running.MemoryLimit) // validated
	return s
}

// policyHash identifies the routing policy in force (Config.policyHash).
func (r *reloader) policyHash() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running.policyHash()
}

// status is the reload counts and the last outcome, for /metrics and the node API.
func (r *reloader) status() (map[string]uint64, reloadStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := make(map[string]uint64, len(r.counts))
	for k, v := range r.counts {
		c[k] = v
	}
	return c, r.last
}

// files are the running configuration's files.
func (r *reloader) files() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.running.files)
}

// passwordDirs are the directories of the running configuration's password files.
func (r *reloader) passwordDirs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, n := range r.running.BGP.Neighbors {
		if n.PasswordFile != "" {
			out = append(out, filepath.Dir(filepath.Clean(n.PasswordFile)))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// dirWatch watches the directories whose changes reload the configuration: the
// config directory, and the directory of each neighbour's password file. Both are
// directories because a Kubernetes ConfigMap or Secret mounted as one is updated by
// swapping its ..data symlink: a watch on a file would follow the replaced one.
type dirWatch struct {
	w      *fsnotify.Watcher
	config string // -config-dir ("": none)
	// secrets are the password files' directories being watched.
	secrets map[string]bool
	log     *slog.Logger
}

// follow makes the password files' watched directories dirs: the new ones added,
// those no longer named removed. One that cannot be watched (not there yet) is
// logged and tried again at the next call (the next reload).
func (d *dirWatch) follow(dirs []string) {
	want := map[string]bool{}
	for _, dir := range dirs {
		if dir == d.config {
			continue // watched already, as the config directory
		}
		want[dir] = true
		if d.secrets[dir] {
			continue
		}
		if err := d.w.Add(dir); err != nil {
			d.log.Warn("cannot watch a password file's directory: a change there is read at the next reload (SIGHUP), which tries again", "dir", dir, "err", err)
			continue
		}
		d.secrets[dir] = true
	}
	for dir := range d.secrets {
		if !want[dir] {
			// Gone already if the directory was removed: nothing to undo then.
			_ = d.w.Remove(dir)
			delete(d.secrets, dir)
		}
	}
}

// why is the reload trigger an event is.
func (d *dirWatch) why(ev fsnotify.Event) string {
	if d.secrets[ev.Name] && ev.Has(fsnotify.Remove|fsnotify.Rename) {
		// The directory itself went: its watch with it; follow adds it again.
		delete(d.secrets, ev.Name)
	}
	if d.config != "" && filepath.Dir(ev.Name) == d.config {
		return "config directory changed"
	}
	return "a password file changed"
}

// run reloads on each signal from hup (SIGHUP) and when anything changes in the
// -config-dir directory or in a password file's directory (events within 200 ms are
// one change), until ctx ends.
func (r *reloader) run(ctx context.Context, dir string, hup <-chan os.Signal) {
	var events <-chan fsnotify.Event
	var errs <-chan error
	var dw *dirWatch
	w, err := fsnotify.NewWatcher()
	if err != nil {
		r.log.Error("cannot watch the config directory and password files: reload with SIGHUP", "err", err)
	} else {
		defer w.Close()
		events, errs = w.Events, w.Errors
		dw = &dirWatch{w: w, secrets: map[string]bool{}, log: r.log}
		if dir != "" {
			if err := w.Add(dir); err != nil {
				r.log.Error("cannot watch the config directory: reload with SIGHUP", "dir", dir, "err", err)
			} else {
				dw.config = filepath.Clean(dir)
			}
		}
		dw.follow(r.passwordDirs())
	}
	reload := func(why string) {
		r.reload(ctx, why)
		if dw != nil {
			dw.follow(r.passwordDirs())
		}
	}
	var settle <-chan time.Time
	why := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			reload("SIGHUP")
		case ev := <-events:
			// One reload for the events of 200 ms; a change of the config directory
			// names it.
			if reason := dw.why(ev); why == "" || reason == "config directory changed" {
				why = reason
			}
			settle = time.After(200 * time.Millisecond)
		case err := <-errs:
			// Events may have been lost (the kernel's queue overflowed): read again.
			r.log.Warn("watching the config directory and password files", "err", err)
			why, settle = "file events lost", time.After(200*time.Millisecond)
		case <-settle:
			settle = nil
			reload(why)
			why = ""
		}
	}
}
