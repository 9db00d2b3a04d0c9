"""The operator as a process, driven through a user's doors: `harness` (kubectl, the
simulator's HTTP APIs, processes) and `local` (the emulator, the simulator and operators
started as local processes)."""
