package dataplane

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// MaxNexthops bounds nexthop ids: valid ids are 1..MaxNexthops-1 (0 is never used,
// so a zeroed FIB value can never look like a real nexthop).
const MaxNexthops = 65536

// Nexthop flags, as in xdp_fwd.c.
const (
	nhValid    = 0x1
	nhResolved = 0x2
	nhDrop     = 0x4
)

// Config sizes and places the dataplane.
type Config struct {
	// NodeName names the pin directory: <BPFFS>/fibfleet/<NodeName>/.
	NodeName string
	// BPFFS is where bpffs is mounted; empty means /sys/fs/bpf.
	BPFFS string
	// GroupsV4 sizes the IPv4 FIB's pool of second-level groups (one per /24 that
	// holds prefixes longer than /24, 1 KiB each); 0 keeps the default, 16,384.
	GroupsV4 uint32
	// LinesV4 sizes the pool of the compressed first level's nodes, in 64-byte lines
	// (the full 2026 table needs about 47,500); 0 keeps the default, 262,144 (16 MiB).
	// When it is full, /16s are looked up in the uncompressed table: slower, correct.
	LinesV4 uint32
	// BucketsV6 sizes the IPv6 FIB's hash in 64-byte buckets, a power of two; 0 keeps
	// DefaultBucketsV6. A key that finds no room passes its /16 to the kernel.
	BucketsV6 uint32
	// FIBBackend is BackendCompiled (default: the DIR-24-8 tables fib writes) or
	// BackendKernel (bpf_fib_lookup on the kernel's routing tables, the baseline).
	FIBBackend Backend
	// FlowSeed seeds the flow hash that picks a next-hop group's member; give each
	// node its own (FlowSeedOf), so that nodes in a row do not all make the same
	// choice.
	FlowSeed uint32
	// RestartTime is how long the program goes on forwarding from its FIB after the
	// process's last heartbeat (a restart, a crash); after it, everything passes to
	// the kernel. 0: no heartbeat, the FIB is trusted for ever (tests).
	RestartTime time.Duration
	// Logger receives lifecycle messages; nil means slog.Default().
	Logger *slog.Logger
}

// Mode selects how the program is attached.
type Mode string

const (
	// ModeNative runs the program in the driver (veth supports it): the fast path.
	ModeNative Mode = "native"
	// ModeGeneric runs it after the skb is built: works on any interface, slowly.
	ModeGeneric Mode = "generic"
)

// Backend selects the FIB the XDP program forwards from.
type Backend string

const (
	BackendCompiled Backend = "compiled"
	BackendKernel   Backend = "kernel"
)

// Nexthop is everything the program needs to send a frame to one neighbour.
type Nexthop struct {
	// Ifindex is the egress port; for a neighbour on a VLAN sub-interface, its parent.
	Ifindex uint32
	SrcMAC  net.HardwareAddr
	DstMAC  net.HardwareAddr
	// MTU is the egress interface's L3 MTU (the sub-interface's for a VLAN).
	MTU uint16
	// VLAN is the 802.1Q VLAN id the frame leaves with, 0 for untagged.
	VLAN     uint16
	Resolved bool
	// Drop makes this the discard nexthop: traffic of the routes through it is
	// dropped in XDP (a blackhole, RFC 7999), counted as DropBlackhole. Nothing
	// else in the entry is used.
	Drop bool
}

// Dataplane is a loaded XDP program with its maps.
type Dataplane struct {
	objs   xdpfwdObjects
	pinDir string // the node's: links/ and the generations
	genDir string // this load's maps
	log    *slog.Logger
	stop   chan struct{} // ends the heartbeat; nil without one
	once   sync.Once

	mu      sync.Mutex
	links   map[string]link.Link // by interface name
	pending map[string]bool      // links still running the adopted program (until Swap)
	prev    *previous
	// live: a link runs this load's program (attached by it, or swapped to it), so
	// its generation stays when the process goes.
	live    bool
	ports   map[uint32]bool // ifindexes in tx_ports
	tables  *V4Tables
	tables6 *V6Tables
	mmaps   [][]byte
	cache   *Cache
}

// PinDir returns where a node's maps are pinned.
func PinDir(bpffs, node string) string {
	if bpffs == "" {
		bpffs = "/sys/fs/bpf"
	}
	return filepath.Join(bpffs, "fibfleet", node)
}

