// Package config is nodecheck.toml: its model and defaults, the strict decode, validation and
// [[group]] overrides, generic over the checks' sections (each check keeps its own, beside it,
// and hands them over as a Schema); and the one run Mode with its budget lookup. Slurm's own
// files are config/slurm's job.
package config
