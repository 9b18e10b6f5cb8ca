#!/bin/sh
# postremove of the nodecheck packages (scripts/nfpm.yaml). `dpkg --purge` removes what
# nodecheck wrote in its state directory (drain.json, the run lock, the last NCCL result);
# `dpkg --remove` and an rpm erase ("0" as $1) keep it, as they keep an edited nodecheck.toml.
set -e
if [ "$1" = purge ]; then
	rm -rf /var/lib/nodecheck
fi
exit 0