// Load loads the program with a new generation of maps, pinned beside whatever an
// earlier process left forwarding (see persist.go); Previous says what that was.
func Load(cfg Config) (*Dataplane, error) {
	if cfg.NodeName == "" || filepath.Base(cfg.NodeName) != cfg.NodeName || cfg.NodeName == ".." {
		return nil, fmt.Errorf("dataplane: node name %q must be a plain, non-empty file name", cfg.NodeName)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	pinDir := PinDir(cfg.BPFFS, cfg.NodeName)
	if err := checkBPFFS(filepath.Dir(filepath.Dir(pinDir))); err != nil {
		return nil, err
	}
	prev, err := findPrevious(pinDir, log)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			prev.close()
		}
	}()
	genDir := filepath.Join(pinDir, genPrefix+strconv.FormatUint(prev.next, 10))
	if err := os.MkdirAll(filepath.Join(pinDir, linksDir), 0o700); err != nil {
		return nil, fmt.Errorf("dataplane: create pin directory %s: %w", pinDir, err)
	}
	if err := os.Mkdir(genDir, 0o700); err != nil {
		return nil, fmt.Errorf("dataplane: create generation directory %s: %w", genDir, err)
	}
	if d := prev.describe(); d.Adopted {
		log.Info("adopting the forwarding an earlier process left: its program forwards from its FIB until this one's is complete",
			"interfaces", d.Interfaces, "generation", d.Generation, "heartbeat_deadline_in", deadlineIn(prev.deadline))
	} else if len(d.Interfaces) > 0 {
		log.Warn("found XDP links whose heartbeat had expired: the kernel has been forwarding; starting from an empty FIB", "interfaces", d.Interfaces)
	}

	spec, err := loadProgramSpec()
	if err != nil {
		os.RemoveAll(genDir)
		return nil, fmt.Errorf("dataplane: parse embedded program: %w", err)
	}
	if cfg.GroupsV4 > 0 {
		spec.Maps["fib4_tbl8"].MaxEntries = cfg.GroupsV4
	}
	if cfg.LinesV4 > 0 {
		spec.Maps["fib4_nodes"].MaxEntries = cfg.LinesV4
	}
	if b := cfg.BucketsV6; b > 0 {
		if b&(b-1) != 0 || b < 2 || b > 1<<26 {
			return nil, fmt.Errorf("dataplane: fib.buckets_v6 %d: use a power of two from 2 to 2^26 (the default is 2^19, 32 MiB)", b)
		}
		spec.Maps["fib6_table"].MaxEntries = b
		if err := spec.Variables["fib6_log2"].Set(uint32(bits.Len32(b) - 1)); err != nil {
			return nil, fmt.Errorf("dataplane: size the IPv6 FIB: %w", err)
		}
	}
	switch cfg.FIBBackend {
	case BackendCompiled, "":
	case BackendKernel:
		if err := spec.Variables["fib_backend"].Set(uint32(1)); err != nil {
			return nil, fmt.Errorf("dataplane: select the kernel FIB backend: %w", err)
		}
	default:
		return nil, fmt.Errorf("dataplane: unknown FIB backend %q: use compiled or kernel", cfg.FIBBackend)
	}
	if err := spec.Variables["flow_seed"].Set(cfg.FlowSeed); err != nil {
		return nil, fmt.Errorf("dataplane: seed the flow hash: %w", err)
	}
	d := &Dataplane{pinDir: pinDir, genDir: genDir, log: log, links: map[string]link.Link{}, pending: map[string]bool{}, ports: map[uint32]bool{},
		prev: prev}
	err = spec.LoadAndAssign(&d.objs, &ebpf.CollectionOptions{Maps: ebpf.MapOptions{PinPath: genDir}})
	if err != nil {
		os.RemoveAll(genDir) // the maps pinned before the failure
		var verr *ebpf.VerifierError
		if errors.As(err, &verr) {
			return nil, fmt.Errorf("dataplane: the kernel's verifier rejected the program (report it with this log and the kernel's version): %+v", verr)
		}
		return nil, fmt.Errorf("dataplane: load program and maps (needs root or CAP_BPF+CAP_NET_ADMIN, kernel >= 5.15): %w", err)
	}
	o := &d.objs
	d.cache = newCache(o.DcCtl, o.Dc4Maps, o.Dc6Maps, o.DcStats, o.DcHll)
	if cfg.RestartTime > 0 {
		d.stop = make(chan struct{})
		go d.beat(cfg.RestartTime, d.stop)
	}
	ok = true
	return d, nil
}

// Previous says what forwarding this load found in place.
func (d *Dataplane) Previous() Previous { return d.prev.describe() }

