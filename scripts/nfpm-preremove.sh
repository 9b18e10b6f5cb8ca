#!/bin/sh
# preremove of the nodecheck packages (scripts/nfpm.yaml): withdraw nodecheck's `nhc`
# alternative on removal (dpkg: "remove"; rpm: "0"), not on upgrade.
set -e
case "$1" in
remove | 0)
	ua=$(command -v update-alternatives || command -v alternatives || true)
	if [ -n "$ua" ]; then
		"$ua" --remove nhc /usr/lib/nodecheck/nhc || true
	fi
	;;
esac
exit 0
