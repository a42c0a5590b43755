package kubesetup_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fibfleet/fibfleet/kubesetup"
)

func TestParseSecrets(t *testing.T) {
	j, err := kubesetup.ParseSecrets([]string{"--namespace=routers", "--label=a=b", "--label=c=d=e", "--ca-secret=ca",
		"--etcd-server-secret=srv", "--etcd-server-name=e-0.x,127.0.0.1", "--etcd-server-name=localhost",
		"--etcd-client=root=r", "--etcd-client=fibfleet-node=n", "--gossip-secret=g"})
	if err != nil {
		t.Fatal(err)
	}
	if j.Namespace != "routers" || j.Labels["a"] != "b" || j.Labels["c"] != "d=e" || j.Plan.CASecret != "ca" || j.Plan.GossipSecret != "g" ||
		j.Plan.Server == nil || strings.Join(j.Plan.Server.Names, " ") != "e-0.x 127.0.0.1 localhost" ||
		len(j.Plan.Clients) != 2 || j.Plan.Clients[1] != (kubesetup.Client{User: "fibfleet-node", Secret: "n"}) {
		t.Errorf("parsed %+v (server %+v)", j, j.Plan.Server)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--gossip-secret=g"}, "--namespace"},
		{[]string{"--namespace=n"}, "nothing to make"},
		{[]string{"--namespace=n", "--label=x", "--gossip-secret=g"}, "key=value"},
		{[]string{"--namespace=n", "--etcd-client=root=r"}, "CA Secret"},
		{[]string{"--namespace=n", "--bogus"}, "bogus"},
		{[]string{"--namespace=n", "--gossip-secret=g", "extra"}, "unexpected"},
		{[]string{"--namespace=n", "--gossip-secret=g", "--etcd-server-name=e"}, "--etcd-server-secret"},
		{[]string{"--namespace=n", "--gossip-seed=old", "--ca-secret=c", "--etcd-client=u=s"}, "gossip seed"},
	} {
		if _, err := kubesetup.ParseSecrets(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

func TestParseEtcdAuth(t *testing.T) {
	j, err := kubesetup.ParseEtcdAuth([]string{"--endpoints=https://e-0:2379,https://e-1:2379", "--ca=/c/ca.crt", "--cert=/c/tls.crt",
		"--key=/c/tls.key", "--cluster=edge", "--user=fibfleet-node", "--user=fibfleet-ctl", "--wait=4m"})
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Etcd.Endpoints) != 2 || j.Etcd.Cert != "/c/tls.crt" || j.Auth.Cluster != "edge" || len(j.Auth.Users) != 2 || j.Wait != 4*time.Minute {
		t.Errorf("parsed %+v", j)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--endpoints=https://e:2379", "--cluster=edge", "--user=u"}, "--ca"},
		{[]string{"--endpoints=https://e:2379", "--ca=c", "--cert=c", "--key=k", "--user=u"}, "--cluster"},
		{[]string{"--endpoints=https://e:2379", "--ca=c", "--cert=c", "--key=k", "--cluster=edge"}, "--user"},
		{[]string{"--ca=c", "--cert=c", "--key=k", "--cluster=edge", "--user=u"}, "client URL"},
	} {
		if _, err := kubesetup.ParseEtcdAuth(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
