package rpki

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/internal/testutil"
)

// TestUnion: two validators' VRPs together; a VRP both hold stays while one holds
// it; what enters or leaves the union is reported; one validator dropped takes
// only its own.
func TestUnion(t *testing.T) {
	a, b, c := VRP{pfx("192.0.2.0/24"), 24, 64500}, VRP{pfx("198.51.100.0/24"), 24, 64501}, VRP{pfx("203.0.113.0/24"), 24, 64502}
	u := NewUnion()
	if got := u.Apply(Update{Source: "v1", Added: []VRP{a, b}, First: true}); !slices.Equal(got, []netip.Prefix{a.Prefix, b.Prefix}) {
		t.Errorf("v1's set: changed %v", got)
	}
	if got := u.Apply(Update{Source: "v2", Added: []VRP{b, c}, First: true}); !slices.Equal(got, []netip.Prefix{c.Prefix}) {
		t.Errorf("v2's set: changed %v, want only %s (b was in already)", got, c.Prefix)
	}
	if got := u.Apply(Update{Source: "v1", Removed: []VRP{b}}); len(got) != 0 {
		t.Errorf("b removed by v1 while v2 holds it: changed %v", got)
	}
	if s := u.Validate(b.Prefix, 64501); s != Valid {
		t.Errorf("b: %s, want valid (v2 holds it)", s)
	}
	if got := u.Drop("v2"); !slices.Equal(sortedPrefixes(got), []netip.Prefix{b.Prefix, c.Prefix}) {
		t.Errorf("v2 dropped: changed %v", got)
	}
	if s := u.Validate(c.Prefix, 64502); s != NotFound || u.Len() != 1 || u.Sources()["v1"] != 1 {
		t.Errorf("after v2 dropped: c %s, %d VRPs, sources %v", s, u.Len(), u.Sources())
	}
}

func sortedPrefixes(ps []netip.Prefix) []netip.Prefix {
	out := slices.Clone(ps)
	slices.SortFunc(out, func(x, y netip.Prefix) int { return x.Addr().Compare(y.Addr()) })
	return out
}

// stayrtr runs Debian's stayrtr on the loopback serving a VRP JSON file it re-reads
// every second.
type stayrtr struct {
	t    *testing.T
	file string
	addr string
	cmd  *exec.Cmd
}

func startStayRTR(t *testing.T, dir string, vrps []VRP) *stayrtr {
	t.Helper()
	testutil.Need(t, testutil.Have("stayrtr"), "needs stayrtr (make test installs it)")
	s := &stayrtr{t: t, file: filepath.Join(dir, "vrps.json")}
	s.write(vrps)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	l.Close()
	s.start()
	return s
}

func (s *stayrtr) write(vrps []VRP) {
	s.t.Helper()
	var rows []string
	for _, v := range vrps {
		rows = append(rows, fmt.Sprintf(`{"prefix": %q, "maxLength": %d, "asn": "AS%d"}`, v.Prefix, v.MaxLength, v.ASN))
	}
	tmp := s.file + ".tmp"
	if err := os.WriteFile(tmp, []byte(`{"roas": [`+strings.Join(rows, ", ")+`]}`), 0o644); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Rename(tmp, s.file); err != nil {
		s.t.Fatal(err)
	}
}

func (s *stayrtr) start() {
	s.t.Helper()
	s.cmd = exec.Command("stayrtr", "-cache", s.file, "-checktime=false", "-refresh", "1", "-bind", s.addr, "-metrics.addr", "127.0.0.1:0")
	// Gone with the test binary, even one killed by a timeout before its cleanups.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	cmd := s.cmd
	s.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
}

func (s *stayrtr) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// TestClient follows a real stayrtr: the first full set, a VRP added and one removed
// in the file (reported as exactly those changes, with no reconnection), the
// validator gone (reported lost, the client's set kept), and back (a new session:
// only what changed meanwhile reported).
func TestClient(t *testing.T) {
	a, b, c := VRP{pfx("192.0.2.0/24"), 24, 64500}, VRP{pfx("2001:db8::/32"), 48, 64501}, VRP{pfx("198.51.100.0/22"), 24, 64502}
	srv := startStayRTR(t, t.TempDir(), []VRP{a, b})
	updates, losses := make(chan Update, 16), make(chan error, 16)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		(&Client{Addr: srv.addr, Refresh: 2 * time.Second, Retry: 200 * time.Millisecond}).Run(ctx, func(u Update) { updates <- u }, func(err error) {
			select {
			case losses <- err:
			default:
			}
		})
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	next := func(what string) Update {
		t.Helper()
		for {
			select {
			case u := <-updates:
				if len(u.Added)+len(u.Removed) == 0 && !u.First {
					continue // a refresh that found nothing new
				}
				return u
			case <-time.After(20 * time.Second):
				t.Fatalf("%s: no update within 20 s", what)
			}
		}
	}
	same := func(got, want []VRP) bool {
		key := func(v VRP) string { return v.Prefix.String() }
		g, w := slices.Clone(got), slices.Clone(want)
		slices.SortFunc(g, func(x, y VRP) int { return strings.Compare(key(x), key(y)) })
		slices.SortFunc(w, func(x, y VRP) int { return strings.Compare(key(x), key(y)) })
		return slices.Equal(g, w)
	}
	if u := next("the first set"); !u.First || !same(u.Added, []VRP{a, b}) || len(u.Removed) != 0 {
		t.Fatalf("first update %+v, want a and b added", u)
	}
	srv.write([]VRP{a, c})
	if u := next("the file changed"); u.First || !same(u.Added, []VRP{c}) || !same(u.Removed, []VRP{b}) {
		t.Fatalf("update %+v, want c added and b removed", u)
	}
	srv.stop()
	select {
	case <-losses:
	case <-time.After(20 * time.Second):
		t.Fatal("the validator stopped: no loss reported within 20 s")
	}
	srv.write([]VRP{a, b, c})
	srv.start()
	if u := next("back, with b again"); !same(u.Added, []VRP{b}) || len(u.Removed) != 0 {
		t.Fatalf("update after reconnection %+v, want only b added", u)
	}
}
