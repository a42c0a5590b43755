package server

import (
	"context"
	"io"
	"os"
	"testing"

	api "github.com/osrg/gobgp/v4/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestGRPCListPeerHidesPassword: a peer's TCP-MD5 password is configured through the
// API but never returned by it, for a peer or a peer group.
func TestGRPCListPeerHidesPassword(t *testing.T) {
	dir, err := os.MkdirTemp("", "gobgp-grpc-password-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	addr := "unix://" + dir + "/gobgp.sock"
	s := NewBgpServer(GrpcListenAddress(addr))
	go s.Serve()
	defer s.Stop()
	ctx := context.Background()
	if err := s.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: 1, RouterId: "1.1.1.1", ListenPort: -1}}); err != nil {
		t.Fatal(err)
	}
	const secret = "s3cret-md5"
	if err := s.AddPeerGroup(ctx, &api.AddPeerGroupRequest{PeerGroup: &api.PeerGroup{Conf: &api.PeerGroupConf{PeerGroupName: "g", PeerAsn: 2, AuthPassword: secret}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
		Conf: &api.PeerConf{NeighborAddress: "192.0.2.2", PeerAsn: 2, AuthPassword: secret}, Transport: &api.Transport{PassiveMode: true}}}); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := api.NewGoBgpServiceClient(conn)
	peers, err := client.ListPeer(ctx, &api.ListPeerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		r, err := peers.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		if r.Peer.Conf.AuthPassword != "" {
			t.Errorf("ListPeer returned peer %s's password %q", r.Peer.Conf.NeighborAddress, r.Peer.Conf.AuthPassword)
		}
	}
	if n != 1 {
		t.Errorf("ListPeer listed %d peers, want 1", n)
	}
	groups, err := client.ListPeerGroup(ctx, &api.ListPeerGroupRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		r, err := groups.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.PeerGroup.Conf.AuthPassword != "" {
			t.Errorf("ListPeerGroup returned group %s's password %q", r.PeerGroup.Conf.PeerGroupName, r.PeerGroup.Conf.AuthPassword)
		}
	}
	// In process, the embedder still reads its own configuration.
	var inproc string
	if err := s.ListPeer(ctx, &api.ListPeerRequest{Address: "192.0.2.2"}, func(p *api.Peer) { inproc = p.Conf.AuthPassword }); err != nil {
		t.Fatal(err)
	}
	if inproc != secret {
		t.Errorf("in process, ListPeer gave %q, want the configured password", inproc)
	}
}
