"""Run infrastructure below the phases: where block steps execute (`executors`), the Kubernetes
rendering of a deployment (`k8s`), the `make run` stale plan (`planning`), and the recovery of
runs whose process is gone (`run_recovery`, `run_interrupts`). Nothing here knows a phase."""
