package text

// Plural returns one when n is 1 and many otherwise: Plural(n, "file", "files"),
// Plural(n, "it", "them").
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
