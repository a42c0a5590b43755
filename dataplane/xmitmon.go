package dataplane

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// XmitStats are one egress's totals: frames its driver took, and frames it did not
// (freed by the kernel after the forwarding program counted them forwarded).
type XmitStats struct {
	Sent, Dropped uint64
}

// XmitMonitor counts, per egress, the frames redirected to it that its driver did
// not take (xmitmon.c says why only a tracepoint sees them all). It is separate from
// the forwarding program: it needs the kernel's BTF and a tracing attachment, and a
// node without it still forwards.
type XmitMonitor struct {
	objs  xmitmonObjects
	links []link.Link
}

// OpenXmitMonitor loads the counter for the calling thread's network namespace (the
// node's) and attaches it to the xdp_devmap_xmit and xdp_redirect_err tracepoints. The error says what is missing; the caller decides whether to go on.
func OpenXmitMonitor() (_ *XmitMonitor, err error) {
	m := &XmitMonitor{}
	var st unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/net", &st); err != nil {
		return nil, fmt.Errorf("dataplane: this process's network namespace: %w", err)
	}
	spec, err := loadXmitmon()
	if err != nil {
		return nil, fmt.Errorf("dataplane: parse embedded transmit-drop counter: %w", err)
	}
	if err := spec.Variables["netns_ino"].Set(uint32(st.Ino)); err != nil {
		return nil, fmt.Errorf("dataplane: set the transmit-drop counter's namespace: %w", err)
	}
	if err := spec.LoadAndAssign(&m.objs, nil); err != nil {
		var verr *ebpf.VerifierError
		if errors.As(err, &verr) {
			return nil, fmt.Errorf("dataplane: the kernel's verifier rejected the transmit-drop counter: %w", err)
		}
		return nil, fmt.Errorf("dataplane: load the transmit-drop counter (needs the kernel's BTF, CONFIG_DEBUG_INFO_BTF, and CAP_BPF with CAP_PERFMON): %w", err)
	}
	defer func() {
		if err != nil {
			m.objs.Close()
		}
	}()
	for _, p := range []struct {
		name string
		prog *ebpf.Program
	}{{"xdp_devmap_xmit", m.objs.XdpDevmapXmit}, {"xdp_redirect_err", m.objs.XdpRedirectErr}} {
		l, err := link.AttachTracing(link.TracingOptions{Program: p.prog})
		if err != nil {
			for _, l := range m.links {
				l.Close()
			}
			return nil, fmt.Errorf("dataplane: attach the transmit-drop counter to the %s tracepoint: %w", p.name, err)
		}
		m.links = append(m.links, l)
	}
	return m, nil
}

// Stats returns every egress's totals by ifindex, summed over CPUs.
func (m *XmitMonitor) Stats() (map[uint32]XmitStats, error) {
	out := map[uint32]XmitStats{}
	var k uint32
	var per []xmitmonXmitRec
	it := m.objs.XmitStats.Iterate()
	for it.Next(&k, &per) {
		var s XmitStats
		for _, r := range per {
			s.Sent += r.Sent
			s.Dropped += r.Dropped
		}
		out[k] = s
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("dataplane: read the transmit-drop counter: %w", err)
	}
	return out, nil
}

// Close detaches and frees the counter.
func (m *XmitMonitor) Close() error {
	var errs []error
	for _, l := range m.links {
		errs = append(errs, l.Close())
	}
	return errors.Join(append(errs, m.objs.Close())...)
}
