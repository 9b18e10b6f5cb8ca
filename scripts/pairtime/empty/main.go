// Command empty is the baseline of scripts/pairtime: a Go program that does nothing, so that
// its time is the Go runtime's start and exit on this machine.
package main

func main() {}
