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
