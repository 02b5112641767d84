//go:build tools

// Keeps etcd-druid's command in this wrapper's module graph (scripts/testbin builds
// github.com/gardener/etcd-druid/cmd from it); never compiled into anything.
package tools

import _ "github.com/gardener/etcd-druid/cmd"
