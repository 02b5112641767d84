// The lab's stand-in for etcd-wrapper (main.go): the standard library only, built offline by
// src/devcluster/etcd-cluster/etcd-wrapper-image.ts.
module opstask/testbin/etcd-wrapper-lab

go 1.25.0
