// Package drain reads and changes a Slurm node's state through scontrol and sinfo: the drain
// reason, its ownership, draining, resuming after consecutive clean runs, the max_drained
// safety limit and the lock that keeps overlapping runs apart. It takes plain inputs (a node
// name, a mode, a list of failures) and never reads hardware or imports checks: the CLI
// wires a run's report to it.
package drain
