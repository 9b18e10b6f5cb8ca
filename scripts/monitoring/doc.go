// Package monitoring holds nodecheck's Prometheus alert rules (nodecheck.rules.yml, with their
// promtool unit tests in nodecheck.rules_test.yml) and Grafana dashboard
// (nodecheck-dashboard.json), which the packages install under /usr/share/nodecheck, and the
// test harness that runs them for real: Start brings up a real node_exporter reading a
// textfile directory and a real Prometheus scraping it with the rules loaded, and Stack asks
// Prometheus's HTTP API for alerts and series. It is test tooling: no product program
// imports it.
package monitoring
