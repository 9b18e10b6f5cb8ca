// Package drain decides and changes a Slurm node's state: who may drain or resume and the hook
// exit rules (policy.go), the node state table (stance.go), drain and resume on evidence
// (decide.go, evidence.go, apply.go), max_drained under concurrency (limit.go,
// apply_limit.go), the lock and drain.json in a trusted state directory (state.go), and the
// scontrol and sinfo client with its parsers (scontrol.go, node.go). It takes plain inputs (a
// node name, a mode, each check's status) and never reads hardware or imports checks: the CLI
// wires a run's report to it.
package drain
