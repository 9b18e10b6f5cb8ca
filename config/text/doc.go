// Package text holds the few string helpers every package shares: the one did-you-mean for
// typos, the one way to make outside text fit one line, and the one plural. It imports nothing
// from the module.
package text
