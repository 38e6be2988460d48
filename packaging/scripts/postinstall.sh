#!/bin/sh
# After zizq's files are unpacked (deb postinst, rpm %post): the data
# directory, and systemd told about the unit. The service is not started:
# review /etc/zizq/zizq.env, then `systemctl enable --now zizq`. On an
# upgrade, a running service is restarted (the new binary migrates the
# database at start).
set -e

install -d -m 0750 -o zizq -g zizq /var/lib/zizq

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
	# deb: "configure <old-version>"; rpm: $1 is 2 or more on an upgrade.
	upgrade=false
	case "$1" in
	configure) [ -n "$2" ] && upgrade=true ;;
	[2-9] | [1-9][0-9]*) upgrade=true ;;
	esac
	if [ "$upgrade" = true ]; then
		systemctl try-restart zizq.service >/dev/null 2>&1 || true
	fi
fi
exit 0
