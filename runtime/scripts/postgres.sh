#!/usr/bin/env bash
# Starts a private PostgreSQL cluster for the runtime's tests and torture, listening on
# 127.0.0.1 only, and prints its connection string on stdout.
#
#   runtime/scripts/postgres.sh start DIR [PORT]   install Debian's postgresql if missing, start
#   runtime/scripts/postgres.sh stop DIR           stop the cluster started in DIR
#   runtime/scripts/postgres.sh restart DIR        stop it (fast: every session ends) and start
#                                                  it again with the same settings (the
#                                                  torture's database fault)
#
# PostgreSQL refuses to run as root: when run as root, the server runs as the `postgres`
# user that Debian's package creates. Authentication is `trust`, on loopback only: a test
# cluster, never a deployment.
set -euo pipefail
cmd=${1:?usage: postgres.sh start|stop|restart DIR [PORT]}
dir=${2:?usage: postgres.sh start|stop|restart DIR [PORT]}
port=${3:-54329}

as_server() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

bindir() {
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1
}

case "$cmd" in
start)
    if [ -z "$(bindir)" ]; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2
        apt-get install -y -qq --no-install-recommends postgresql >&2
    fi
    bin=$(bindir)
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        as_server "$bin/initdb" -D "$dir/data" -A trust -U resumable >"$dir/initdb.log"
    fi
    as_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200" start >&2
    echo "host=127.0.0.1 port=$port user=resumable dbname=postgres"
    ;;
stop)
    as_server "$(bindir)/pg_ctl" -D "$dir/data" -m fast -w stop >&2
    ;;
restart)
    as_server "$(bindir)/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m fast -w restart >&2
    ;;
*)
    echo "usage: postgres.sh start|stop|restart DIR [PORT]" >&2
    exit 2
    ;;
esac
