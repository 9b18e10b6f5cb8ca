#!/bin/sh
# postinstall of the nodecheck packages (scripts/nfpm.yaml): offer nodecheck as LBNL NHC's
# `nhc` (/usr/share/doc/nodecheck/docs/nhc.md, "The nhc drop-in"), so that a site with
# HealthCheckProgram=/usr/sbin/nhc switches without editing slurm.conf. /usr/sbin/nhc becomes
# an alternative pointing at /usr/lib/nodecheck/nhc, unless a file that alternatives does not
# manage is there (LBNL NHC's own): that one is never replaced.
set -e
ua=$(command -v update-alternatives || command -v alternatives || true)
[ -n "$ua" ] || exit 0
if [ -e /usr/sbin/nhc ] || [ -L /usr/sbin/nhc ]; then
	if [ "$(readlink /usr/sbin/nhc)" != /etc/alternatives/nhc ]; then
		echo "nodecheck: /usr/sbin/nhc is not an alternatives link (LBNL NHC's own?): left as it is; /usr/lib/nodecheck/nhc is nodecheck as nhc" >&2
		exit 0
	fi
fi
"$ua" --install /usr/sbin/nhc nhc /usr/lib/nodecheck/nhc 10
exit 0
