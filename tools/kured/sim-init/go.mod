module nuo.dev/tools/kured/sim-init

go 1.26.0
