#!/bin/sh
# Before zizq's files are unpacked (deb preinst, rpm %pre): the system user
# and group the service runs as. Existing ones are kept.
set -e

if ! getent group zizq >/dev/null 2>&1; then
	groupadd --system zizq
fi
if ! getent passwd zizq >/dev/null 2>&1; then
	nologin=/usr/sbin/nologin
	[ -x "$nologin" ] || nologin=/sbin/nologin
	useradd --system --gid zizq --home-dir /var/lib/zizq --no-create-home \
		--shell "$nologin" --comment "zizq job-queue server" zizq
fi
exit 0
