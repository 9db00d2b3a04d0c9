"""The sandbox: the operator on an embedded Kubernetes emulator (or, with `--kube real`, a real
kube-apiserver built from source) and the Baseten simulator.

`command` is `baseten-operator sandbox`'s flags (`settings` their defaults) and
`run_sandbox`, which imports `session` (the run itself) only when the sandbox runs: the
command line builds every command's flags, `run`'s process included; `stack` starts the
API server, the simulator and the real operator (`main.build_operator`) in one process;
`cluster` installs the CRD, the API-key Secret and the samples; `display`, `events` and
`console` show the models converging; `playbook` prints ready-made commands; `tour` is the
narrated demo; `seed` the simulated account's starting state; `samples/` (package data) the
copy of config/samples it applies, so that an installed sandbox needs no checkout.

At the top of the stack: it may import anything. Nothing else of the package imports it
except `cli`, for the `sandbox` subcommand (which says how to install it where it is absent:
the operator image leaves it out).
"""

__all__ = ["command"]
