// Command update-engine stands in for Flatcar's update_engine on a VM node, for FLUO's update-agent:
// the one part of a Flatcar host a Debian VM cannot run. Written from update_engine's source
// (github.com/flatcar/update_engine: src/update_engine/update_engine.xml, update_attempter.cc,
// com.coreos.update1.conf), not from what nuo expects of it:
//
//   - It owns com.coreos.update1 on the system bus and serves com.coreos.update1.Manager at
//     /com/coreos/update1: GetStatus -> (x last_checked_time, d progress, s current_operation,
//     s new_version, x new_size), AttemptUpdate, ResetStatus; every status change is broadcast as the
//     StatusUpdate signal with the same five values (BroadcastStatus).
//   - It starts in UPDATE_STATUS_UPDATED_NEED_REBOOT when /var/run/update_engine_autoupdate_completed
//     exists (an update applied in this boot; the marker lives on tmpfs, so a reboot clears it), with
//     new_version "0.0.0" as a restarted update_engine reports it, else UPDATE_STATUS_IDLE.
//   - AttemptUpdate does nothing unless IDLE; otherwise it checks (CHECKING_FOR_UPDATE), and when the
//     update server offers a version other than the running one: UPDATE_AVAILABLE, DOWNLOADING with
//     progress, VERIFYING, FINALIZING, then it writes the marker and reports UPDATED_NEED_REBOOT; with
//     nothing offered it goes back to IDLE.
//   - ResetStatus from UPDATED_NEED_REBOOT returns to IDLE, new_version "0.0.0", and removes the marker.
//
// What it does not do: talk to an Omaha server (the offer is a file the test writes: the version the
// server would answer with), download or verify a payload, or check on a timer (update_engine checks
// every 45 minutes or so; here only AttemptUpdate checks, as `update_engine_client -update` asks).
// It also plays the boot loader's part at start: an update applied before the last reboot is the
// version this boot runs, written to the os-release file FLUO's agent reads.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
)

const (
	busName    = "com.coreos.update1"
	objPath    = dbus.ObjectPath("/com/coreos/update1")
	iface      = "com.coreos.update1.Manager"
	marker     = "/var/run/update_engine_autoupdate_completed"
	zero       = "0.0.0"
	idle       = "UPDATE_STATUS_IDLE"
	needReboot = "UPDATE_STATUS_UPDATED_NEED_REBOOT"
)

// status is what GetStatus answers and StatusUpdate carries.
type status struct {
	lastChecked int64
	progress    float64
	operation   string
	newVersion  string
	newSize     int64
}

type engine struct {
	mu      sync.Mutex
	conn    *dbus.Conn
	s       status
	dir     string
	step    time.Duration
	running string
}

// GetStatus answers with the current status.
func (e *engine) GetStatus() (int64, float64, string, string, int64, *dbus.Error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.s.lastChecked, e.s.progress, e.s.operation, e.s.newVersion, e.s.newSize, nil
}

// AttemptUpdate starts a check unless one is under way; with an update waiting for its reboot it only
// broadcasts that status again (update_engine pings its server then and notifies, Update()).
func (e *engine) AttemptUpdate() *dbus.Error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.s.operation == needReboot {
		e.set(func(*status) {})
		return nil
	}
	if e.s.operation != idle {
		return nil
	}
	e.set(func(s *status) { s.operation = "UPDATE_STATUS_CHECKING_FOR_UPDATE" })
	go e.update()
	return nil
}

// ResetStatus undoes an applied update's NEED_REBOOT, without a StatusUpdate (update_engine sets its
// status there directly, not through SetStatusAndNotify); any other state but IDLE refuses.
func (e *engine) ResetStatus() *dbus.Error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch e.s.operation {
	case idle:
		return nil
	case needReboot:
		e.s.operation, e.s.newVersion, e.s.newSize = idle, zero, 0
		if err := os.Remove(marker); err != nil && !errors.Is(err, os.ErrNotExist) {
			return dbus.MakeFailedError(err)
		}
		return nil
	default:
		return dbus.MakeFailedError(fmt.Errorf("reset not allowed in %s", e.s.operation))
	}
}

