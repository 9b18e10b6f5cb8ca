package checks

import (
	"os"
	"strings"
	"testing"
)

// TestJudgeMemoryNHC replays NHC's own check_hw_physmem, check_hw_swap and check_hw_mem tests
// (test/test_lbnl_hw.nhc, the line quoted in each name) on its figures: 32857508 kB RAM
// (27828840 free), 18563064 kB swap (18480520 free). NHC's bare numbers are kB.
func TestJudgeMemoryNHC(t *testing.T) {
	mi := meminfo{MemTotal: 32857508, MemFree: 27828840, SwapTotal: 18563064, SwapFree: 18480520}
	tests := []struct {
		name string
		key  string
		val  string
		want Status
	}{
		{"check_hw_physmem 0 0", "physmem", "0 0", StatusFail},
		{"check_hw_physmem 32857508 32857508", "physmem", "32857508kB 32857508kB", StatusOK},
		{"check_hw_physmem 1 12", "physmem", "1kB 12kB", StatusFail},
		{"check_hw_physmem 100 32857508", "physmem", "100kB 32857508kB", StatusOK},
		{"check_hw_physmem 100 32857507 (one under)", "physmem", "100kB 32857507kB", StatusFail},
		{"check_hw_physmem 31GB 33GB", "physmem", "31GB 33GB", StatusOK},
		{"check_hw_physmem 32857508 99G", "physmem", "32857508kB 99G", StatusOK},
		{"check_hw_physmem 32857509 99G (one over)", "physmem", "32857509kB 99G", StatusFail},
		{"check_hw_physmem 98GB 99GB", "physmem", "98GB 99GB", StatusFail},
		{"check_hw_physmem 32g 32g 10%", "physmem", "32g 32g 10%", StatusOK},
		{"check_hw_physmem 32g 32g 0%", "physmem", "32g 32g 0%", StatusFail},
		{"check_hw_physmem 42g 48g 50%", "physmem", "42g 48g 50%", StatusOK},
		{"check_hw_physmem 24g 24g 50%", "physmem", "24g 24g 50%", StatusOK},
		{"check_hw_physmem 48g 64g 10%", "physmem", "48g 64g 10%", StatusFail},
		{"check_hw_physmem 12g 24g 20%", "physmem", "12g 24g 20%", StatusFail},
		{"check_hw_swap 0 0", "swap", "0 0", StatusFail},
		{"check_hw_swap 18563064 18563064", "swap", "18563064kB 18563064kB", StatusOK},
		{"check_hw_swap 1 12", "swap", "1kB 12kB", StatusFail},
		{"check_hw_swap 18000000 19G", "swap", "18000000kB 19G", StatusOK},
		{"check_hw_swap 999999999 99G", "swap", "999999999kB 99G", StatusFail},
		{"check_hw_swap 18g 18g 10%", "swap", "18g 18g 10%", StatusOK},
		{"check_hw_swap 18g 18g 0%", "swap", "18g 18g 0%", StatusFail},
		{"check_hw_swap 22g 28g 50%", "swap", "22g 28g 50%", StatusOK},
		{"check_hw_swap 5g 15g 50%", "swap", "5g 15g 50%", StatusOK},
		{"check_hw_swap 24g 48g 10%", "swap", "24g 48g 10%", StatusFail},
		{"check_hw_swap 4g 8g 20%", "swap", "4g 8g 20%", StatusFail},
		{"check_hw_mem 0 0", "total_mem", "0 0", StatusFail},
		{"check_hw_mem 51420572 51420572", "total_mem", "51420572kB 51420572kB", StatusOK},
		{"check_hw_mem 1 12k", "total_mem", "1kB 12k", StatusFail},
		{"check_hw_mem 48g 52gb", "total_mem", "48g 52gb", StatusOK},
		{"check_hw_mem 99999999 99G", "total_mem", "99999999kB 99G", StatusFail},
		{"check_hw_mem 50g 50g 10%", "total_mem", "50g 50g 10%", StatusOK},
		{"check_hw_mem 50g 50g 0%", "total_mem", "50g 50g 0%", StatusFail},
		// Free limits, at the figure and one over (NHC fails only below the minimum).
		{"mem_free exactly", "mem_free", "46309360kB", StatusOK},
		{"mem_free one over", "mem_free", "46309361kB", StatusFail},
		{"physmem_free exactly", "physmem_free", "27828840kB", StatusOK},
		{"swap_free one over", "swap_free", "18480521kB", StatusFail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := &memoryConfig{}
			switch tc.key {
			case "physmem":
				set.Physmem = tc.val
			case "swap":
				set.Swap = tc.val
			case "total_mem":
				set.TotalMem = tc.val
			case "mem_free":
				set.MemFree = tc.val
			case "physmem_free":
				set.PhysmemFree = tc.val
			case "swap_free":
				set.SwapFree = tc.val
			}
			res := judgeMemory(mi, set)
			if res.Status != tc.want {
				t.Errorf("%s = %q: got %s %q, want %s", tc.key, tc.val, res.Status, res.Summary, tc.want)
			}
			assertRemedies(t, res)
		})
	}
}

// TestMemoryProcfs judges a real /proc/meminfo (procfs's fixture, testdata/nhc/SOURCE) with
// the built-in defaults, and with a swap range it does not meet.
func TestMemoryProcfs(t *testing.T) {
	b, err := os.ReadFile("testdata/nhc/procfs-meminfo")
	if err != nil {
		t.Fatal(err)
	}
	mi, err := parseMeminfo(b)
	if err != nil {
		t.Fatal(err)
	}
	if mi.MemTotal != 15666184 || mi.MemFree+mi.Buffers+mi.Cached != 440324+1020128+12007640 || mi.SwapTotal != 0 {
		t.Fatalf("parsed %+v", mi)
	}
	set := (memory{}).Section().(*memoryConfig)
	res := judgeMemory(mi, set)
	if res.Status != StatusOK || res.Summary != "memory within 1 limit" {
		t.Errorf("defaults: got %s %q", res.Status, res.Summary)
	}
	set.Swap = "1GiB 64GiB"
	set.Physmem = "16GB 16GB 3%"
	res = judgeMemory(mi, set)
	if res.Status != StatusFail || res.Summary != "physmem: 15666184 kB, below the minimum of 16GB 16GB 3% (+1 more)" {
		t.Errorf("got %s %q", res.Status, res.Summary)
	}
	if _, err := parseMeminfo([]byte("MemTotal: 12 kB\n")); err == nil || !strings.Contains(err.Error(), "SwapTotal") {
		t.Errorf("no swap line: %v", err)
	}
	if _, err := parseMeminfo([]byte("MemTotal: x kB\nSwapTotal: 0 kB\n")); err == nil || !strings.Contains(err.Error(), "meminfo:1: MemTotal") {
		t.Errorf("bad number: %v", err)
	}
}

func TestMemoryConfigValidate(t *testing.T) {
	c := &memoryConfig{Physmem: "2g 1g 5", Swap: "1g", MemFree: "1g 2g", SwapFree: "5"}
	var got []string
	for _, p := range c.ValidateSection() {
		got = append(got, p.Key+p.Msg)
	}
	want := []string{
		`physmem = "2g 1g 5": "5" has no unit: write it like "10GiB" or "500MB"`,
		`swap = "1g": want "MIN MAX [FUDGE]", such as "1TiB 1TiB 5%"`,
		`mem_free = "1g 2g": want one size, such as "1GiB"`,
		`swap_free = "5": "5" has no unit: write it like "10GiB" or "500MB"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
