#!/bin/sh
# Before zizq is removed (deb prerm, rpm %preun): stop and disable the
# service, but not on an upgrade. The data in /var/lib/zizq is kept.
set -e

# deb: "remove" (also "upgrade", "deconfigure"); rpm: $1 is 0 on removal.
case "$1" in
remove | 0)
	if [ -d /run/systemd/system ]; then
		systemctl disable --now zizq.service >/dev/null 2>&1 || true
	fi
	;;
esac
exit 0