// set changes the status and broadcasts it; e.mu is held.
func (e *engine) set(change func(*status)) {
	change(&e.s)
	s := e.s
	if err := e.conn.Emit(objPath, iface+".StatusUpdate", s.lastChecked, s.progress, s.operation, s.newVersion, s.newSize); err != nil {
		log.Printf("StatusUpdate not sent: %v", err)
	}
	log.Printf("status %s progress %.2f new_version %q", s.operation, s.progress, s.newVersion)
}

func (e *engine) to(change func(*status)) {
	time.Sleep(e.step)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.set(change)
}

// update plays one check and, when a version is offered, its download and installation.
func (e *engine) update() {
	offer := readTrimmed(filepath.Join(e.dir, "offer"))
	now := time.Now().Unix()
	if offer == "" || offer == e.running {
		e.to(func(s *status) { s.lastChecked, s.operation = now, idle })
		return
	}
	const size = 300 << 20
	e.to(func(s *status) {
		s.lastChecked, s.operation, s.newVersion, s.newSize = now, "UPDATE_STATUS_UPDATE_AVAILABLE", offer, size
	})
	for _, p := range []float64{0, 0.5, 1} {
		e.to(func(s *status) { s.operation, s.progress = "UPDATE_STATUS_DOWNLOADING", p })
	}
	e.to(func(s *status) { s.operation = "UPDATE_STATUS_VERIFYING" })
	e.to(func(s *status) { s.operation = "UPDATE_STATUS_FINALIZING" })
	if err := writeFile(filepath.Join(e.dir, "staged"), offer); err != nil {
		log.Printf("update not staged: %v", err)
		e.to(func(s *status) { *s = status{lastChecked: now, operation: idle, newVersion: zero} })
		return
	}
	if err := writeFile(marker, ""); err != nil {
		log.Printf("marker not written: %v", err)
	}
	e.to(func(s *status) { s.operation, s.progress = needReboot, 0 })
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// writeFile writes whole and in place by rename, synced, so a reboot right after keeps it.
func writeFile(path, content string) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// boot is the boot loader's part: a version staged before the last reboot (no marker in this boot)
// is the one running now. Returns the running version.
func boot(dir, initial string) (string, error) {
	running := readTrimmed(filepath.Join(dir, "version"))
	if running == "" {
		running = initial
	}
	staged := readTrimmed(filepath.Join(dir, "staged"))
	if _, err := os.Stat(marker); staged != "" && errors.Is(err, os.ErrNotExist) {
		running = staged
		if err := os.Remove(filepath.Join(dir, "staged")); err != nil {
			return "", err
		}
	}
	return running, writeFile(filepath.Join(dir, "version"), running)
}

// osRelease is Flatcar's /etc/os-release for `version`: FLUO's agent reads ID and VERSION.
func osRelease(version string) string {
	return strings.Join([]string{
		`NAME="Flatcar Container Linux by Kinvolk"`,
		"ID=flatcar",
		"ID_LIKE=coreos",
		"VERSION=" + version,
		"VERSION_ID=" + version,
		`PRETTY_NAME="Flatcar Container Linux by Kinvolk ` + version + `"`,
		"",
	}, "\n")
}

func main() {
	dir := flag.String("state-dir", "/var/lib/update-engine", "where the offered, staged and running versions are kept")
	release := flag.String("os-release", "/var/lib/update-engine/os-release", "the os-release file to write the running version to")
	initial := flag.String("initial-version", "4152.2.0", "the version running before any update")
	step := flag.Duration("step", 200*time.Millisecond, "time between two status changes of an update")
	flag.Parse()
	log.SetFlags(0)
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		log.Fatalf("state directory: %v", err)
	}
	running, err := boot(*dir, *initial)
	if err != nil {
		log.Fatalf("boot: %v", err)
	}
	if err := writeFile(*release, osRelease(running)); err != nil {
		log.Fatalf("os-release: %v", err)
	}
	conn, err := dbus.ConnectSystemBus()
	if err != nil {
		log.Fatalf("system bus: %v", err)
	}
	e := &engine{conn: conn, dir: *dir, step: *step, running: running, s: status{operation: idle, newVersion: zero}}
	if _, err := os.Stat(marker); err == nil {
		e.s.operation = needReboot
	}
	if err := conn.Export(e, objPath, iface); err != nil {
		log.Fatalf("export: %v", err)
	}
	reply, err := conn.RequestName(busName, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		log.Fatalf("owning %s: reply %v, %v", busName, reply, err)
	}
	log.Printf("running %s, status %s", running, e.s.operation)
	select {}
}
