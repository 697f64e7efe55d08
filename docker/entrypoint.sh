#!/bin/sh
# Entrypoint of the rocketmq-py image: runs `rocketmq-py ARGS...` (default: `namesrv`).
#
# The conventions of the official apache/rocketmq images are kept where a user looks for them:
#   NAMESRV_ADDR           the name servers of a broker (read by rocketmq-py itself, as by Java's broker);
#   /home/rocketmq/conf    where broker.conf / namesrv.properties are mounted (`broker -c conf/broker.conf`);
#   /home/rocketmq/store   the store (storePathRootDir defaults to it in this image);
#   JAVA_OPT_EXT           each -Dkey=value in it overrides that key of the -c file, as a Java user sets
#                          a property for the JVM; JVM flags (-Xmx, -XX:...) have no meaning here and are
#                          ignored with a notice.
#   sh mqnamesrv / sh mqbroker [ARGS]   the official images' commands, mapped to namesrv / broker.
set -eu

case "${1:-}" in
  sh|bash) case "${2:-}" in mqnamesrv|mqbroker) shift ;; esac ;;
esac
case "${1:-}" in
  mqnamesrv) shift; set -- namesrv "$@" ;;
  mqbroker) shift; set -- broker "$@" ;;
  "") set -- namesrv ;;
esac

overrides=""
ignored=""
for word in ${JAVA_OPT_EXT:-}; do
  case "$word" in
    -D*=*) overrides="$overrides ${word#-D}" ;;
    *) ignored="$ignored $word" ;;
  esac
done
[ -z "$ignored" ] || echo "entrypoint: JAVA_OPT_EXT flags with no meaning for rocketmq-py, ignored:$ignored" >&2

if [ -n "$overrides" ]; then
  # Write a copy of the -c file with the overrides appended (a later key wins, as in Java's Properties).
  config=""
  previous=""
  for word in "$@"; do
    if [ "$previous" = "-c" ] || [ "$previous" = "--config" ]; then config="$word"; fi
    previous="$word"
  done
  merged="${TMPDIR:-/tmp}/rocketmq-py-$1.conf"
  if [ -n "$config" ]; then cat "$config" > "$merged"; else : > "$merged"; fi
  for pair in $overrides; do printf '\n%s\n' "$pair" >> "$merged"; done
  if [ -n "$config" ]; then
    rewritten=""
    previous=""
    for word in "$@"; do
      if [ "$previous" = "-c" ] || [ "$previous" = "--config" ]; then word="$merged"; fi
      rewritten="$rewritten$(printf '%s' "$word" | sed "s/'/'\\\\''/g; s/^/'/; s/\$/'/") "
      previous="$word"
    done
    eval "set -- $rewritten"
  else
    set -- "$@" -c "$merged"
  fi
fi

exec rocketmq-py "$@"
