// Package config is nodecheck.toml: its model and defaults, the strict decode, validation and
// [[group]] overrides; and the one run Mode with its budget lookup. Slurm's own files are
// config/slurm's job.
package config
