package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/internal/testutil"
)

func startMember(t *testing.T, name string, key []byte, profile string) *Members {
	t.Helper()
	m, err := StartMembers(MembersConfig{Name: name, BindAddress: "127.0.0.1:0", Key: key, Profile: profile,
		Meta: Meta{BGPAddress: "10.0.0." + name[1:], ASN: 65000, APIAddress: "127.0.0.1:9464", Version: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	return m
}

func state(m *Members, name string) MemberState {
	for _, v := range m.View() {
		if v.Name == name {
			return v.State
		}
	}
	return ""
}

// TestMembersTuned: three members with a gossip key see each other with their
// metadata; a crashed member (no leave) is marked dead by both others within 3 s, a
// leaving one is marked left; a member with another key cannot join.
func TestMembersTuned(t *testing.T) {
	key := []byte("0123456789abcdef")
	m1, m2, m3 := startMember(t, "n1", key, ProfileTuned), startMember(t, "n2", key, ProfileTuned), startMember(t, "n3", key, ProfileTuned)
	for _, m := range []*Members{m2, m3} {
		if _, err := m.Join([]string{m1.Addr()}); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, "three alive members everywhere", func() bool {
		return m1.Alive() == 3 && m2.Alive() == 3 && m3.Alive() == 3
	})
	for _, v := range m1.View() {
		if v.State != Alive || v.Meta.ASN != 65000 || v.Meta.BGPAddress != "10.0.0."+v.Name[1:] || v.Meta.Version != "test" {
			t.Errorf("m1 sees %+v", v)
		}
	}
	select {
	case <-m1.Changes():
	default:
		t.Error("no change signalled")
	}

	crash := time.Now()
	if err := m3.Shutdown(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "n3 dead on n1 and n2", func() bool { return state(m1, "n3") == Dead && state(m2, "n3") == Dead })
	if d := time.Since(crash); d > 3*time.Second {
		t.Errorf("n3 marked dead %s after its crash, want within 3 s (tuned)", d)
	}
	t.Logf("crash detected by both in %s", time.Since(crash).Round(time.Millisecond))

	if err := m2.Leave(time.Second); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "n2 left on n1", func() bool { return state(m1, "n2") == Left })

	stranger := startMember(t, "n4", []byte("fedcba9876543210"), ProfileTuned)
	if _, err := stranger.Join([]string{m1.Addr()}); err == nil {
		t.Error("a member with another gossip key joined")
	}
	time.Sleep(500 * time.Millisecond)
	if s := state(m1, "n4"); s != "" {
		t.Errorf("n1 sees the stranger as %q", s)
	}
}

func TestMembersRejectBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  MembersConfig
		want string
	}{
		{MembersConfig{Name: "n1", BindAddress: "127.0.0.1:0", Key: []byte("short")}, "gossip key of 5 bytes"},
		{MembersConfig{Name: "n1", BindAddress: "127.0.0.1", Key: nil}, "write host:port"},
		{MembersConfig{Name: "n1", BindAddress: "127.0.0.1:0", Profile: "wan"}, `profile "wan"`},
		{MembersConfig{Name: "n/1", BindAddress: "127.0.0.1:0"}, "node name"},
		{MembersConfig{Name: "n1", BindAddress: "127.0.0.1:0", Meta: Meta{APIAddress: strings.Repeat("x", 600)}}, "at most 512"},
	} {
		_, err := StartMembers(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", tc.cfg, err, tc.want)
		}
	}
}
