// Module of the VM nodes' sandbox ("pause") container: no public image registry is reachable, so the
// image containerd needs for every pod is built here.
module nuo.dev/tools/vm/pause

go 1.26.0
