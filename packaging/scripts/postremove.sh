#!/bin/sh
# After zizq is removed (deb postrm, rpm %postun): systemd forgets the unit.
# The zizq user and /var/lib/zizq are kept, even on purge: the data is the
# operator's to delete (`rm -r /var/lib/zizq; userdel zizq`).
set -e

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
