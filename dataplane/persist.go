package dataplane

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Forwarding outlives the process. Under a node's pin directory:
//
//	links/<interface>   the XDP link of each interface, pinned: it stays attached
//	                    when the process exits, crashes or is upgraded
//	gen-<N>/<map>       the maps of one program load (a generation)
//
// Every start takes one path: it loads its program with a new generation's maps,
// fills them from its own tables, and then swaps the program on each link at once
// (bpf_link_update): no packet sees a half-built table, and whatever a crash left
// half written is never trusted (it is never the program the links run: the
// generations the links do not use are removed at start). The live generation is the
// one whose maps the links' program uses: the kernel says so, no file records it. The
// old generation goes after the swap. Until then the new process keeps the old
// generation's heartbeat alive.

const linksDir = "links"

// genPrefix names generation directories; the number only grows.
const genPrefix = "gen-"

// previous is what an earlier process left: its links and the generation they run.
type previous struct {
	links     map[string]link.Link // by interface name, attached
	live      string               // the live generation's directory, "" if none
	heartbeat *ebpf.Map            // the live generation's heartbeat, nil if none
	// fresh: the live generation's heartbeat is before its deadline (or has none): its
	// program still forwards from its FIB, which a restart can keep.
	fresh    bool
	deadline time.Duration // the live heartbeat's deadline (CLOCK_MONOTONIC)
	next     uint64        // the number of the generation to create
}

// Previous describes the forwarding a start found in place.
type Previous struct {
	// Interfaces are those whose pinned XDP link was still attached.
	Interfaces []string
	// Adopted: an earlier process's program still forwards from its FIB on
	// Interfaces; it goes on doing so until Swap. False for a first start, and when
	// the heartbeat had expired (the kernel has been forwarding since).
	Adopted bool
	// Generation is the adopted generation's directory name.
	Generation string
}

// deadlineIn says how long until a heartbeat deadline, for the log.
func deadlineIn(deadline time.Duration) string {
	if deadline == 0 {
		return "none"
	}
	return (deadline - monotonic()).Round(time.Millisecond).String()
}

// monotonic is CLOCK_MONOTONIC, the clock of bpf_ktime_get_coarse_ns.
func monotonic() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}

// findPrevious opens what an earlier process pinned in pinDir, removing what no
// running program uses: links whose interface is gone, generations no link runs (a
// crash's half-built one), and the flat layout of versions before generations.
func findPrevious(pinDir string, log *slog.Logger) (*previous, error) {
	p := &previous{links: map[string]link.Link{}, next: 1}
	entries, err := os.ReadDir(pinDir)
	if errors.Is(err, os.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dataplane: read pin directory %s: %w", pinDir, err)
	}
	var gens []string
	for _, e := range entries {
		name := e.Name()
		switch n, ok := genNumber(name); {
		case ok:
			gens = append(gens, name)
			p.next = max(p.next, n+1)
		case name == linksDir:
		default:
			// A map pinned by a version before generations: its program detached
			// on exit, nothing forwards from it.
			log.Warn("removing a pin left by an older version", "pin", filepath.Join(pinDir, name))
			if err := os.RemoveAll(filepath.Join(pinDir, name)); err != nil {
				return nil, fmt.Errorf("dataplane: remove stale pin %s: %w", name, err)
			}
		}
	}
	progs := map[ebpf.ProgramID]bool{}
	ld := filepath.Join(pinDir, linksDir)
	les, _ := os.ReadDir(ld)
	for _, e := range les {
		path := filepath.Join(ld, e.Name())
		l, err := link.LoadPinnedLink(path, nil)
		if err != nil {
			log.Warn("removing a pinned link that does not open", "pin", path, "err", err)
			_ = os.Remove(path)
			continue
		}
		info, err := l.Info()
		if err != nil || info.Type != link.XDPType || info.XDP() == nil || info.XDP().Ifindex == 0 {
			// Its interface went away (the kernel detached it): release it.
			log.Info("releasing a pinned XDP link no longer attached", "interface", e.Name())
			_ = l.Unpin()
			_ = l.Close()
			continue
		}
		p.links[e.Name()] = l
		progs[info.Program] = true
	}
	p.live, p.heartbeat = liveGeneration(pinDir, gens, progs)
	for _, g := range gens {
		if g == p.live {
			continue
		}
		log.Info("removing a generation of maps no program runs (a start that did not finish)", "dir", filepath.Join(pinDir, g))
		if err := os.RemoveAll(filepath.Join(pinDir, g)); err != nil {
			p.close()
			return nil, fmt.Errorf("dataplane: remove unused generation %s: %w", g, err)
		}
	}
	if p.heartbeat != nil {
		var zero uint32
		var dl uint64
		if err := p.heartbeat.Lookup(&zero, &dl); err == nil {
			p.deadline = time.Duration(dl)
			p.fresh = dl == 0 || monotonic() < p.deadline
		}
	}
	return p, nil
}

