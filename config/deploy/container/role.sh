#!/bin/sh
# The image's command: a role, one of the Procfile's lines (web, worker, webhooks, webhooks_slow, beat, inbound,
# release), run exactly as the Procfile writes it; anything else runs as given (`manage.py shell`, a shell).
set -eu
cd /srv/app
role="${1:-web}"
line=$(sed -n "s/^${role}: //p" Procfile)
if [ -n "$line" ] && [ "$#" -le 1 ]; then
  # beat keeps its schedule file in a writable folder of its own.
  [ "$role" = beat ] && cd /srv/run
  exec /bin/sh -c "exec $line"
fi
exec "$@"
