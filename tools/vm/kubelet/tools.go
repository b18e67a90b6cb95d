//go:build tools

// Package tools pins the commands built from this module so `go mod tidy` keeps their dependencies.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
