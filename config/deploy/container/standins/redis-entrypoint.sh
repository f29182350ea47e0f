#!/bin/sh
# The stand-in redis image's entrypoint (redis.Containerfile): `redis-server` and its options as the redis user,
# protected mode off unless a configuration file is given, as the official image does.
set -eu
if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then
  set -- redis-server "$@"
fi
if [ "$1" = redis-server ] && [ "$(id -u)" = 0 ]; then
  chown -R redis:redis /data
  exec setpriv --reuid=redis --regid=redis --init-groups "$0" "$@"
fi
if [ "$1" = redis-server ]; then
  case "${2:-}" in
    *.conf) ;;
    *) set -- "$@" --protected-mode no ;;
  esac
fi
exec "$@"
