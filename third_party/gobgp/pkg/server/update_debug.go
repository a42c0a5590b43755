package server

import (
	"context"
	"log/slog"

	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

// debugOn says whether l logs at debug level. A record made for every UPDATE is
// built only then: its attributes box the message's slices into slog values and
// the variadic list escapes, built even when the handler drops the record (for a
// full table sent to two peers, 177 MB of the sender's garbage; 75 MB of a
// receiver's).
func debugOn(l *slog.Logger) bool {
	return l.Enabled(context.Background(), slog.LevelDebug)
}

// logReceivedUpdate logs an UPDATE read from a peer, at debug level.
func logReceivedUpdate(l *slog.Logger, u *bgp.BGPUpdate) {
	if !debugOn(l) {
		return
	}
	l.Debug("received update",
		slog.Any("nlri", u.NLRI),
		slog.Any("withdrawals", u.WithdrawnRoutes),
		slog.Any("path_attributes", u.PathAttributes))
}

// logSentUpdate logs an UPDATE written to a peer, at debug level.
func logSentUpdate(l *slog.Logger, state bgp.FSMState, u *bgp.BGPUpdate) {
	if !debugOn(l) {
		return
	}
	l.Debug("sent update",
		slog.String("State", state.String()),
		slog.Any("nlri", u.NLRI),
		slog.Any("withdrawals", u.WithdrawnRoutes),
		slog.Any("attributes", u.PathAttributes))
}

// logSentSharedUpdate logs an UPDATE written as another member of its update
// group packed it (its bytes alone are kept), parsed again only at debug level.
func logSentSharedUpdate(l *slog.Logger, state bgp.FSMState, b []byte, option *bgp.MarshallingOption) {
	if !debugOn(l) {
		return
	}
	m, err := bgp.ParseBGPMessage(b, option)
	if err != nil {
		l.Debug("sent update", slog.String("State", state.String()), slog.Int("bytes", len(b)), slog.String("Error", err.Error()))
		return
	}
	logSentUpdate(l, state, m.Body.(*bgp.BGPUpdate))
}
