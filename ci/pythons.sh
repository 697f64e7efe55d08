# Sourced by the CI scripts: the Python versions rocketmq-py supports, and where their interpreters are.
# pyproject.toml's requires-python and classifiers name the same versions (tests/test_packaging.py checks it).

SUPPORTED_PYTHONS="3.10 3.11 3.12 3.13"

# python_version PYTHON: "X.Y" when PYTHON runs, is CPython and can make virtualenvs; nothing otherwise (a pyenv
# shim of a version that is not active prints an error and fails).
python_version() {
  "$1" -c 'import ensurepip, sys, venv; assert sys.implementation.name == "cpython"
print("%d.%d" % sys.version_info[:2])' 2>/dev/null
}

# find_python X.Y: the path of a CPython X.Y interpreter: `pythonX.Y` from PATH when it is one, else pyenv's
# newest X.Y (pyenv from PATH or $PYENV_ROOT, its versions under `pyenv root`). Fails when there is none.
find_python() {
  local version=$1 candidate pyenv_bin root
  candidate=$(command -v "python$version" 2>/dev/null || true)
  if [ -n "$candidate" ] && [ "$(python_version "$candidate")" = "$version" ]; then
    echo "$candidate"
    return 0
  fi
  pyenv_bin=$(command -v pyenv 2>/dev/null || true)
  if [ -z "$pyenv_bin" ] && [ -x "${PYENV_ROOT:-$HOME/.pyenv}/bin/pyenv" ]; then
    pyenv_bin=${PYENV_ROOT:-$HOME/.pyenv}/bin/pyenv
  fi
  [ -n "$pyenv_bin" ] || return 1
  root=$("$pyenv_bin" root) || return 1
  for candidate in $(ls -d "$root/versions/$version".* 2>/dev/null | sort -V -r); do
    case "${candidate##*/}" in *[!0-9.]*) continue ;; esac  # releases only: not X.Y.Zt, X.Y-dev, X.Y.Za1
    if [ "$(python_version "$candidate/bin/python$version")" = "$version" ]; then
      echo "$candidate/bin/python$version"
      return 0
    fi
  done
  return 1
}
