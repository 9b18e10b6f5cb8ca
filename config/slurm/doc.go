// Package slurm reads Slurm's own formats, purely (bytes in, values out; callers open files):
// hostlists, slurm.conf, gres.conf, their shared syntax scanner, and the lint that checks them
// against each other. It never imports config (nodecheck.toml).
package slurm
