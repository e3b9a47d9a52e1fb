#!/usr/bin/env bash
# A real single-node Apache Kafka broker (KRaft, broker+controller in one JVM)
# for development and tests, without Docker. The broker jars come from Maven
# Central (scripts/kafka/pom.xml) into .cache/kafka/, which is git-ignored.
#
#   scripts/kafka.sh start    fetch the jars if needed, format fresh storage,
#                             start the broker in the background, wait until a
#                             client can talk to it; a no-op if one answers
#   scripts/kafka.sh stop     stop the broker this script started
#   scripts/kafka.sh status   exit 0 if a broker answers, 1 if not
#   scripts/kafka.sh smoke    create a topic, produce, consume (kafkajs)
#   scripts/kafka.sh fetch    only fetch the jars into the cache
#
# Environment (all optional):
#   KAFKA_VERSION          broker version (default below; the cache is per version)
#   KAFKA_PORT             client listener on 127.0.0.1 (default 9092)
#   KAFKA_CONTROLLER_PORT  KRaft controller listener on 127.0.0.1 (default 9093)
#   KAFKA_ADVERTISED_PORT  port clients are told to use (default KAFKA_PORT; a
#                          test puts a proxy there, started before the broker)
#   KAFKA_HEAP             JVM -Xmx (default 512m)
#   KAFKA_EXTRA_PROPS      lines appended to the broker's properties (they win
#                          over the defaults above them)
#   KAFKA_JVM_OPTS         JVM options instead of the small defaults in jvm_opts
#   KAFKA_START_TIMEOUT    seconds to wait for readiness (default 90)
#   KAFKA_KEEP_DATA=1      keep the data dir across starts (default: fresh)
#   KAFKA_CACHE_DIR        cache root (default <repo>/.cache/kafka)
#   KAFKA_RUN_DIR          pid, log, properties and data of this broker (default
#                          <cache>/run); a second broker (a test that restarts
#                          its own) uses its own, with its own ports
#   JAVA_HOME              Java 17+ to run the broker with (default: java on PATH)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERE=$ROOT/scripts/kafka

KAFKA_VERSION=${KAFKA_VERSION:-4.4.0}
KAFKA_PORT=${KAFKA_PORT:-9092}
KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-9093}
KAFKA_ADVERTISED_PORT=${KAFKA_ADVERTISED_PORT:-$KAFKA_PORT}
KAFKA_HEAP=${KAFKA_HEAP:-512m}
KAFKA_START_TIMEOUT=${KAFKA_START_TIMEOUT:-90}
CACHE=${KAFKA_CACHE_DIR:-$ROOT/.cache/kafka}
# A fixed cluster id keeps runs alike ("ChronofenceKafka", base64url).
CLUSTER_ID=Q2hyb25vZmVuY2VLYWZrYQ

LIBS=$CACHE/$KAFKA_VERSION/libs
TEMPLATE=$CACHE/$KAFKA_VERSION/formatted
RUN=${KAFKA_RUN_DIR:-$CACHE/run}
PIDFILE=$RUN/kafka.pid
LOG=$RUN/kafka.log
PROPS=$RUN/server.properties
DATA=$RUN/data
BOOTSTRAP=127.0.0.1:$KAFKA_PORT

say() { echo "kafka: $*"; }
die() { echo "kafka: error: $*" >&2; exit 1; }

java_bin() {
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
    echo "$JAVA_HOME/bin/java"
  elif command -v java >/dev/null 2>&1; then
    command -v java
  else
    die "java not found: install a JDK 17+ (Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
  fi
}

