// Command lock holds CLUO's update-operator's leader-election lock as CLUO's operator holds it: client-go's
// ConfigMapLock (CLUO 0.4 to 0.7) or EndpointsLock (before 0.4), named container-linux-update-operator-lock,
// with the timings of CLUO's operator.go (withLeaderElection: lease 90 s, renew deadline 60 s, retry 30 s),
// never released on exit. CLUO's operator itself does not build as a Go module (its dependencies are
// pinned by glide to 2017 commits), so nuo's tests run its lock code, client-go's, through this command.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

const lease = 90 * time.Second

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	kind := flag.String("kind", "configmap", "configmap (CLUO 0.4 to 0.7) or endpoints (before 0.4)")
	namespace := flag.String("namespace", "reboot-coordinator", "the namespace CLUO's operator runs in")
	name := flag.String("name", "container-linux-update-operator-lock", "the lock's name")
	identity := flag.String("identity", "", "the holder identity (CLUO's operator: its hostname)")
	flag.Parse()
	if *identity == "" {
		host, err := os.Hostname()
		if err != nil {
			log.Fatalf("hostname: %v", err)
		}
		*identity = host
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("kubeconfig %s: %v", *kubeconfig, err)
	}
	client := kubernetes.NewForConfigOrDie(config)
	meta := metav1.ObjectMeta{Namespace: *namespace, Name: *name}
	lockConfig := resourcelock.ResourceLockConfig{Identity: *identity}
	var lock resourcelock.Interface
	switch *kind {
	case "configmap":
		lock = &resourcelock.ConfigMapLock{ConfigMapMeta: meta, Client: client.CoreV1(), LockConfig: lockConfig}
	case "endpoints":
		lock = &resourcelock.EndpointsLock{EndpointsMeta: meta, Client: client.CoreV1(), LockConfig: lockConfig}
	default:
		log.Fatalf("-kind %q: want configmap or endpoints", *kind)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: lease,
		RenewDeadline: lease * 2 / 3,
		RetryPeriod:   lease / 3,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { log.Printf("leading as %s", *identity) },
			OnStoppedLeading: func() { log.Printf("stopped leading") },
		},
	})
}
