// Package xidcatalog holds NVIDIA's XID catalog as data: per XID its Resolution Buckets
// (catalog.csv, the spreadsheet's "Catalog" sheet) and the decode of the NVLink5 XIDs 144 to
// 150 by IntrInfo and Error Status (nvlink5.csv, its "XID 144-150 Decode" sheet), with the
// version and source each file's header names. It reads the data and decodes kernel log
// messages; what nodecheck does with an XID is the checks package's policy.
package xidcatalog

import (
	"bufio"
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
)

//go:embed catalog.csv
var catalogCSV string

//go:embed nvlink5.csv
var nvlink5CSV string

// URL is NVIDIA's XID catalog page, whose spreadsheet the data files copy.
const URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"

// Entry is one row of the catalog sheet. Immediate and Investigatory are the Resolution
// Buckets as the catalog spells them (RESET_GPU, RESTART_BM, RESTART_APP, IGNORE, ...); both
// are empty for the XIDs the catalog lists without a bucket (162 and later).
type Entry struct {
	XID                      int
	Mnemonic, Description    string
	Immediate, Investigatory string
}

// Unused reports whether the catalog describes the XID as unused on current GPUs.
func (e Entry) Unused() bool { return e.Description == "Unused" }

// NVLinkRule is one row of the decode sheet: an NVLink5 XID whose IntrInfo matches one of
// the patterns and whose Error Status equals ErrorStatus. Resolution is the Data Center
// Recovery Action (RESET_GPU, IGNORE, or XID_154_EVAL: follow the XID 154 that comes with it).
type NVLinkRule struct {
	XID                    int
	Unit                   string
	IntrInfoV1, IntrInfoV2 string // 32 characters, bit 31 first: '0', '1', or '-' for any
	ErrorStatus            uint32
	Resolution, Action2    string
	Investigatory          string
	Severity               string // Fatal, Non-fatal, Link Fatal, ... as the sheet says
}

// Catalog is the two sheets and the header of each file.
type Catalog struct {
	Entries []Entry // by XID, ascending
	NVLink5 []NVLinkRule
	// Version and Source are the "# version:" and "# source:" header lines of catalog.csv.
	Version, Source string
}

// Load parses the embedded data once. An error means the data files in this build are
// damaged; the caller reports it (TestEmbedded holds that they parse).
var Load = sync.OnceValues(func() (*Catalog, error) {
	return parse(catalogCSV, nvlink5CSV)
})

func parse(cat, nvl string) (*Catalog, error) {
	c := &Catalog{}
	hdr, rows, err := readCSV("catalog.csv", cat, 5)
	if err != nil {
		return nil, err
	}
	c.Version, c.Source = hdr["version"], hdr["source"]
	for _, r := range rows {
		x, err := strconv.Atoi(r.f[0])
		if err != nil || x < 1 || x > 999 {
			return nil, fmt.Errorf("catalog.csv:%d: xid %q: give a number from 1 to 999", r.line, r.f[0])
		}
		if len(c.Entries) > 0 && c.Entries[len(c.Entries)-1].XID >= x {
			return nil, fmt.Errorf("catalog.csv:%d: xid %d: keep the rows in ascending XID order, each once", r.line, x)
		}
		c.Entries = append(c.Entries, Entry{XID: x, Mnemonic: r.f[1], Description: r.f[2], Immediate: r.f[3], Investigatory: r.f[4]})
	}
	_, rows, err = readCSV("nvlink5.csv", nvl, 9)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		x, err := strconv.Atoi(r.f[0])
		if err != nil || x < 144 || x > 150 {
			return nil, fmt.Errorf("nvlink5.csv:%d: xid %q: give 144 to 150", r.line, r.f[0])
		}
		es, err := strconv.ParseUint(r.f[4], 0, 32)
		if err != nil {
			return nil, fmt.Errorf("nvlink5.csv:%d: error_status %q: give a 32-bit hex number such as 0x00000002", r.line, r.f[4])
		}
		for _, p := range r.f[2:4] {
			if !validPattern(p) {
				return nil, fmt.Errorf("nvlink5.csv:%d: IntrInfo pattern %q: give 32 characters of 0, 1 and -", r.line, p)
			}
		}
		c.NVLink5 = append(c.NVLink5, NVLinkRule{XID: x, Unit: r.f[1], IntrInfoV1: r.f[2], IntrInfoV2: r.f[3], ErrorStatus: uint32(es),
			Resolution: r.f[5], Action2: r.f[6], Investigatory: r.f[7], Severity: r.f[8]})
	}
	return c, nil
}

type csvRow struct {
	line int
	f    []string
}

// readCSV reads a data file: "# key: value" header lines, a row of column names, then rows
// of n fields each.
func readCSV(name, text string, n int) (map[string]string, []csvRow, error) {
	hdr := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	skip := 0
	for sc.Scan() && strings.HasPrefix(sc.Text(), "#") {
		skip++
		if k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "# "), ": "); ok {
			hdr[k] = v
		}
	}
	rd := csv.NewReader(strings.NewReader(text))
	rd.Comment, rd.FieldsPerRecord = '#', n
	if _, err := rd.Read(); err != nil { // the column names
		return nil, nil, fmt.Errorf("%s:%d: %w", name, skip+1, err)
	}
	var rows []csvRow
	for {
		f, err := rd.Read()
		if err == io.EOF {
			return hdr, rows, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := rd.FieldPos(0)
		rows = append(rows, csvRow{line, f})
	}
}

func validPattern(p string) bool {
	return len(p) == 32 && strings.Trim(p, "01-") == ""
}

// Lookup is xid's row of the catalog sheet.
func (c *Catalog) Lookup(xid int) (Entry, bool) {
	i, ok := slices.BinarySearchFunc(c.Entries, xid, func(e Entry, x int) int { return e.XID - x })
	if !ok {
		return Entry{}, false
	}
	return c.Entries[i], true
}

// Matches reports whether intrInfo fits pattern (bit 31 first; '-' matches either bit).
func Matches(pattern string, intrInfo uint32) bool {
	if !validPattern(pattern) {
		return false
	}
	for i := range 32 {
		bit := intrInfo >> (31 - i) & 1
		if pattern[i] == '0' && bit != 0 || pattern[i] == '1' && bit != 1 {
			return false
		}
	}
	return true
}

// Decode finds the decode sheet's rows of an NVLink5 event: xid and Error Status equal,
// IntrInfo matching the row's V2 pattern (drivers from R575) or its V1 pattern (older ones).
// More than one row comes back only where the sheet's patterns overlap; TestDecodeUnique
// holds that such rows agree on the resolution.
func (c *Catalog) Decode(xid int, ev NVLinkEvent) []NVLinkRule {
	var out []NVLinkRule
	for _, r := range c.NVLink5 {
		if r.XID == xid && r.ErrorStatus == ev.ErrorStatus && (Matches(r.IntrInfoV2, ev.IntrInfo) || Matches(r.IntrInfoV1, ev.IntrInfo)) {
			out = append(out, r)
		}
	}
	return out
}