// liveGeneration is the generation whose heartbeat map one of progs uses (the
// links' programs), with that map open; "" and nil if none.
func liveGeneration(pinDir string, gens []string, progs map[ebpf.ProgramID]bool) (string, *ebpf.Map) {
	used := map[ebpf.MapID]bool{}
	for id := range progs {
		prog, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue
		}
		if pi, err := prog.Info(); err == nil {
			ids, _ := pi.MapIDs()
			for _, m := range ids {
				used[m] = true
			}
		}
		prog.Close()
	}
	for _, g := range gens {
		hb, err := ebpf.LoadPinnedMap(filepath.Join(pinDir, g, "heartbeat"), nil)
		if err != nil {
			continue
		}
		if mi, err := hb.Info(); err == nil {
			if id, ok := mi.ID(); ok && used[id] {
				return g, hb
			}
		}
		hb.Close()
	}
	return "", nil
}

// linkPrograms is the program each pinned link in pinDir runs, by interface.
func linkPrograms(pinDir string) (map[string]ebpf.ProgramID, error) {
	dir := filepath.Join(pinDir, linksDir)
	les, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]ebpf.ProgramID{}
	for _, e := range les {
		l, err := link.LoadPinnedLink(filepath.Join(dir, e.Name()), nil)
		if err != nil {
			return nil, fmt.Errorf("dataplane: open pinned link %s: %w", e.Name(), err)
		}
		info, err := l.Info()
		l.Close()
		if err != nil {
			return nil, fmt.Errorf("dataplane: read pinned link %s: %w", e.Name(), err)
		}
		out[e.Name()] = info.Program
	}
	return out, nil
}

func genNumber(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, genPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

func (p *previous) adopted() bool { return len(p.links) > 0 && p.live != "" && p.fresh }

func (p *previous) describe() Previous {
	names := make([]string, 0, len(p.links))
	for n := range p.links {
		names = append(names, n)
	}
	slices.Sort(names)
	return Previous{Interfaces: names, Adopted: p.adopted(), Generation: p.live}
}

// close releases this process's references; the pins stay.
func (p *previous) close() {
	for _, l := range p.links {
		l.Close()
	}
	if p.heartbeat != nil {
		p.heartbeat.Close()
		p.heartbeat = nil
	}
}

// LivePinDir is the directory of the maps a node's attached program uses (its live
// generation), for tools that read a running node's maps; with nothing attached, the
// newest generation.
func LivePinDir(bpffs, node string) (string, error) {
	dir := PinDir(bpffs, node)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("dataplane: node %q has no pinned dataplane in %s (is it running?): %w", node, dir, err)
	}
	var gens []string
	var newest string
	var newestN uint64
	for _, e := range entries {
		if n, ok := genNumber(e.Name()); ok {
			gens = append(gens, e.Name())
			if newest == "" || n > newestN {
				newest, newestN = e.Name(), n
			}
		}
	}
	if newest == "" {
		return "", fmt.Errorf("dataplane: node %q has no generation of maps in %s (is it running?)", node, dir)
	}
	running, _ := linkPrograms(dir) // no links: the newest generation
	progs := map[ebpf.ProgramID]bool{}
	for _, id := range running {
		progs[id] = true
	}
	if live, hb := liveGeneration(dir, gens, progs); hb != nil {
		hb.Close()
		return filepath.Join(dir, live), nil
	}
	return filepath.Join(dir, newest), nil
}

