#!/usr/bin/env bash
# Makes sure a Redis answers at REDIS_URL (default redis://127.0.0.1:6379): starts redis-server
# if it is installed but not running, installs it with apt-get if it is absent (needs root).
set -euo pipefail
url="${REDIS_URL:-redis://127.0.0.1:6379}"
hostport="${url#*://}"; hostport="${hostport#*@}"; hostport="${hostport%%/*}"
host="${hostport%%:*}"; port="${hostport##*:}"; [ "$port" = "$host" ] && port=6379

answers() {
  exec 3<>"/dev/tcp/$host/$port" 2>/dev/null || return 1
  printf 'PING\r\n' >&3
  local line=""
  read -r -t 2 line <&3 || true
  exec 3>&- 3<&-
  [[ "$line" == +PONG* ]]
}

if answers; then echo "ensure-redis: Redis answers at $host:$port"; exit 0; fi
if ! command -v redis-server >/dev/null 2>&1; then
  echo "ensure-redis: installing redis-server with apt-get" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
fi
if [ "$host" != "127.0.0.1" ] && [ "$host" != "localhost" ]; then
  echo "ensure-redis: nothing answers at $host:$port and it is not this machine" >&2; exit 1
fi
redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save "" --appendonly no \
  --maxmemory-policy noeviction --logfile /tmp/cw-redis-$port.log
for _ in $(seq 1 50); do answers && { echo "ensure-redis: started redis-server on $port"; exit 0; }; sleep 0.1; done
echo "ensure-redis: redis-server did not answer on $port" >&2; exit 1
