//go:build tools

// Package tools pins Karpenter's KWOK provider so `go mod tidy` keeps its dependencies.
package tools

import _ "sigs.k8s.io/karpenter/kwok"