// Uninstall removes a node's dataplane for good: detaches its program from every
// interface (unpinning the links) and removes every pinned map. It loads nothing;
// `node -uninstall` runs it. Removed says what it
// found: nothing to remove is no error.
func Uninstall(bpffs, node string) (removed []string, err error) {
	if node == "" || filepath.Base(node) != node || node == ".." {
		return nil, fmt.Errorf("dataplane: node name %q must be a plain, non-empty file name", node)
	}
	dir := PinDir(bpffs, node)
	les, _ := os.ReadDir(filepath.Join(dir, linksDir))
	var errs []error
	for _, e := range les {
		path := filepath.Join(dir, linksDir, e.Name())
		l, err := link.LoadPinnedLink(path, nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("dataplane: open pinned link %s: %w", path, err))
			continue
		}
		// Unpinned and closed, the link has no reference left: the kernel detaches it.
		if err := l.Unpin(); err != nil {
			errs = append(errs, fmt.Errorf("dataplane: unpin link %s: %w", path, err))
		}
		l.Close()
		removed = append(removed, "XDP link on "+e.Name())
	}
	if _, err := os.Stat(dir); err == nil {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("dataplane: remove pins in %s: %w", dir, err))
		} else {
			removed = append(removed, "pinned maps in "+dir)
		}
	}
	return removed, errors.Join(errs...)
}

// beat keeps the heartbeats before their deadlines until stop closes: this
// generation's, and the adopted one's until Swap. restart is how long forwarding
// outlives the last beat.
func (d *Dataplane) beat(restart time.Duration, stop <-chan struct{}) {
	every := min(time.Second, restart/4)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		d.beatOnce(restart)
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

func (d *Dataplane) beatOnce(restart time.Duration) {
	var zero uint32
	dl := uint64(monotonic() + restart)
	if err := d.objs.Heartbeat.Put(&zero, &dl); err != nil {
		d.log.Warn("could not write the heartbeat: the kernel takes over forwarding when it expires", "err", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.prev.heartbeat != nil { // the adopted program's, until Swap closes it
		if err := d.prev.heartbeat.Put(&zero, &dl); err != nil {
			d.log.Warn("could not extend the adopted program's heartbeat", "err", err)
		}
	}
}

// Program identifies the program an interface's pinned link runs.
type Program struct {
	ID uint32
	// Tag is the kernel's hash of its instructions: another build of the program
	// (an upgrade) has another tag; the same build loaded again, the same.
	Tag string
}

// AttachedPrograms reports, per interface, the program a node's pinned XDP link
// runs now, read from the kernel (for tests and tools outside the node's process).
func AttachedPrograms(bpffs, node string) (map[string]Program, error) {
	running, err := linkPrograms(PinDir(bpffs, node))
	if err != nil {
		return nil, fmt.Errorf("dataplane: node %q's pinned links: %w", node, err)
	}
	out := map[string]Program{}
	for ifname, id := range running {
		prog, err := ebpf.NewProgramFromID(id)
		if err != nil {
			return nil, fmt.Errorf("dataplane: program %d of %s: %w", id, ifname, err)
		}
		pi, err := prog.Info()
		prog.Close()
		if err != nil {
			return nil, err
		}
		out[ifname] = Program{ID: uint32(id), Tag: pi.Tag}
	}
	return out, nil
}
