package lab

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/fibfleet/fibfleet/internal/table"
)

// The upstream link, the same in every topology: the router (the skeleton's, or a
// fleet's n1) on one side, the upstream (BIRD or a feeder) on the other.
const (
	RouterUpAddr  = "10.12.0.1"
	RouterUpAddr6 = "fd00:12::1"
	UpstreamAddr  = "10.12.0.2"
	UpstreamAddr6 = "fd00:12::2"
)

// LabImport is the import rules every lab upstream's neighbour entry carries (YAML
// flow style): the lab's ASes are private (AS65001 upstream of AS65000) and it
// announces documentation and benchmarking prefixes, allowed here explicitly as an
// operator's configuration would; the other safe defaults stay on.
const LabImport = "{private_asns: true, " + labAllow + "}"

// labAllow is the special-purpose space the lab announces.
const labAllow = "allow: [192.0.2.0/24, 198.18.0.0/15, 198.51.100.0/24, 203.0.113.0/24, 100.64.0.0/10, 2001:db8::/32]"

// birdConfig writes a BIRD 2 configuration: the device protocol, static protocols
// that originate prefixes (blackhole routes) and BGP sessions. It writes as it goes,
// so a full table's statics never sit in memory twice.
type birdConfig struct {
	path string
	f    *os.File
	b    *bufio.Writer
}

// newBirdConfig starts a configuration at path, with its router id.
func newBirdConfig(path, routerID string) (*birdConfig, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	c := &birdConfig{path: path, f: f, b: bufio.NewWriterSize(f, 1<<20)}
	// Its log goes to stderr, the process's log file (BIRD logs to syslog otherwise).
	// The device protocol scans every second to wake BIRD's event loop: Debian 12's
	// BIRD 2.0.12 can leave a queued event, such as the End-of-RIB to a peer back
	// from a graceful restart, until its poll's 3 s timeout (fixed in BIRD 2.14,
	// commit 6a242b3ec "IO: Fix race condition in event processing"). Two of three
	// node restarts waited those 3 s; the scan caps the stall at 1 s.
	fmt.Fprintf(c.b, "log stderr { info, remote, warning, error, auth, fatal, bug };\nrouter id %s;\nprotocol device { scan time 1; }\n", routerID)
	return c, nil
}

// static originates prefixes (all of one family) in a static protocol of that name:
// `birdc disable <name>` withdraws them.
func (c *birdConfig) static(name string, prefixes ...netip.Prefix) {
	c.staticProto(name, false, prefixes)
}

// staticOff is static for a protocol that starts disabled (`birdc enable <name>`
// announces its prefixes).
func (c *birdConfig) staticOff(name string, prefixes ...netip.Prefix) {
	c.staticProto(name, true, prefixes)
}

func (c *birdConfig) staticProto(name string, disabled bool, prefixes []netip.Prefix) {
	fam := "ipv4"
	if len(prefixes) > 0 && prefixes[0].Addr().Is6() {
		fam = "ipv6"
	}
	fmt.Fprintf(c.b, "protocol static %s {\n  %s;\n", name, fam)
	if disabled {
		c.b.WriteString("  disabled;\n")
	}
	for _, p := range prefixes {
		fmt.Fprintf(c.b, "  route %s blackhole;\n", p)
	}
	c.b.WriteString("}\n")
}

// staticAttrs is static for IPv4 routes that carry real attributes (m.Assign): one
// function per transit set of the model prepends its AS path and adds its
// communities, and each route calls its set's after prepending its origin (BIRD
// prepends its own AS on eBGP export). BIRD interns equal attribute sets, as a real
// upstream's RIB shares them. Disabled, it announces them on `birdc enable <name>`.
func (c *birdConfig) staticAttrs(name string, disabled bool, m table.Model, routes []table.Route) {
	for i, t := range m.Transits {
		fmt.Fprintf(c.b, "function t%d() {", i)
		for j := len(t.Path) - 1; j >= 0; j-- {
			fmt.Fprintf(c.b, " bgp_path.prepend(%d);", t.Path[j])
		}
		for _, cm := range t.Communities {
			fmt.Fprintf(c.b, " bgp_community.add((%d,%d));", cm>>16, cm&0xffff)
		}
		c.b.WriteString(" }\n")
	}
	sets, of := m.Assign(routes)
	fmt.Fprintf(c.b, "protocol static %s {\n  ipv4;\n", name)
	if disabled {
		c.b.WriteString("  disabled;\n")
	}
	for i, r := range routes {
		a := sets[of[i]]
		if len(a.Path) > len(m.Transits[a.Transit].Path) {
			fmt.Fprintf(c.b, "  route %s blackhole { bgp_path.prepend(%d); t%d(); };\n", r.Prefix, a.Path[len(a.Path)-1], a.Transit)
		} else {
			fmt.Fprintf(c.b, "  route %s blackhole { t%d(); };\n", r.Prefix, a.Transit)
		}
	}
	c.b.WriteString("}\n")
}

// birdChannel is one address family of a BGP session: its import and export, each a
// BIRD filter expression ("all", "none", "where ...", "filter { ... }").
type birdChannel struct {
	family, imp, exp string
	extendedNexthop  bool
}

