package bgp

import (
	"context"
	"fmt"
	"time"

	api "github.com/osrg/gobgp/v4/api"
)

// gracefulRestart is every session's graceful restart (RFC 4724) capability: the
// node keeps forwarding while its process restarts (its XDP program and FIB outlive
// it), so it asks its peers to keep its routes for the restart time, and helps
// peers that restart. While the speaker is Restarting, its OPENs say so (restart
// state and forwarding-preserved bits) and it defers sending until every neighbour
// has sent End-of-RIB, or the restart time passes.
func (s *Speaker) gracefulRestart() *api.GracefulRestart {
	secs := uint32(s.restartTime / time.Second)
	return &api.GracefulRestart{Enabled: true, RestartTime: secs, DeferralTime: secs,
		LocalRestarting: s.restarting.Load(), LonglivedEnabled: s.longLived > 0}
}

// restartFamilies enables graceful restart (and long-lived graceful restart, when
// configured) for each family of a session: the capability's per-family tuples,
// which carry the forwarding-preserved bit.
func (s *Speaker) restartFamilies(afis []*api.AfiSafi) {
	for _, a := range afis {
		a.MpGracefulRestart = &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: true}}
		if s.longLived > 0 {
			a.LongLivedGracefulRestart = &api.LongLivedGracefulRestart{Config: &api.LongLivedGracefulRestartConfig{
				Enabled: true, RestartTime: uint32(s.longLived / time.Second)}}
		}
	}
}

// RestartDone ends this speaker's restart: its peers get its routes and End-of-RIB
// (and sweep what it did not send), and sessions added from now on (mesh peers of
// members that join later) no longer claim a restart. Call it once the FIB is
// complete and what the node originates is announced.
func (s *Speaker) RestartDone(ctx context.Context) error {
	if !s.restarting.Swap(false) {
		return nil
	}
	if err := s.srv.ReleaseRestartSync(ctx); err != nil {
		return fmt.Errorf("bgp: end the restart's selection deferral: %w", err)
	}
	return nil
}

// Restarting says whether the speaker started as a restarting speaker and has not
// been told RestartDone.
func (s *Speaker) Restarting() bool { return s.restarting.Load() }
