package cluster

import clientv3 "go.etcd.io/etcd/client/v3"

// For the tests of package cluster_test: what a registration's tests look into.

// Lease is the registration's current lease.
func (r *Registration) Lease() clientv3.LeaseID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lease
}

// Crash stops the keep-alive without revoking the lease, as a crash would.
func (r *Registration) Crash() { r.cancel() }
