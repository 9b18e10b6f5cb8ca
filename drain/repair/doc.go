// Package repair closes the loop from a drain to a node back in service (docs/repairs.md):
// in a health run, on a node nodecheck drained that runs no job, it takes the cheapest
// remedy the failures name (reset the GPUs; when a reset is refused, fails or does not
// help, or the remedy is a reboot, ask Slurm to reboot the node with `scontrol reboot
// ASAP nextstate=DOWN`), keeps the node out of service under nodecheck's reason until
// passes_to_resume health runs in a row found the fault gone, escalates to "nodecheck:
// service: ..." after too many repairs of one GPU or of the node, and keeps at most
// max_repairing nodes of the cluster in repair at once.
//
// Gather, then judge: Decide (policy.go) is a pure function of plain values (the node's state
// and reason as Slurm shows them, drain's count of clean runs, the run's failures with their
// remedies, the repair record, the jobs on the node and the cluster's count of nodes in
// repair); Apply (apply.go) gathers those and acts through injected parts (drain's Slurm
// client with squeue and scontrol reboot, the reset runner, the record in the state
// directory). It imports drain and config, never checks: the CLI hands it the run's failures
// as plain Faults, as it does for drain.
//
// A node's repair is read from two records that survive a reboot: Slurm's reason, where a
// repair appends drain.RepairTag to nodecheck's own drain reason (and slurmctld its reboot
// words), and the repair record (repair.json in the state directory), whose last entry is the
// repair under way.
package repair
