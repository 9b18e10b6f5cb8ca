//go:build !gendocs

package main

import "github.com/spf13/cobra"

// buildTimeCommands is empty in the shipped binary; see gendocs.go.
func buildTimeCommands() []*cobra.Command { return nil }
