package bench

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Generator sends 64-byte UDP frames to a trace of destinations from XDP itself
// (BPF_PROG_TEST_RUN with live frames), for forwarding benchmarks; its sink program
// counts what arrives at the far end. Its family is its source address's.
type Generator struct {
	objs pktgenObjects
	v6   bool
}

// SetTrace replaces the destinations (same length as the trace it was made with).
func (g *Generator) SetTrace(trace []netip.Addr) error {
	var cfg pktgenPktgenCfg
	if err := g.objs.PktgenConfig.Lookup(uint32(0), &cfg); err != nil {
		return err
	}
	if len(trace) != int(cfg.Mask)+1 {
		return fmt.Errorf("generator trace of %d, want %d", len(trace), cfg.Mask+1)
	}
	return g.setTrace(trace)
}

func (g *Generator) setTrace(trace []netip.Addr) error {
	for _, a := range trace {
		if a.Is6() != g.v6 {
			return fmt.Errorf("generator trace: %s is not of the generator's family", a)
		}
	}
	if g.v6 {
		mem, err := g.objs.PktgenDsts6.Memory()
		if err != nil {
			return fmt.Errorf("map %s (needs BPF_F_MMAPABLE arrays, Linux 5.5+): %w", g.objs.PktgenDsts6, err)
		}
		b := make([]byte, 0, 16*len(trace))
		for _, a := range trace {
			x := a.As16()
			b = append(b, x[:]...)
		}
		_, err = mem.WriteAt(b, 0)
		return err
	}
	dsts := make([]uint32, len(trace))
	for i, a := range trace {
		x := a.As4()
		dsts[i] = binary.NativeEndian.Uint32(x[:])
	}
	return writeU32(g.objs.PktgenDsts, dsts)
}

// xdpMD is the kernel's struct xdp_md, the context of an XDP test run.
type xdpMD struct {
	Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32
}

// NewGenerator loads the generator for a trace (its length a power of two, at most
// 2^20) of frames from src (srcMAC) to the next hop dstMAC.
func NewGenerator(trace []netip.Addr, src netip.Addr, srcMAC, dstMAC net.HardwareAddr) (*Generator, error) {
	n := len(trace)
	if n == 0 || n&(n-1) != 0 || n > 1<<20 {
		return nil, fmt.Errorf("generator trace of %d: use a power of two up to 2^20", n)
	}
	g := &Generator{v6: src.Is6()}
	spec, err := loadPktgen()
	if err != nil {
		return nil, err
	}
	// 64 IPv6 destinations to a row: as many rows as the trace needs.
	spec.Maps["pktgen_dsts6"].MaxEntries = uint32(max(1, n/64))
	if err := spec.LoadAndAssign(&g.objs, nil); err != nil {
		return nil, fmt.Errorf("load generator: %w", err)
	}
	if err := g.setTrace(trace); err != nil {
		g.objs.Close()
		return nil, err
	}
	cfg := pktgenPktgenCfg{Mask: uint32(n - 1)}
	copy(cfg.Dmac[:], dstMAC)
	copy(cfg.Smac[:], srcMAC)
	if g.v6 {
		cfg.Saddr6.S6Addr = src.As16()
	} else {
		s := src.As4()
		cfg.Saddr = binary.NativeEndian.Uint32(s[:])
	}
	if err := g.objs.PktgenConfig.Put(uint32(0), &cfg); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// Close frees the generator.
func (g *Generator) Close() error {
	return g.objs.Close()
}

// Sink is the program to attach where the frames should end up.
func (g *Generator) Sink() *ebpf.Program { return g.objs.XdpSink }

// Received counts the IPv4 and IPv6 frames the sink has seen.
func (g *Generator) Received() (uint64, error) {
	var per []uint64
	if err := g.objs.SinkCount.Lookup(uint32(0), &per); err != nil {
		return 0, err
	}
	var n uint64
	for _, v := range per {
		n += v
	}
	return n, nil
}

// Send transmits n frames out of ifindex, which must be in the calling thread's
// network namespace, and returns the wall time it took. Everything the frames cause
// on their way (veth, the router's XDP or kernel, the sink) runs on this CPU.
func (g *Generator) Send(ifindex, n int) (time.Duration, error) {
	prog := g.objs.Pktgen
	if g.v6 {
		prog = g.objs.Pktgen6
	}
	start := time.Now()
	_, err := prog.Run(&ebpf.RunOptions{
		Data:    make([]byte, 64),
		Repeat:  uint32(n),
		Flags:   unix.BPF_F_TEST_XDP_LIVE_FRAMES,
		Context: xdpMD{DataEnd: 64, IngressIfindex: uint32(ifindex)}, // data_end must be the frame size
	})
	if err != nil {
		return 0, fmt.Errorf("generator run: %w", err)
	}
	return time.Since(start), nil
}
