// Command sim-init is PID 1 of a simulated host's kured container, standing for the host's systemd as
// kured sees it: it runs the command it is given (kured) and takes SIGRTMIN+5, systemd's reboot signal
// that kured's --reboot-method=signal sends to PID 1, as the host's reboot. It reports that by exiting
// with RebootExit, so the simulation reboots the host; any other end is the command's own exit status.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// RebootExit is the exit status that means "the host was asked to reboot" (the simulation reads it).
const RebootExit = 100

// sigRtMinPlus5 is SIGRTMIN+5 as glibc numbers it (SIGRTMIN is 34), the signal kured sends by default.
const sigRtMinPlus5 = syscall.Signal(34 + 5)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "sim-init: usage: sim-init COMMAND [ARG...]")
		os.Exit(2)
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, sigRtMinPlus5, syscall.SIGTERM, syscall.SIGINT)

	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "sim-init: cannot start %s: %v\n", os.Args[1], err)
		os.Exit(127)
	}
	exited := make(chan int, 1)
	go func() {
		_ = cmd.Wait()
		exited <- cmd.ProcessState.ExitCode()
	}()

	for {
		select {
		case code := <-exited:
			os.Exit(code)
		case sig := <-signals:
			if sig == sigRtMinPlus5 {
				fmt.Fprintln(os.Stderr, "sim-init: SIGRTMIN+5 received: the host reboots")
				_ = cmd.Process.Kill()
				os.Exit(RebootExit)
			}
			// Termination is passed on; the command's exit ends this process.
			_ = cmd.Process.Signal(sig)
		}
	}
}