func checkBPFFS(dir string) error {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("dataplane: %s does not exist: mount bpffs there (mount -t bpf bpf %s)", dir, dir)
	}
	if !isBPFFS(dir) {
		return fmt.Errorf("dataplane: %s is not a bpffs mount: mount one (mount -t bpf bpf %s)", dir, dir)
	}
	return nil
}

// Cache is the forwarding program's destination cache: off until resized.
func (d *Dataplane) Cache() *Cache { return d.cache }

// Program returns the XDP program, for tests that run it with BPF_PROG_TEST_RUN.
func (d *Dataplane) Program() *ebpf.Program { return d.objs.XdpFwd }

// Attach attaches the program to an interface.
func (d *Dataplane) Attach(ifname string, mode Mode) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.links[ifname]; ok {
		return fmt.Errorf("dataplane: already attached to %s", ifname)
	}
	iface, err := net.InterfaceByName(ifname)
	if err != nil {
		return fmt.Errorf("dataplane: interface %q: %w (check the interfaces list in the config)", ifname, err)
	}
	if l, ok := d.prev.links[ifname]; ok {
		// Attached by an earlier process: it keeps its program (and FIB) until Swap.
		// The link's mode is the one it was attached with (a change of
		// xdp_mode takes `node --uninstall` first).
		d.links[ifname], d.pending[ifname] = l, true
		delete(d.prev.links, ifname)
		if err := d.ensurePortLocked(uint32(iface.Index)); err != nil {
			return err
		}
		d.log.Info("kept the XDP link an earlier process attached", "interface", ifname)
		return nil
	}
	flags := link.XDPDriverMode
	switch mode {
	case ModeNative, "":
	case ModeGeneric:
		flags = link.XDPGenericMode
	default:
		return fmt.Errorf("dataplane: unknown XDP mode %q: use native or generic", mode)
	}
	l, err := link.AttachXDP(link.XDPOptions{Program: d.objs.XdpFwd, Interface: iface.Index, Flags: flags})
	if err != nil {
		if mode != ModeGeneric && errors.Is(err, unix.EOPNOTSUPP) {
			// Kernels before 6.3 cannot say beforehand (CheckFeatures); the attach does.
			return noNativeXDP(ifname, "native XDP", "")
		}
		return fmt.Errorf("dataplane: attach XDP (%s) to %s: %w", cmp.Or(mode, ModeNative), ifname, err)
	}
	// Pinned, the link outlives the process: a restart keeps forwarding.
	if err := l.Pin(filepath.Join(d.pinDir, linksDir, ifname)); err != nil {
		l.Close()
		return fmt.Errorf("dataplane: pin the XDP link of %s (is %s on bpffs?): %w", ifname, d.pinDir, err)
	}
	d.links[ifname], d.live = l, true
	// Every port the program runs on can be an egress (the kernel backend picks any).
	if err := d.ensurePortLocked(uint32(iface.Index)); err != nil {
		return err
	}
	if mode == ModeGeneric {
		d.log.Warn("attached XDP program in generic mode, as configured: every frame builds an skb first, far slower than native", "interface", ifname)
	} else {
		d.log.Info("attached XDP program", "interface", ifname, "mode", "native")
	}
	return nil
}

// Attachment is the program's XDP link on one interface.
type Attachment struct {
	// LinkID is the kernel's id of the bpf_link (`bpftool link show id N`).
	LinkID uint32
	// Attached is false once the link no longer holds the interface: it was
	// detached from outside (`bpftool link detach`) or the interface went away.
	Attached bool
}

// Attachments reports each interface Attach was given, as the kernel sees its link
// now: a link detached from outside stays open in this process but forwards nothing.
func (d *Dataplane) Attachments() map[string]Attachment {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]Attachment, len(d.links))
	for name, l := range d.links {
		info, err := l.Info()
		if err != nil {
			out[name] = Attachment{}
			continue
		}
		x := info.XDP()
		out[name] = Attachment{LinkID: uint32(info.ID), Attached: x != nil && x.Ifindex != 0}
	}
	return out
}

// Detach removes the program from an interface.
func (d *Dataplane) Detach(ifname string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.links[ifname]
	if !ok {
		return fmt.Errorf("dataplane: not attached to %s", ifname)
	}
	delete(d.links, ifname)
	delete(d.pending, ifname)
	if err := l.Unpin(); err != nil {
		d.log.Warn("unpin XDP link", "interface", ifname, "err", err)
	}
	if err := l.Close(); err != nil {
		return fmt.Errorf("dataplane: detach from %s: %w", ifname, err)
	}
	d.log.Info("detached XDP program", "interface", ifname)
	return nil
}