// birdSession is a BGP session.
type birdSession struct {
	name                string
	local, neighbor     string
	localAS, neighborAS int
	disabled            bool
	// password signs the session (TCP-MD5); ttlSecurity is GTSM.
	password    string
	ttlSecurity bool
	// quickRetry makes BIRD try again within seconds after a failed session or
	// connection, not after its defaults (an error wait of 60 to 300 s, a connect
	// retry of 120 s, 240 s for an OPEN (startup hold time)): a lab's peer that a test brings back must
	// not wait for minutes.
	quickRetry bool
	// bfd asks the BFD protocol (birdConfig.bfd) for a session with the neighbour:
	// its failure ends the BGP session.
	bfd bool
	// gracefulRestart makes BIRD a restarting speaker too (`graceful restart on`;
	// it is a helper by default).
	gracefulRestart bool
	// direct: the neighbour is on a shared link (BIRD's default for eBGP only);
	// nextHopSelf sends every route with this side's address as its next hop (an
	// edge router's routes to its iBGP peers).
	direct, nextHopSelf bool
	channels            []birdChannel
}

func (c *birdConfig) bgp(s birdSession) {
	fmt.Fprintf(c.b, "protocol bgp %s {\n", s.name)
	if s.disabled {
		c.b.WriteString("  disabled;\n")
	}
	fmt.Fprintf(c.b, "  local %s as %d;\n  neighbor %s as %d;\n", s.local, s.localAS, s.neighbor, s.neighborAS)
	if s.password != "" {
		fmt.Fprintf(c.b, "  password %q;\n", s.password)
	}
	if s.ttlSecurity {
		c.b.WriteString("  ttl security on;\n")
	}
	if s.quickRetry {
		c.b.WriteString("  error wait time 1, 5;\n  connect retry time 5;\n  startup hold time 10;\n")
	}
	if s.bfd {
		c.b.WriteString("  bfd on;\n")
	}
	if s.gracefulRestart {
		c.b.WriteString("  graceful restart on;\n")
	}
	if s.direct {
		c.b.WriteString("  direct;\n")
	}
	for _, ch := range s.channels {
		fmt.Fprintf(c.b, "  %s {\n", ch.family)
		if ch.extendedNexthop {
			c.b.WriteString("    extended next hop on;\n")
		}
		if s.nextHopSelf {
			c.b.WriteString("    next hop self;\n")
		}
		fmt.Fprintf(c.b, "    import %s;\n    export %s;\n  };\n", ch.imp, ch.exp)
	}
	c.b.WriteString("}\n")
}

// bfdProto runs BIRD's BFD on every interface at an interval (both directions) and
// multiplier, for the sessions that ask for it.
func (c *birdConfig) bfdProto(interval time.Duration, multiplier int) {
	ms := interval.Milliseconds()
	fmt.Fprintf(c.b, "protocol bfd {\n  interface \"*\" { min rx interval %d ms; min tx interval %d ms; idle tx interval 1000 ms; multiplier %d; };\n}\n", ms, ms, multiplier)
}

// kernelExport exports every IPv4 route to the namespace's kernel table.
func (c *birdConfig) kernelExport(name string) {
	fmt.Fprintf(c.b, "protocol kernel %s { ipv4 { import none; export all; }; }\n", name)
}

// nexthopFilter exports the routes of the given prefixes and static protocols, each
// with its next hop, and rejects the rest.
type nexthopFilter struct{ lines []string }

func (f *nexthopFilter) net(p netip.Prefix, nh netip.Addr) {
	f.lines = append(f.lines, fmt.Sprintf("if net = %s then { bgp_next_hop = %s; accept; }", p, nh))
}

// netPath is net with the AS path changed first (BIRD statements on bgp_path, such
// as "bgp_path.prepend(23456);"): BIRD prepends its own AS after.
func (f *nexthopFilter) netPath(p netip.Prefix, nh netip.Addr, path string) {
	f.lines = append(f.lines, fmt.Sprintf("if net = %s then { bgp_next_hop = %s; %s accept; }", p, nh, path))
}

func (f *nexthopFilter) proto(name string, nh netip.Addr) {
	f.lines = append(f.lines, fmt.Sprintf("if proto = %q then { bgp_next_hop = %s; accept; }", name, nh))
}

func (f *nexthopFilter) String() string {
	return "filter {\n      " + strings.Join(append(f.lines, "reject;"), "\n      ") + "\n    }"
}

// close finishes the file.
func (c *birdConfig) close() error {
	if err := c.b.Flush(); err != nil {
		c.f.Close()
		return err
	}
	return c.f.Close()
}

// startBird runs BIRD 2 in ns on a finished configuration, its control socket and
// log beside it in dir (name.ctl, name.log).
func startBird(ns *Netns, dir, name string, c *birdConfig) (sock, log string, cmd *exec.Cmd, err error) {
	if err := c.close(); err != nil {
		return "", "", nil, err
	}
	sock, log = filepath.Join(dir, name+".ctl"), filepath.Join(dir, name+".log")
	cmd, err = ns.Start(log, "bird", "-f", "-c", c.path, "-s", sock)
	if err != nil {
		return "", "", nil, fmt.Errorf("%w (install BIRD 2: apt-get install bird2)", err)
	}
	return sock, log, cmd, nil
}
