package lab

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// frrDaemons is where Debian's frr package keeps its daemons.
const frrDaemons = "/usr/lib/frr"

// startFRRRouter runs FRR 8.4 as the router: zebra (installing routes into the
// kernel, over the kernel's nexthop objects), bgpd with both sessions and, when the
// upstreams run BFD, bfdd (FRR's default timers, 300 ms x 3, the lab's); the kernel
// forwards. The daemons run in the foreground in the router's namespace, their
// sockets and configuration in the lab's directory: nothing of the host's FRR (its
// services stay masked, `make deps`).
func (d *Dual) startFRRRouter() error {
	if _, err := os.Stat(filepath.Join(frrDaemons, "bgpd")); err != nil {
		return fmt.Errorf("lab: FRR is not installed (apt-get install frr, with its services masked: make deps does): %w", err)
	}
	// The daemons drop to the frr user (keeping the capabilities they need), as
	// Debian runs them: that user writes the sockets and pid files, in a directory
	// of their own (a test's is root's alone).
	dir, err := os.MkdirTemp("", d.Prefix+"-frr-")
	if err != nil {
		return err
	}
	d.Defer(func() error { return os.RemoveAll(dir) })
	u, err := user.Lookup("frr")
	if err != nil {
		return fmt.Errorf("lab: FRR's user: %w (reinstall frr)", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return err
	}
	d.frrDir = dir
	bfd := ""
	if d.cfg.BFD > 0 {
		if d.cfg.BFD != 300*time.Millisecond {
			return fmt.Errorf("lab: FRR runs BFD at its default, 300 ms x 3, not %v", d.cfg.BFD)
		}
		bfd = "bfd"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "hostname rtr\nlog stdout informational\n!\nrouter bgp %d\n bgp router-id %s\n no bgp ebgp-requires-policy\n", RouterASN, DualRouterA)
	peers := append([]dualPeer{{addr: DualAddrA, asn: dualASNA}, {addr: DualAddrB, asn: dualASNB}}, d.extra...)
	for _, s := range peers {
		fmt.Fprintf(&b, " neighbor %s remote-as %d\n neighbor %s timers connect 5\n", s.addr, s.asn, s.addr)
		if bfd != "" && !s.ibgp {
			fmt.Fprintf(&b, " neighbor %s bfd\n", s.addr)
		}
	}
	// Every route to the iBGP peers with this router as its next hop, as to a core.
	b.WriteString(" address-family ipv4 unicast\n")
	for _, p := range d.extra {
		if p.ibgp {
			fmt.Fprintf(&b, "  neighbor %s next-hop-self\n", p.addr)
		}
	}
	b.WriteString(" exit-address-family\n!\n")
	confs := map[string]string{"zebra": "hostname rtr\nlog stdout informational\n", "bgpd": b.String(), "bfdd": "hostname rtr\nlog stdout informational\n"}
	zsock := filepath.Join(dir, "zserv.api")
	daemons := []string{"zebra", "bgpd"}
	if bfd != "" {
		daemons = []string{"zebra", "bfdd", "bgpd"}
	}
	for _, name := range daemons {
		conf := filepath.Join(dir, name+".conf")
		if err := os.WriteFile(conf, []byte(confs[name]), 0o644); err != nil {
			return err
		}
		args := []string{filepath.Join(frrDaemons, name), "-f", conf, "-i", filepath.Join(dir, name+".pid"), "-z", zsock,
			"--vty_socket", dir, "-A", "127.0.0.1", "-P", "0"}
		switch name {
		case "zebra":
			args = append(args, "-s", "90000000") // Debian's netlink buffer
		case "bfdd":
			args = append(args, "--bfdctl", filepath.Join(dir, "bfdd.sock"))
		}
		log := filepath.Join(d.Dir, "frr-"+name+".log")
		cmd, err := d.Router.Start(log, args...)
		if err != nil {
			return err
		}
		d.RouterPIDs = append(d.RouterPIDs, cmd.Process.Pid)
		// Each daemon answers on its vty socket before the next one starts (bgpd and
		// bfdd connect to zebra's socket).
		if err := waitFRR(dir, name, log); err != nil {
			return err
		}
	}
	d.NodeLog = filepath.Join(d.Dir, "frr-bgpd.log")
	return nil
}

// waitFRR waits until a daemon answers vtysh.
func waitFRR(dir, name, log string) error {
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, name+".vty")); err == nil {
			return nil
		}
		if time.Now().After(end) {
			b, _ := os.ReadFile(log)
			return fmt.Errorf("lab: FRR's %s does not answer in %s: %s", name, dir, b)
		}
	}
}

// Vtysh runs a vtysh command against the router's FRR.
func (d *Dual) Vtysh(command string) (string, error) {
	out, err := exec.Command("vtysh", "--vty_socket", d.frrDir, "-c", command).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("vtysh %q: %w: %s", command, err, out)
	}
	return string(out), nil
}

// FRRReceived is how many prefixes FRR's bgpd took from each upstream, by address.
func (d *Dual) FRRReceived() (map[string]int, error) {
	out, err := d.Vtysh("show bgp ipv4 unicast summary json")
	if err != nil {
		return nil, err
	}
	var s struct {
		Peers map[string]struct {
			PfxRcd int `json:"pfxRcd"`
		} `json:"peers"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		return nil, fmt.Errorf("vtysh's summary: %w: %s", err, out)
	}
	got := map[string]int{}
	for a, p := range s.Peers {
		got[a] = p.PfxRcd
	}
	return got, nil
}
