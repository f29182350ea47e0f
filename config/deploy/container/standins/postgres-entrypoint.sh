#!/bin/sh
# The stand-in postgres image's entrypoint (postgres.Containerfile): on first start, a cluster in PGDATA whose
# superuser is POSTGRES_USER (password POSTGRES_PASSWORD, required as in the official image) and a database
# POSTGRES_DB; then the server, as the postgres user, listening on every address, password logins from the
# network.
set -eu
if [ "${1#-}" != "$1" ]; then
  set -- postgres "$@"
fi
if [ "$1" != postgres ]; then
  exec "$@"
fi
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
user="${POSTGRES_USER:-postgres}"
database="${POSTGRES_DB:-$user}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "error: the database is uninitialized and POSTGRES_PASSWORD is not set" >&2
    exit 1
  fi
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb --username="$user" --pwfile="$pwfile" --encoding=UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  printf 'host all all all scram-sha-256\n' >> "$PGDATA/pg_hba.conf"
  if [ "$database" != postgres ]; then
    echo "CREATE DATABASE \"$database\";" | postgres --single -j -D "$PGDATA" postgres >/dev/null
  fi
  echo "initialized $PGDATA: user $user, database $database"
fi
exec "$@" -c listen_addresses='*'
