// Command kwok-stages prints the KWOK Stage objects the local cluster runs with: KWOK's own "fast"
// node and pod stages and its Lease-based node heartbeat, taken from the KWOK release this module pins
// (they are embedded in its packages), so they always match the kwok binary built beside them; and
// nuo's own two stages for Job pods (the YAML files beside this one), in place of KWOK's pod-complete.
package main

import (
	_ "embed"
	"fmt"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	heartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

// podComplete is KWOK's fast pod-complete with a delay read from the pod's annotations (as KWOK's
// general stage reads it) and without the pods that job-fail fails: the two never match one pod.
//
//go:embed pod-complete.yaml
var podComplete string

// jobFail fails a Job's pod labelled sim.nuo.dev/job-outcome=fail, as a container exiting with 1 would.
//
//go:embed job-fail.yaml
var jobFail string

func main() {
	docs := []string{
		nodefast.DefaultNodeInit,
		heartbeat.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady,
		podComplete,
		jobFail,
		podfast.DefaultPodDelete,
	}
	for i, doc := range docs {
		if i > 0 {
			fmt.Println("---")
		}
		fmt.Println(strings.TrimSpace(doc))
	}
}
