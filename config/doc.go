// Package config reads what a node is supposed to have: Slurm's own configuration (slurm.conf,
// gres.conf, hostlists) and nodecheck.toml. Its parsers are pure (bytes in, values out) and
// never read hardware; callers open files.
package config
