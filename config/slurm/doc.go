// Package slurm reads Slurm's own formats, purely (bytes in, values out; callers open files):
// hostlists, slurm.conf, gres.conf, topology.conf, their shared syntax scanner, ibnetdiscover
// captures, and the lint that checks them against each other and against the fabric. It never
// imports config (nodecheck.toml).
package slurm