check_java() {
  JAVA=$(java_bin)
  local v major
  v=$("$JAVA" -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')
  major=${v%%.*}
  [ "$major" = 1 ] && major=$(echo "$v" | cut -d. -f2)
  if ! [ "$major" -ge 17 ] 2>/dev/null; then
    die "Kafka $KAFKA_VERSION needs Java 17+, but $JAVA is '$v'"
  fi
}

# The cache is complete when its stamp names this version and this pom.
stamp() { echo "$KAFKA_VERSION $(sha256sum "$HERE/pom.xml" | cut -d' ' -f1)"; }

fetch() {
  if [ -f "$LIBS/.complete" ] && [ "$(cat "$LIBS/.complete")" = "$(stamp)" ]; then
    return 0
  fi
  command -v mvn >/dev/null 2>&1 || die "mvn not found: install Maven 3.6.3+ (Debian: apt-get install maven) to fetch the broker jars"
  say "fetching Apache Kafka $KAFKA_VERSION (kafka_2.13 and its runtime dependencies) from Maven Central into $LIBS"
  local tmp=$CACHE/$KAFKA_VERSION/libs.tmp.$$
  rm -rf "$tmp"
  mkdir -p "$tmp"
  local mvnlog=$CACHE/$KAFKA_VERSION/mvn.log
  if ! mvn -B -Dstyle.color=never -f "$HERE/pom.xml" -Dkafka.version="$KAFKA_VERSION" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >"$mvnlog" 2>&1; then
    grep -E '^\[(ERROR|WARNING)\]' "$mvnlog" | head -n 30 >&2 || tail -n 30 "$mvnlog" >&2
    rm -rf "$tmp"
    die "mvn could not fetch org.apache.kafka:kafka_2.13:$KAFKA_VERSION from Maven Central (full output: $mvnlog)"
  fi
  ls "$tmp"/kafka_2.13-"$KAFKA_VERSION".jar >/dev/null 2>&1 || { rm -rf "$tmp"; die "no kafka_2.13-$KAFKA_VERSION.jar after mvn"; }
  stamp >"$tmp/.complete"
  rm -rf "$LIBS" "$TEMPLATE"
  mv "$tmp" "$LIBS"
  say "fetched $(find "$LIBS" -name "*.jar" | wc -l) jars ($(du -sh "$LIBS" | cut -f1))"
}

write_props() {
  mkdir -p "$RUN"
  cat >"$PROPS" <<EOF
# Written by scripts/kafka.sh on each start; edits here are lost.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_ADVERTISED_PORT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$DATA
num.partitions=1
auto.create.topics.enable=false
delete.topic.enable=true
group.initial.rebalance.delay.ms=0
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=1
num.network.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
log.retention.hours=24
# The log cleaner (compaction, used by __consumer_offsets) allocates its
# dedupe buffer on the heap up front: 128 MiB by default.
log.cleaner.dedupe.buffer.size=16777216
${KAFKA_EXTRA_PROPS:-}
EOF
}

# Fresh storage is a copy of one formatted once per version
# (kafka-storage format), which saves a JVM start on every start.
format_template() {
  [ -f "$TEMPLATE/meta.properties" ] && return 0
  local tmp=$TEMPLATE.tmp.$$
  rm -rf "$tmp"
  mkdir -p "$tmp"
  sed "s|^log.dirs=.*|log.dirs=$tmp|" "$PROPS" >"$tmp.properties"
  # shellcheck disable=SC2046
  if ! "$JAVA" $(jvm_opts) -cp "$LIBS/*" kafka.tools.StorageTool format \
      -t "$CLUSTER_ID" -c "$tmp.properties" >"$RUN/format.log" 2>&1 9>&-; then
    tail -n 20 "$RUN/format.log" >&2
    rm -rf "$tmp" "$tmp.properties"
    die "formatting KRaft storage failed (log: $RUN/format.log)"
  fi
  rm -f "$tmp.properties"
  rm -rf "$TEMPLATE"
  mv "$tmp" "$TEMPLATE"
}

# Small and quick to start: the machine has 2 cores and also runs Postgres,
# Redis and the tests. The serial GC and the client JIT (C1) start faster and
# use less memory than G1 and C2; a test broker needs no peak throughput.
jvm_opts() {
  echo "${KAFKA_JVM_OPTS:--Xms64m -Xmx$KAFKA_HEAP -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:MaxDirectMemorySize=128m -XX:ReservedCodeCacheSize=64m -Xss512k}" \
    "-Djava.awt.headless=true -Dlog4j2.configurationFile=$HERE/log4j2.properties"
}

# Our broker's pid if it runs, else nothing. Checks the command line so that a
# stale pid file never names some other process.
our_pid() {
  [ -f "$PIDFILE" ] || return 0
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null || true)
  if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "kafka.Kafka $PROPS"; then
    echo "$pid"
  fi
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

have_kafkajs() { (cd "$ROOT" && node -e "import('kafkajs').then(()=>process.exit(0),()=>process.exit(1))") >/dev/null 2>&1; }

# Ready = a Kafka client gets cluster metadata back. With kafkajs (the client
# Chronofence uses) when it is installed, else the broker's own "started" log
# line plus an open port.
answers() {
  local timeout=${1:-0}
  if command -v node >/dev/null 2>&1 && have_kafkajs; then
    node "$HERE/smoke.mjs" ready --brokers "$BOOTSTRAP" --timeout "$timeout"
  else
    local end=$((SECONDS + timeout))
    while :; do
      if port_open "$KAFKA_PORT" && [ -f "$LOG" ] && grep -q "Kafka Server started" "$LOG"; then return 0; fi
      [ "$SECONDS" -ge "$end" ] && return 1
      sleep 0.5
    done
  fi
}

# Serialises start/stop so that two callers (say, CI and a test's global
# setup) never launch two brokers.
lock() {
  mkdir -p "$CACHE"
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$CACHE/.lock"
    flock -w 180 9 || die "another scripts/kafka.sh holds $CACHE/.lock"
  fi
}

start() {
  local t0=$SECONDS pid
  lock
  pid=$(our_pid)
  if [ -z "$pid" ] && port_open "$KAFKA_PORT"; then
    if answers 5; then say "a broker already answers on $BOOTSTRAP; nothing to do"; return 0; fi
    die "port $KAFKA_PORT on 127.0.0.1 is taken by something that is not a Kafka broker"
  fi
  if [ -n "$pid" ]; then
    if answers 0; then say "already running (pid $pid) and answers on $BOOTSTRAP"; return 0; fi
    say "broker already started (pid $pid); waiting until it answers"
  else
    port_open "$KAFKA_CONTROLLER_PORT" && die "controller port $KAFKA_CONTROLLER_PORT on 127.0.0.1 is taken (set KAFKA_CONTROLLER_PORT)"
    check_java
    fetch
    write_props
    if [ "${KAFKA_KEEP_DATA:-0}" = 1 ] && [ -f "$DATA/meta.properties" ]; then
      say "reusing data in $DATA"
    else
      format_template
      rm -rf "$DATA"
      cp -a "$TEMPLATE" "$DATA"
    fi
    say "starting Kafka $KAFKA_VERSION on $BOOTSTRAP (controller 127.0.0.1:$KAFKA_CONTROLLER_PORT), log $LOG"
    : >"$LOG"
    rm -f "$PIDFILE"
    # In its own session (setsid) so that it outlives the shell, terminal or
    # test runner that started it. The inner shell writes its own pid, which
    # exec hands on to the JVM. fd 9 (the lock) is not passed on.
    # shellcheck disable=SC2016,SC2046
    $(command -v setsid || true) nohup bash -c 'echo $$ >"$1"; shift; exec "$@"' kafka "$PIDFILE" \
      "$JAVA" $(jvm_opts) -cp "$LIBS/*" kafka.Kafka "$PROPS" >>"$LOG" 2>&1 </dev/null 9>&- &
    for _ in $(seq 1 50); do [ -s "$PIDFILE" ] && break; sleep 0.1; done
    pid=$(cat "$PIDFILE" 2>/dev/null || true)
    [ -n "$pid" ] || die "could not launch the broker (log: $LOG)"
  fi
  local end=$((SECONDS + KAFKA_START_TIMEOUT))
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 40 "$LOG" >&2 || true
      rm -f "$PIDFILE"
      die "the broker exited during startup (log: $LOG)"
    fi
    if answers 2; then break; fi
    if [ "$SECONDS" -ge "$end" ]; then
      tail -n 40 "$LOG" >&2 || true
      die "no answer from $BOOTSTRAP after ${KAFKA_START_TIMEOUT}s; broker left running (pid $pid), stop it with: $0 stop"
    fi
    sleep 0.5
  done
  say "ready on $BOOTSTRAP (pid $pid) after $((SECONDS - t0))s"
}

stop() {
  local pid
  lock
  pid=$(our_pid)
  if [ -z "$pid" ]; then
    rm -f "$PIDFILE"
    if port_open "$KAFKA_PORT"; then
      say "not started by this script, but something listens on $BOOTSTRAP; left alone"
    else
      say "not running"
    fi
    return 0
  fi
  say "stopping broker (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$PIDFILE"; say "stopped"; return 0; }
    sleep 0.5
  done
  say "still running after 30s; killing it"
  kill -KILL "$pid" 2>/dev/null || true
  for _ in $(seq 1 20); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.25
  done
  rm -f "$PIDFILE"
  say "stopped"
}

status() {
  local pid
  pid=$(our_pid)
  if port_open "$KAFKA_PORT" && answers 5; then
    say "answers on $BOOTSTRAP${pid:+ (pid $pid, log $LOG)}"
    return 0
  fi
  if [ -n "$pid" ]; then say "started (pid $pid) but does not answer on $BOOTSTRAP yet"; else say "not running"; fi
  return 1
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  smoke) node "$HERE/smoke.mjs" smoke --brokers "$BOOTSTRAP" ;;
  fetch) check_java; fetch ;;
  *) echo "usage: $0 start|stop|status|smoke|fetch" >&2; exit 2 ;;
esac
