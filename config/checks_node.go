package config

import "time"

// NodeInventoryConfig configures the node_inventory check: CPUs, sockets, cores, threads
// and memory against the node's slurm.conf NodeName line. It has no settings of its own:
// slurm.conf is the expectation.
type NodeInventoryConfig struct {
	CheckCommon
}

// defaultNodeInventory runs in health and manual modes only: the inventory does not change
// between jobs, so a prolog has nothing to gain from reading it again.
func defaultNodeInventory() NodeInventoryConfig {
	return NodeInventoryConfig{CheckCommon{Enabled: true, Timeout: 3 * time.Second, Modes: []string{"health", "manual"}}}
}
