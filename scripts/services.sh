#!/usr/bin/env bash
# Makes sure Postgres and Redis answer on this machine, starting them with the
# machine's own commands if they do not. Kafka has its own script (scripts/kafka.sh).
set -euo pipefail

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q; }
redis_up() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = "PONG" ]; }

wait_for() {
  local name=$1 check=$2
  for _ in $(seq 1 60); do
    if $check; then echo "$name is up"; return 0; fi
    sleep 0.5
  done
  echo "$name did not come up" >&2
  return 1
}

ensure() {
  if ! pg_up; then
    echo "starting Postgres"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
  fi
  wait_for Postgres pg_up
  if ! redis_up; then
    echo "starting Redis"
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log
  fi
  wait_for Redis redis_up
}

case "${1:-ensure}" in
  ensure) ensure ;;
  *) echo "usage: $0 ensure" >&2; exit 2 ;;
esac