// Swap moves every kept link to this process's program at once (bpf_link_update:
// each interface's next frame sees the new FIB, whole), releases the links of
// interfaces no longer configured, and removes the earlier generation. Call it once
// the FIB is complete; on a start that adopted nothing, at once.
func (d *Dataplane) Swap() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for name := range d.pending {
		if err := d.links[name].Update(d.objs.XdpFwd); err != nil {
			errs = append(errs, fmt.Errorf("dataplane: swap the program on %s (bpf_link_update): %w", name, err))
			continue
		}
		delete(d.pending, name)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for name, l := range d.prev.links {
		d.log.Info("detaching XDP from an interface no longer configured", "interface", name)
		_ = l.Unpin()
		l.Close()
		delete(d.prev.links, name)
	}
	d.live = true
	if live := d.prev.live; live != "" {
		d.prev.close()
		if err := os.RemoveAll(filepath.Join(d.pinDir, live)); err != nil {
			return fmt.Errorf("dataplane: remove the earlier generation %s: %w", live, err)
		}
		d.log.Info("swapped to this process's program and FIB; earlier generation removed", "generation", filepath.Base(d.genDir), "removed", live)
	}
	return nil
}

// Release lets go of the dataplane and leaves it forwarding (a restart or an
// upgrade): the links stay attached and pinned, the maps pinned, the heartbeat at
// its last deadline. A release before Swap removes this load's generation, which
// no interface runs.
func (d *Dataplane) Release() error {
	d.stopHeartbeat()
	d.mu.Lock()
	for _, l := range d.links {
		l.Close()
	}
	d.links = map[string]link.Link{}
	live := d.live
	d.prev.close()
	d.mu.Unlock()
	d.unmapTables()
	d.cache.close()
	err := d.objs.Close()
	if !live {
		err = errors.Join(err, os.RemoveAll(d.genDir))
	}
	return err
}

// stopHeartbeat ends the heartbeat's goroutine, if there is one.
func (d *Dataplane) stopHeartbeat() {
	d.once.Do(func() {
		if d.stop != nil {
			close(d.stop)
		}
	})
}

// Close detaches from every interface, unpins the maps and frees everything: the
// dataplane is gone (tests, and a node told to uninstall).
func (d *Dataplane) Close() error {
	d.stopHeartbeat()
	d.mu.Lock()
	names := make([]string, 0, len(d.links))
	for n := range d.links {
		names = append(names, n)
	}
	d.mu.Unlock()
	var errs []error
	for _, n := range names {
		errs = append(errs, d.Detach(n))
	}
	d.mu.Lock()
	for _, l := range d.prev.links {
		_ = l.Unpin()
	}
	d.prev.close()
	d.mu.Unlock()
	d.unmapTables()
	d.cache.close()
	errs = append(errs, d.objs.Close())
	// Every pin in the directory is one of ours: removing them unpins every map,
	// whatever maps the program has grown.
	if err := os.RemoveAll(d.pinDir); err != nil {
		errs = append(errs, fmt.Errorf("dataplane: remove pins in %s: %w", d.pinDir, err))
	}
	return errors.Join(errs...)
}

// SetNexthop writes a nexthop entry. Only interfaces the program is attached to are
// egress ports (Attach puts them in the devmap): a nexthop through any other interface
// passes its packets to the kernel (no_txport). The devmap resolves an ifindex in the
// caller's network namespace, so ports are added only by Attach, which runs where the
// interface is.
func (d *Dataplane) SetNexthop(id uint32, nh Nexthop) error {
	if id == 0 || id >= MaxNexthops {
		return fmt.Errorf("dataplane: nexthop id %d out of range 1..%d", id, MaxNexthops-1)
	}
	if nh.VLAN > 4094 {
		return fmt.Errorf("dataplane: nexthop %d: VLAN id %d out of range 1..4094", id, nh.VLAN)
	}
	v := xdpfwdNexthop{Ifindex: nh.Ifindex, Mtu: nh.MTU, Vlan: nh.VLAN, Flags: nhValid}
	if nh.Drop {
		v = xdpfwdNexthop{Flags: nhValid | nhDrop}
	} else if nh.Resolved {
		if len(nh.SrcMAC) != 6 || len(nh.DstMAC) != 6 || nh.Ifindex == 0 {
			return fmt.Errorf("dataplane: resolved nexthop %d needs an ifindex and two 6-byte MACs, got %+v", id, nh)
		}
		v.Flags |= nhResolved
		copy(v.Smac[:], nh.SrcMAC)
		copy(v.Dmac[:], nh.DstMAC)
	}
	if err := d.objs.Nexthops.Put(&id, &v); err != nil {
		return fmt.Errorf("dataplane: set nexthop %d: %w", id, err)
	}
	return nil
}

