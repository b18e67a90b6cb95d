// CLUO (CoreOS's container-linux-update-operator) pinned to its last release: its deploy manifests, as it
// ships them, are what the tests install (manifests.ts). Only downloaded, never built: see lock/main.go.
module nuo.dev/tools/cluo

go 1.26.0

require github.com/coreos/container-linux-update-operator v0.7.0
