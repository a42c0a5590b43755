package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/etcd/api/v3/authpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// RootUser is etcd's superuser: its client certificate's common name is "root".
const RootUser = "root"

// Auth is what EnableAuth sets up on an etcd whose clients present certificates
// (--client-cert-auth: with auth on, a certificate's common name is its user).
type Auth struct {
	// Cluster names the fleet: its role may read and write /fibfleet/<Cluster>/ and
	// nothing else.
	Cluster string
	// Users are the fleet's users (the nodes', ctl's), each given the fleet's role
	// alone; they have no password, so only a certificate logs them in.
	Users []string
}

// RoleName is the fleet's etcd role.
func RoleName(cluster string) string { return "fibfleet-" + cluster }

// EnableAuth turns etcd's authentication on with a role that can touch the fleet's
// keys only, for the given users, and root (no password: the client certificate
// named root logs in). It can run any number of times: each step is skipped where
// etcd already has it, the role's permissions are set to exactly the fleet's prefix,
// and the users hold that role alone (a rename of the fleet leaves no way into the
// old name's keys). cli must log in as root (before auth is on, any client the CA
// signed may).
func EnableAuth(ctx context.Context, cli *clientv3.Client, a Auth) error {
	if err := CheckName(a.Cluster); err != nil {
		return fmt.Errorf("cluster: etcd auth: %w", err)
	}
	if len(a.Users) == 0 {
		return errors.New("cluster: etcd auth: name the fleet's users (the nodes' and ctl's certificates' common names)")
	}
	role := RoleName(a.Cluster)
	key := Prefix(a.Cluster)
	end := clientv3.GetPrefixRangeEnd(key)
	if _, err := cli.RoleAdd(ctx, role); err != nil && !errors.Is(err, rpctypes.ErrRoleAlreadyExist) {
		return fmt.Errorf("cluster: etcd auth: add role %s: %w", role, err)
	}
	got, err := cli.RoleGet(ctx, role)
	if err != nil {
		return fmt.Errorf("cluster: etcd auth: read role %s: %w", role, err)
	}
	have := false
	for _, p := range got.Perm {
		if string(p.Key) == key && string(p.RangeEnd) == end && p.PermType == authpb.READWRITE {
			have = true
			continue
		}
		if _, err := cli.RoleRevokePermission(ctx, role, string(p.Key), string(p.RangeEnd)); err != nil {
			return fmt.Errorf("cluster: etcd auth: revoke %q from role %s: %w", p.Key, role, err)
		}
	}
	if !have {
		if _, err := cli.RoleGrantPermission(ctx, role, key, end, clientv3.PermissionType(clientv3.PermReadWrite)); err != nil {
			return fmt.Errorf("cluster: etcd auth: grant %s to role %s: %w", key, role, err)
		}
	}
	users := append([]string{RootUser}, a.Users...)
	slices.Sort(users)
	for _, u := range slices.Compact(users) {
		if _, err := cli.UserAddWithOptions(ctx, u, "", &clientv3.UserAddOptions{NoPassword: true}); err != nil && !errors.Is(err, rpctypes.ErrUserAlreadyExist) {
			return fmt.Errorf("cluster: etcd auth: add user %s: %w", u, err)
		}
		r := role
		if u == RootUser {
			r = "root"
		}
		if _, err := cli.UserGrantRole(ctx, u, r); err != nil {
			return fmt.Errorf("cluster: etcd auth: grant role %s to %s: %w", r, u, err)
		}
		if u == RootUser {
			continue
		}
		// The fleet's role alone: a role of the fleet's former name goes.
		got, err := cli.UserGet(ctx, u)
		if err != nil {
			return fmt.Errorf("cluster: etcd auth: read user %s: %w", u, err)
		}
		for _, other := range got.Roles {
			if other == r {
				continue
			}
			if _, err := cli.UserRevokeRole(ctx, u, other); err != nil {
				return fmt.Errorf("cluster: etcd auth: revoke role %s from %s: %w", other, u, err)
			}
		}
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		return fmt.Errorf("cluster: etcd auth: enable: %w", err)
	}
	return nil
}