func (d *Dataplane) ensurePortLocked(ifindex uint32) error {
	if d.ports[ifindex] {
		return nil
	}
	v := xdpfwdBpfDevmapVal{Ifindex: ifindex}
	if err := d.objs.TxPorts.Put(&ifindex, &v); err != nil {
		return fmt.Errorf("dataplane: add ifindex %d to the devmap (does the interface still exist?): %w", ifindex, err)
	}
	d.ports[ifindex] = true
	return nil
}

// DeleteNexthop clears a nexthop entry; routes still pointing at it pass to the kernel.
func (d *Dataplane) DeleteNexthop(id uint32) error {
	if id == 0 || id >= MaxNexthops {
		return fmt.Errorf("dataplane: nexthop id %d out of range 1..%d", id, MaxNexthops-1)
	}
	var zero xdpfwdNexthop
	if err := d.objs.Nexthops.Put(&id, &zero); err != nil {
		return fmt.Errorf("dataplane: clear nexthop %d: %w", id, err)
	}
	return nil
}

// AddLocal marks an address as the node's own: frames to it pass to the kernel.
func (d *Dataplane) AddLocal(a netip.Addr) error {
	one := uint8(1)
	if a.Is6() && !a.Is4In6() {
		if err := d.objs.LocalV6.Put(xdpfwdIn6Addr{S6Addr: a.As16()}, &one); err != nil {
			return fmt.Errorf("dataplane: add local address %s: %w", a, err)
		}
		return nil
	}
	k := nativeU32(a.Unmap().As4())
	if err := d.objs.LocalV4.Put(&k, &one); err != nil {
		return fmt.Errorf("dataplane: add local address %s: %w", a, err)
	}
	return nil
}

// DeleteLocal forgets a local address.
func (d *Dataplane) DeleteLocal(a netip.Addr) error {
	if a.Is6() && !a.Is4In6() {
		if err := d.objs.LocalV6.Delete(xdpfwdIn6Addr{S6Addr: a.As16()}); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("dataplane: delete local address %s: %w", a, err)
		}
		return nil
	}
	k := nativeU32(a.Unmap().As4())
	if err := d.objs.LocalV4.Delete(&k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("dataplane: delete local address %s: %w", a, err)
	}
	return nil
}

// Stats reads every counter, summed over CPUs.
func (d *Dataplane) Stats() (Stats, error) { return readStats(d.objs.Stats) }

// ReadPinnedStats reads the counters of a running node through its pinned map,
// without loading anything: for tests and tools outside the daemon's process.
func ReadPinnedStats(bpffs, node string) (Stats, error) {
	dir, err := LivePinDir(bpffs, node)
	if err != nil {
		return Stats{}, err
	}
	m, err := ebpf.LoadPinnedMap(filepath.Join(dir, "stats"), &ebpf.LoadPinOptions{ReadOnly: true})
	if err != nil {
		return Stats{}, fmt.Errorf("dataplane: open pinned stats of node %q (is it running?): %w", node, err)
	}
	defer m.Close()
	return readStats(m)
}

func readStats(m *ebpf.Map) (Stats, error) {
	var s Stats
	for r := Reason(0); r < numReasons; r++ {
		var per []xdpfwdStatRec
		k := uint32(r)
		if err := m.Lookup(&k, &per); err != nil {
			return s, fmt.Errorf("dataplane: read stat %s: %w", r, err)
		}
		for _, c := range per {
			s[r].Packets += c.Packets
			s[r].Bytes += c.Bytes
		}
	}
	return s, nil
}

// Cached says on how many CPUs the forwarding program's destination cache holds a
// destination: fresh (the next packet to it hits) or stale (an entry of an old epoch,
// or of a route that changed since). It reads the cache without touching it.
func (d *Dataplane) Cached(a netip.Addr) (fresh, stale int, err error) {
	var gen uint32
	if a.Is4() {
		t, err := d.V4Tables()
		if err != nil {
			return 0, 0, err
		}
		b := a.As4()
		gen = atomic.LoadUint32(&t.Gen16[uint32(b[0])<<8|uint32(b[1])])
	} else {
		t, err := d.V6Tables()
		if err != nil {
			return 0, 0, err
		}
		b := a.As16()
		gen = atomic.LoadUint32(&t.Gen[Gen6Region(binary.BigEndian.Uint32(b[:4]))])
	}
	return d.cache.cached(a.Unmap(), gen)
}
