"""The chaos soak (`make soak`, `python -m testsupport.soak.run`): `stack` starts its
processes, `faults` injects faults throughout, `checks` reads the verdicts, `run` is the
scenario and its command line."""
