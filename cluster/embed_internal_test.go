package cluster

import (
	"net"
	"net/url"
	"testing"
)

// TestEmbeddedPortTaken: the ports StartEmbedded chose free are taken before etcd
// binds them (another package's tests got there first): it chooses again and starts.
func TestEmbeddedPortTaken(t *testing.T) {
	taken := make([]net.Listener, 2)
	for i := range taken {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		taken[i] = l
	}
	orig := freeURL
	t.Cleanup(func() { freeURL = orig })
	calls := 0
	freeURL = func() (url.URL, error) {
		calls++
		if calls <= len(taken) {
			return url.URL{Scheme: "http", Host: taken[calls-1].Addr().String()}, nil
		}
		return orig()
	}
	e, err := StartEmbedded(EmbeddedConfig{Dir: t.TempDir(), Name: "fftaken"})
	if err != nil {
		t.Fatalf("start with its first ports taken: %v", err)
	}
	defer e.Close()
	if calls < 4 {
		t.Errorf("%d free ports asked for, want at least 4 (client and peer, twice)", calls)
	}
	for _, l := range taken {
		if e.Endpoint == "http://"+l.Addr().String() {
			t.Errorf("endpoint %s is the taken port", e.Endpoint)
		}
	}
}
