// Module of the update_engine stand-in the VM nodes run for FLUO's update-agent (main.go says what it
// plays and from which source).
module nuo.dev/tools/vm/update-engine

go 1.26.0

require github.com/godbus/dbus/v5 v5.1.0
