package slurm

import "bytes"

// fabricScanner reads the tokens of one line.
type fabricScanner struct {
	b []byte
	i int
}

func (s *fabricScanner) blanks() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t') {
		s.i++
	}
}

func (s *fabricScanner) rest() []byte { return s.b[s.i:] }

func (s *fabricScanner) lit(l string) bool {
	if len(s.b)-s.i >= len(l) && string(s.b[s.i:s.i+len(l)]) == l {
		s.i += len(l)
		return true
	}
	return false
}

// word returns the next blank-separated word.
func (s *fabricScanner) word() string {
	s.blanks()
	j := s.i
	for j < len(s.b) && s.b[j] != ' ' && s.b[j] != '\t' {
		j++
	}
	w := string(s.b[s.i:j])
	s.i = j
	return w
}

// int reads a decimal number after blanks.
func (s *fabricScanner) int() (int, bool) {
	s.blanks()
	n, j := 0, s.i
	for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' && j-s.i < 9 {
		n = n*10 + int(s.b[j]-'0')
		j++
	}
	if j == s.i {
		return 0, false
	}
	s.i = j
	return n, true
}

// hex reads 1 to 16 hex digits, after "0x" when prefixed is true.
func (s *fabricScanner) hex(prefixed bool) (uint64, bool) {
	if prefixed && !s.lit("0x") {
		return 0, false
	}
	var v uint64
	j := s.i
	for j < len(s.b) && j-s.i < 16 {
		c := s.b[j]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			goto done
		}
		v = v<<4 | uint64(d)
		j++
	}
done:
	if j == s.i {
		return 0, false
	}
	s.i = j
	return v, true
}

// bracketInt reads "[N]".
func (s *fabricScanner) bracketInt() (int, bool) {
	if !s.lit("[") {
		return 0, false
	}
	n, ok := s.int()
	if !ok || n > maxFabricPort || !s.lit("]") {
		return 0, false
	}
	return n, true
}

// ext skips -g's "[ext N]" external port number.
func (s *fabricScanner) ext() {
	if s.i < len(s.b) && s.b[s.i] == '[' && bytes.HasPrefix(s.b[s.i:], []byte("[ext ")) {
		if j := bytes.IndexByte(s.b[s.i:], ']'); j >= 0 {
			s.i += j + 1
		}
	}
}

// parenGUID reads "(<hex>)" after blanks, or nothing.
func (s *fabricScanner) parenGUID() (uint64, bool) {
	save := s.i
	s.blanks()
	if !s.lit("(") {
		s.i = save
		return 0, false
	}
	g, ok := s.hex(false)
	if !ok || !s.lit(")") {
		s.i = save
		return 0, false
	}
	return g, true
}

// quotedName reads `"S-0008f10500200b50"` (or H-, R-) after blanks.
func (s *fabricScanner) quotedName() (FabricNodeType, uint64, bool) {
	s.blanks()
	if !s.lit(`"`) || s.i+2 > len(s.b) || s.b[s.i+1] != '-' {
		return 0, 0, false
	}
	var t FabricNodeType
	switch s.b[s.i] {
	case 'S':
		t = FabricSwitch
	case 'H':
		t = FabricCA
	case 'R':
		t = FabricRouter
	default:
		return 0, 0, false
	}
	s.i += 2
	g, ok := s.hex(false)
	if !ok || !s.lit(`"`) {
		return 0, 0, false
	}
	return t, g, true
}
