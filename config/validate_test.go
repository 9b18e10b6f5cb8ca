package config

import (
	"testing"
	"time"
)

// TestValidateConfigErrors: each [validate] mistake is one line naming file, line and key,
// with the fix; a boundary and its neighbour where a rule has one.
func TestValidateConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want string // the whole error text; "" when the config is valid
	}{
		{"relative tool", "[validate]\nnvbandwidth = \"nvbandwidth\"\n",
			`nodecheck.toml:2: validate.nvbandwidth = "nvbandwidth": give an absolute path: validation runs tools without a shell or PATH`},
		{"negative expiry", "[validate]\nexpiry = \"-1h\"\n",
			`nodecheck.toml:2: validate.expiry = "-1h0m0s": must not be negative; "0s" means validations never expire`},
		{"zero expiry is off", "[validate]\nexpiry = \"0s\"\n", ""},
		{"hca with a slash", "[validate]\nhcas = [\"mlx5_0\", \"../x\"]\n",
			`nodecheck.toml:2: validate.hcas[1] = "../x": give an InfiniBand device name as /sys/class/infiniband lists it, such as "mlx5_0"`},
		{"negative floor", "[validate.floors]\nh2d_gbps = -3.0\n",
			`nodecheck.toml:2: validate.floors.h2d_gbps = -3: give 0 (the built-in floor for the GPU model) or a positive figure`},
		{"spread 1", "[validate.floors]\ngemm_spread = 1.0\n",
			`nodecheck.toml:2: validate.floors.gemm_spread = 1: give a fraction between 0 and 1, such as 0.1 (a GPU 10% below the node's median fails)`},
		{"spread just under 1", "[validate.floors]\ngemm_spread = 0.99\n", ""},
		{"burn-in budget equal to burn_in", "[validate]\nburn_in = \"2h\"\n[validate.budget]\nburn_in = \"2h\"\n",
			`nodecheck.toml:4: validate.budget.burn_in = "2h0m0s": must be longer than burn_in (2h0m0s): the level also runs DCGM's level 4 and NCCL`},
		{"burn-in budget a second longer", "[validate]\nburn_in = \"2h\"\n[validate.budget]\nburn_in = \"2h0m1s\"\n", ""},
		{"zero quick budget", "[validate.budget]\nquick = \"0s\"\n",
			`nodecheck.toml:2: validate.budget.quick = "0s": must be positive: the level's wall-clock limit`},
		{"a typo", "[validate]\nexpiri = \"7d\"\n",
			`nodecheck.toml:2: unknown key "validate.expiri" (did you mean "expiry"?)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.toml), "nodecheck.toml", testSchema())
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("error:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestValidateDefaults: no expiry (health runs do not look) and the documented budgets.
func TestValidateDefaults(t *testing.T) {
	v := Default(testSchema()).Validation
	if v.Expiry != 0 || v.Budget.Quick != 10*time.Minute || v.Budget.Full != 45*time.Minute || v.Budget.BurnIn != 4*time.Hour ||
		v.BurnIn != time.Hour || v.Floors.GEMMSpread != 0.10 || v.DCGMI != "/usr/bin/dcgmi" {
		t.Errorf("defaults: %+v", v)
	}
	if v.Budget.For("burn-in") != 4*time.Hour || v.Budget.For("other") != 0 {
		t.Errorf("Budget.For")
	}
}
