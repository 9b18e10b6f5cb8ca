// Package validate exercises a node's hardware on demand (`nodecheck validate`): DCGM's
// diagnostic, nccl-tests, nvbandwidth, ib_write_bw and gpu_burn run as subprocesses, their
// real output is parsed, and each figure is judged against a per-model floor with its source
// (docs/validation.md). It owns the levels, the floors table, the tools' parsers and the
// report's JSON contract. It never runs in a prolog or epilog, never on a node with a user's
// processes on its GPUs, and never calls scontrol: the fleet side decides what a result means
// for Slurm.
package validate
